"""Sharing into a wiki in a real browser (issue 33 item 9), at a laptop and a phone viewport: "Copy as Markdown"
copies absolute links, on a plain-HTTP host too; an evidence line opens at its place in the stored log, whose
search works without JavaScript."""

from __future__ import annotations

import re

import pytest

from tests.browser.screens import SIZES, pasted_and_shared

pytestmark = pytest.mark.browser
PLAIN_HTTP = (
    "Object.defineProperty(window, 'isSecureContext', {value: false});"
    "Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});"
)


@pytest.mark.parametrize("size", SIZES)
def test_copy_as_markdown_copies_absolute_links_on_a_plain_http_host(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    url = pasted_and_shared(page, browser_page.base_url, store_log=True)
    page.add_init_script(PLAIN_HTTP)
    page.goto(url)
    assert page.evaluate("() => navigator.clipboard === undefined")
    button = page.locator("button.copy-markdown")
    assert button.is_visible()
    button.click()
    page.wait_for_function("() => document.querySelector('.copy-status').textContent === 'Copied.'")
    reader = page.context.new_page()  # a page with the real clipboard API, to read what was copied
    reader.goto(browser_page.base_url + "/kb/")
    copied = reader.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith(f"## Hang Doctor diagnosis: {url}")
    assert f"]({browser_page.base_url}/kb/" in copied and "](/kb/" not in copied
    assert browser_page.console_errors == []


def test_without_javascript_the_copy_button_stays_hidden(browser_page_without_js):
    page = browser_page_without_js.page
    url = pasted_and_shared(page, browser_page_without_js.base_url, store_log=True)
    page.goto(url)
    assert not page.locator("button.copy-markdown").is_visible()
    assert page.locator("#report-markdown").is_visible()


@pytest.mark.parametrize("size", SIZES)
def test_an_evidence_line_opens_at_its_place_in_the_stored_log(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    pasted_and_shared(page, browser_page.base_url, store_log=True)
    row = page.locator(".evidence-row").first
    row.locator("summary").click()
    link = row.locator(".in-log a")
    number = re.search(r"Line (\d+)", link.inner_text()).group(1)
    link.click()
    page.wait_for_url(f"**/log#L{number}")
    target = page.locator(f"li#L{number}")
    assert page.evaluate("() => document.querySelector(':target').id") == f"L{number}"
    box = target.bounding_box()
    assert 0 <= box["y"] < size["height"], "the line is on screen"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]


def test_the_log_search_works_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page
    page.set_viewport_size({"width": 390, "height": 844})
    url = pasted_and_shared(page, browser_page_without_js.base_url, store_log=True)
    page.goto(url + "/log")
    page.fill("#log-q", "rank 37")
    page.click(".log-search button[type=submit]")
    page.wait_for_load_state()
    assert "q=rank+37" in page.url and page.input_value("#log-q") == "rank 37"
    assert "contain" in page.inner_text("#log-found") and page.locator(".log-lines mark").count() >= 1
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
