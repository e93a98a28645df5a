"""The wizard in a real browser, keyboard only: htmx swaps, focus, Back/Forward, changing an answer, download."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

pytestmark = pytest.mark.browser

ACTIVE = """() => {
  const e = document.activeElement;
  return {tag: e.tagName, id: e.id, name: e.getAttribute('name'), text: (e.innerText || '').trim(),
          href: e.getAttribute('href'), cls: e.className || ''};
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


def expect_focused_heading(page, text: str) -> None:
    """After a swap the new question (or diagnosis) heading has the focus."""
    page.wait_for_function(
        "(text) => { const e = document.activeElement; return e && e.id === 'step-focus' && e.textContent.includes(text); }",
        arg=text, timeout=10_000)


def answers(page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query))


def test_walk_the_wizard_with_the_keyboard_only(browser_page, tmp_path):
    page = browser_page.page
    page.goto(browser_page.base_url + "/troubleshoot/hang/")
    page.wait_for_function("() => window.htmx !== undefined")

    tab_to(page, link_starting("During distributed initialisation"))
    page.keyboard.press("Enter")
    expect_focused_heading(page, "What does the log show during initialisation?")
    assert answers(page) == {"when": "init"}, "htmx pushed the step's URL"
    assert page.evaluate("() => document.querySelectorAll('h1').length") == 1, "only the step panel was swapped"

    tab_to(page, link_starting("NCCL picked a wrong interface"))
    page.keyboard.press("Enter")
    expect_focused_heading(page, "How do you start the ranks?")

    tab_to(page, link_starting("mpirun or mpiexec"))
    page.keyboard.press("Enter")
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

    tab_to(page, link_starting("In Docker or Podman containers"))
    page.keyboard.press("Enter")
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
    assert answers(page) == {"when": "init", "init-log": "iface", "iface": "eth0", "container": "docker"}, \
        "changing an earlier answer keeps the later ones"

    tab_to(page, link_starting("torchrun"))
    page.keyboard.press("Enter")
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
    assert {r for r in browser_page.failed_responses if r[1] != "/favicon.ico"} == {(400, "/troubleshoot/hang/")}, \
        "the only failed request is the refused interface"


def test_the_wizard_works_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page

    def follow() -> None:
        with page.expect_navigation():
            page.keyboard.press("Enter")

    page.goto(browser_page_without_js.base_url + "/troubleshoot/hang/")
    tab_to(page, link_starting("At a compile step"))
    follow()
    assert answers(page) == {"when": "compile"}
    assert "What is being compiled?" in page.inner_text("#step-focus")
    tab_to(page, link_starting("Megatron-LM"))
    follow()
    tab_to(page, link_starting("No compiler runs"))
    follow()
    tab_to(page, link_starting("torchrun"))
    follow()
    tab_to(page, lambda a: a["tag"] == "INPUT" and a["name"] == "megatron-dir")
    page.keyboard.type("/workspace/Megatron-LM")
    follow()
    assert answers(page)["megatron-dir"] == "/workspace/Megatron-LM"
    assert "A stale lock in Megatron-LM" in page.inner_text("#step-focus")
    assert not page.is_visible("button.copy-script"), "no copy button that cannot work"
    assert "megatron/fused_kernels/build/lock" in page.inner_text("#fix-script pre")
