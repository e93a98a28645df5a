"""The wizard in a real browser, keyboard only: htmx swaps, focus, Back/Forward, changing an answer, download (on the
fixture tree), and the hand-off from a pasted log (into the real tree)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from django.conf import settings

import pytest

pytestmark = pytest.mark.browser

ACTIVE = """() => {
  const e = document.activeElement;
  return {tag: e.tagName, id: e.id, name: e.getAttribute('name'), text: (e.innerText || '').trim(),
          href: e.getAttribute('href'), cls: e.className || '', type: e.getAttribute('type'),
          label: e.labels && e.labels.length ? e.labels[0].innerText.trim() : '', checked: !!e.checked};
}"""


def tab_to(page, matches, limit: int = 120) -> dict:
    """Press Tab until the focused element matches; fail if it never does (so the page is keyboard-reachable)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        active = page.evaluate(ACTIVE)
        if matches(active):
            return active
    raise AssertionError("no focusable element matched after %d Tab presses" % limit)


def link_starting(text: str):
    return lambda a: a["tag"] == "A" and a["text"].startswith(text)


def choose(page, label: str, submit: bool = True) -> None:
    """Tab into the question's radio group, move with the arrow keys to the answer, Tab to Continue and press Enter."""
    active = tab_to(page, lambda a: a["tag"] == "INPUT" and a["type"] == "radio")
    first = active["label"]
    while not active["label"].startswith(label):
        page.keyboard.press("ArrowDown")
        active = page.evaluate(ACTIVE)
        assert active["label"] != first, f"no answer labelled {label!r}"
    if not active["checked"]:
        page.keyboard.press("Space")
    tab_to(page, lambda a: a["tag"] == "BUTTON" and a["text"] == "Continue")
    if submit:
        page.keyboard.press("Enter")


def expect_focused_heading(page, text: str) -> None:
    """After a swap the new question (or diagnosis) heading has the focus."""
    page.wait_for_function(
        "(text) => { const e = document.activeElement; return e && e.id === 'step-focus' && e.textContent.includes(text); }",
        arg=text,
        timeout=10_000,
    )


def answers(page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query))


RUN = {"phase": "running", "run-symptom": "slow", "launcher": "mpirun", "wait": "45"}
LEAF = "The running all-reduce times out"


def test_walk_the_wizard_with_the_keyboard_only(browser_page, relay_served, tmp_path):
    """On the fixture tree (tests/troubleshooter/trees/relay.yaml), so rewording a real tree breaks none of this."""
    page = browser_page.page
    page.goto(browser_page.base_url + "/troubleshoot/relay/")
    page.wait_for_function("() => window.htmx !== undefined")

    choose(page, "While running")
    expect_focused_heading(page, "What happens while running?")
    assert answers(page) == {"phase": "running"}, "htmx pushed the step's URL"
    assert page.evaluate("() => document.querySelectorAll('h1').length") == 1, "only the step panel was swapped"

    choose(page, "An all-reduce times out")
    expect_focused_heading(page, "What starts the ranks?")

    choose(page, "mpirun")
    expect_focused_heading(page, "How many minutes should a collective wait?")

    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "wait")
    page.keyboard.type("45; rm -rf ~")
    page.keyboard.press("Enter")
    page.wait_for_selector("#wizard-step .error-message")
    expect_focused_heading(page, "How many minutes should a collective wait?")
    assert "That is not valid here" in page.inner_text("#wizard-step .error-message")
    assert page.get_attribute("input[name=wait]", "aria-invalid") == "true"

    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "wait")
    page.keyboard.press("Control+A")
    page.keyboard.type("45")
    page.keyboard.press("Enter")
    expect_focused_heading(page, LEAF)
    assert answers(page) == RUN
    script = page.inner_text("#fix-script pre")
    assert "-x NCCL_DEBUG -x TORCH_DISTRIBUTED_DEBUG" in script
    assert page.is_visible("button.copy-script"), "with JavaScript the copy button is shown"
    assert LEAF in page.title()

    page.go_back()
    expect_focused_heading(page, "How many minutes should a collective wait?")
    assert answers(page)["wait"] == "45; rm -rf ~", "Back restores the step before, the refused value with it"
    page.go_forward()
    expect_focused_heading(page, LEAF)

    page.focus("#step-focus")
    tab_to(page, lambda a: a["tag"] == "A" and a["text"].startswith("Change") and "What starts the ranks?" in a["text"])
    page.keyboard.press("Enter")
    expect_focused_heading(page, "What starts the ranks?")
    assert answers(page) == {**RUN, "_change": "launcher"}, "changing an earlier answer keeps the later ones"
    assert page.is_checked("input[name=launcher][value=mpirun]"), "the current answer is selected"

    choose(page, "torchrun")
    expect_focused_heading(page, LEAF)
    script = page.inner_text("#fix-script pre")
    assert "export NCCL_DEBUG=INFO" in script and "-x NCCL_DEBUG" not in script

    tab_to(page, lambda a: a["tag"] == "BUTTON" and a["text"] == "Copy script")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.copy-status').textContent.includes('Copied')")
    assert page.evaluate("() => navigator.clipboard.readText()") == page.inner_text("#fix-script pre")

    page.focus("#step-focus")
    tab_to(page, link_starting("Download fix.sh"))
    with page.expect_download() as download_info:
        page.keyboard.press("Enter")
    download = download_info.value
    assert download.suggested_filename == "fix.sh"
    saved = tmp_path / "fix.sh"
    download.save_as(saved)
    text = saved.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    assert text == script + ("\n" if not script.endswith("\n") else ""), "the download is the script shown on the page"
    assert "launcher=torchrun" in text

    assert not browser_page.console_errors, "no JavaScript error and no CSP violation"
    assert {r for r in browser_page.failed_responses if r[1] != "/favicon.ico"} == {(400, "/troubleshoot/relay/")}, (
        "the only failed request is the refused value"
    )


