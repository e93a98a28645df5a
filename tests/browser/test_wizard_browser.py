"""The wizard in a real browser, keyboard only: htmx swaps, focus, Back/Forward, changing an answer, download,
and the hand-off from a pasted log."""

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


def test_walk_the_wizard_with_the_keyboard_only(browser_page, tmp_path):
    page = browser_page.page
    page.goto(browser_page.base_url + "/troubleshoot/hang/")
    page.wait_for_function("() => window.htmx !== undefined")

    choose(page, "During distributed initialisation")
    expect_focused_heading(page, "What does the log show during initialisation?")
    assert answers(page) == {"when": "init"}, "htmx pushed the step's URL"
    assert page.evaluate("() => document.querySelectorAll('h1').length") == 1, "only the step panel was swapped"

    choose(page, "NCCL picked a wrong interface")
    expect_focused_heading(page, "How do you start the ranks?")

    choose(page, "mpirun or mpiexec")
    expect_focused_heading(page, "Which network interface links the nodes?")

    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "iface")
    page.keyboard.type("eth0; rm -rf ~")
    page.keyboard.press("Enter")
    page.wait_for_selector("#wizard-step .error-message")
    expect_focused_heading(page, "Which network interface links the nodes?")
    assert "That is not valid here" in page.inner_text("#wizard-step .error-message")
    assert page.get_attribute("input[name=iface]", "aria-invalid") == "true"

    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "iface")
    page.keyboard.press("Control+A")
    page.keyboard.type("eth0")
    page.keyboard.press("Enter")
    expect_focused_heading(page, "Where do the ranks run?")

    choose(page, "In Docker or Podman containers")
    expect_focused_heading(page, "NCCL uses a network interface that does not reach the other nodes")
    assert answers(page) == {"when": "init", "init-log": "iface", "launcher": "mpirun", "iface": "eth0", "container": "docker"}
    script = page.inner_text("#fix-script pre")
    assert "--mca btl_tcp_if_include eth0" in script
    assert page.is_visible("button.copy-script"), "with JavaScript the copy button is shown"
    assert "NCCL uses a network interface" in page.title()

    page.go_back()
    expect_focused_heading(page, "Where do the ranks run?")
    assert "container" not in answers(page)
    page.go_forward()
    expect_focused_heading(page, "NCCL uses a network interface that does not reach the other nodes")

    page.focus("#step-focus")
    tab_to(page, lambda a: a["tag"] == "A" and a["text"].startswith("Change") and "How do you start the ranks?" in a["text"])
    page.keyboard.press("Enter")
    expect_focused_heading(page, "How do you start the ranks?")
    assert answers(page) == {
        "when": "init",
        "init-log": "iface",
        "launcher": "mpirun",
        "iface": "eth0",
        "container": "docker",
        "_change": "launcher",
    }, "changing an earlier answer keeps the later ones"
    assert page.is_checked("input[name=launcher][value=mpirun]"), "the current answer is selected"

    choose(page, "torchrun")
    expect_focused_heading(page, "NCCL uses a network interface that does not reach the other nodes")
    script = page.inner_text("#fix-script pre")
    assert "export NCCL_SOCKET_IFNAME='=eth0'" in script and "--mca" not in script

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
    assert {r for r in browser_page.failed_responses if r[1] != "/favicon.ico"} == {(400, "/troubleshoot/hang/")}, (
        "the only failed request is the refused interface"
    )


def test_the_wizard_works_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page

    def follow() -> None:
        with page.expect_navigation():
            page.keyboard.press("Enter")

    def answer(label: str) -> None:
        choose(page, label, submit=False)
        follow()

    page.goto(browser_page_without_js.base_url + "/troubleshoot/hang/")
    answer("At a compile step")
    assert answers(page) == {"when": "compile"}
    assert "What is being compiled?" in page.inner_text("#step-focus")
    answer("Megatron-LM")
    answer("No compiler runs")
    answer("torchrun")
    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "megatron-dir")
    page.keyboard.type("/workspace/Megatron-LM")
    follow()
    assert answers(page)["megatron-dir"] == "/workspace/Megatron-LM"
    assert "A stale lock in Megatron-LM" in page.inner_text("#step-focus")
    assert not page.is_visible("button.copy-script"), "no copy button that cannot work"
    assert "megatron/fused_kernels/build/lock" in page.inner_text("#fix-script pre")


SHOTS = os.environ.get("KB_SCREENSHOTS")  # a folder: save screenshots for a person to look at
MEGATRON_LOG = Path(settings.BASE_DIR) / "tests" / "fixtures" / "logs" / "heldout" / "megatron-fused-srun-label-torch24.log"


def test_a_pasted_log_continues_in_the_troubleshooter_with_its_answers_listed(browser_page):
    """Paste on the home page, Diagnose, follow the hand-off: the log's answers are listed, each from your log."""
    page = browser_page.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(browser_page.base_url + "/")
    page.fill("#log", MEGATRON_LOG.read_text())
    page.click("form.diagnose-form button[type=submit]")
    page.click("text=Continue in the troubleshooter with these facts")
    page.wait_for_selector("#step-focus")
    assert page.inner_text("#step-focus") == "What do you see on rank 0's node while the others wait?"
    listed = page.locator(".answer-list li").all_inner_texts()
    assert len(listed) == 3 and all("from your log" in item for item in listed), listed
    assert "At a compile step" in listed[0] and "srun" in listed[2]
    assert "3 answers came from your log" in page.inner_text(".from-log-note")
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "handoff-390.png"), full_page=True)

    page.locator(".answer-change").first.click()
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.id === 'step-focus' "
        "&& document.activeElement.textContent.includes('When does the job stop')"
    )
    assert page.is_checked("input[name=when][value=compile]"), "Change selects the log's answer"
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "change-390.png"), full_page=True)
    assert not browser_page.console_errors
