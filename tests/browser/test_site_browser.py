"""The knowledge base in a real browser: paste a log, read the results, follow a case link to its anchor;
no page logs a JavaScript error or a CSP violation (axe-core runs on every page kind in
test_case_page_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

LOG = (Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_text(errors="replace")
PAGES = [
    "/",
    "/kb/",
    "/kb/llama3-fsdp-allgather-timeout/",
    "/search?q=ALLGATHER_BASE+watchdog",
    "/troubleshoot/",
    "/troubleshoot/hang/",
    "/kb/no-such-case/",
]


def test_pasting_a_log_shows_results_without_reload_and_links_to_the_case_section(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/")
    page.fill("#log", LOG)
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#results .match")
    assert page.url.rstrip("/") == browser_page.base_url  # htmx swapped the results in; no navigation
    assert "rank 2 had made the least progress" in page.inner_text("#results")
    assert page.locator("#results mark").count() > 0
    page.click("#results .match h3 a")
    page.wait_for_load_state()
    assert "/kb/llama3-fsdp-allgather-timeout/#signatures" in page.url
    assert page.evaluate("document.getElementById('signatures') !== null")
    assert browser_page.console_errors == []


def test_results_take_focus_after_the_swap(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/")
    page.fill("#log", LOG)
    page.keyboard.press("Tab")  # from the textarea towards the submit button
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_function("() => document.activeElement !== null && document.activeElement.closest('#results') !== null")


def test_diagnosis_works_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page
    page.goto(browser_page_without_js.base_url + "/")
    page.fill("#log", LOG)
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_load_state()
    assert page.url.endswith("/diagnose")
    assert "Cases that explain it" in page.inner_text("main")


@pytest.mark.parametrize("path", PAGES)
def test_page_has_no_console_error_or_csp_violation(browser_page, path):
    page = browser_page.page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(browser_page.base_url + path)
    assert violations == []
    assert browser_page.console_errors == []