def test_the_wizard_works_without_javascript(browser_page_without_js, relay_served):
    page = browser_page_without_js.page

    def follow() -> None:
        with page.expect_navigation():
            page.keyboard.press("Enter")

    def answer(label: str) -> None:
        choose(page, label, submit=False)
        follow()

    page.goto(browser_page_without_js.base_url + "/troubleshoot/relay/")
    answer("While warming up")
    assert answers(page) == {"phase": "warmup"}
    assert "What happens while warming up?" in page.inner_text("#step-focus")
    answer("It stalls on a broadcast")
    answer("torchrun")
    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "wait")
    page.keyboard.type("90")
    follow()
    assert answers(page)["wait"] == "90"
    assert "The warm-up broadcast stalls" in page.inner_text("#step-focus")
    assert not page.is_visible("button.copy-script"), "no copy button that cannot work"
    assert "ip -br addr" in page.inner_text("#fix-script pre")


SHOTS = os.environ.get("KB_SCREENSHOTS")  # a folder: save screenshots for a person to look at
MEGATRON_LOG = Path(settings.BASE_DIR) / "tests" / "fixtures" / "logs" / "heldout" / "megatron-fused-srun-label-torch24.log"


def test_a_pasted_log_continues_in_the_troubleshooter_with_its_answers_listed(browser_page):
    """Paste on the home page, Diagnose, follow the hand-off: the log's answers are listed, each from your log. A real
    log into the real tree, whose wording is read from the tree rather than repeated here."""
    from troubleshooter.library import library_read

    tree = library_read(settings.CONTENT_DIR).trees["hang"]
    page = browser_page.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(browser_page.base_url + "/")
    page.fill("#log", MEGATRON_LOG.read_text())
    page.click("form.diagnose-form button[type=submit]")
    page.click("text=Continue in the troubleshooter with these facts")
    page.wait_for_selector("#step-focus")
    assert page.inner_text("#step-focus") == tree.question("megatron-state").text
    listed = page.locator(".answer-list li").all_inner_texts()
    assert len(listed) == 3 and all("from your log" in item for item in listed), listed
    assert tree.question("when").choice("compile").label in listed[0] and "srun" in listed[2]
    assert "3 answers came from your log" in page.inner_text(".from-log-note")
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "handoff-390.png"), full_page=True)

    page.locator(".answer-change").first.click()
    page.wait_for_function(
        "(text) => document.activeElement && document.activeElement.id === 'step-focus' "
        "&& document.activeElement.textContent.includes(text)",
        arg=tree.question(tree.start).text,
    )
    assert page.is_checked("input[name=when][value=compile]"), "Change selects the log's answer"
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "change-390.png"), full_page=True)
    assert not browser_page.console_errors
