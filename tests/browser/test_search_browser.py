"""Search in a real browser (issue 12): a hit links to the section that mentions the words, where they are
highlighted; search-as-you-type and the "/" shortcut on the home page, with the plain form still working
without JavaScript; a keyword search shows no diagnosis; the case list's filter makes clean URLs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

IN_TARGET_SECTION_JS = """() => {
  const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (!target) return -1;
  const level = Number(target.tagName[1]);
  let count = 0;
  for (let el = target.nextElementSibling; el; el = el.nextElementSibling) {
    if (/^H[1-6]$/.test(el.tagName) && Number(el.tagName[1]) <= level) break;
    count += el.querySelectorAll('mark.search-hl').length;
  }
  const box = target.getBoundingClientRect();
  return box.top >= 0 && box.top < innerHeight ? count : -2;
}"""


def test_a_hit_links_to_its_section_and_the_term_is_highlighted_there(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/search?q=NCCL_SOCKET_IFNAME")
    assert page.locator("#answer").count() == 0, "a keyword search shows no diagnosis block"
    heading = page.inner_text("#hits-h")
    assert "mention" in heading and "NCCL_SOCKET_IFNAME" in heading
    first = page.locator(".hit").first
    assert first.locator(".passage mark").count() >= 1
    assert "NCCL_SOCKET_IFNAME" in first.locator(".passage mark").first.inner_text().upper()
    href = first.locator(".hit-title a").get_attribute("href")
    assert "#" in href and not href.endswith("#") and "hl=" in href
    first.locator(".hit-title a").click()
    page.wait_for_load_state()
    section = page.url.split("#", 1)[1]
    assert section not in ("", "symptoms"), "lands on the section that mentions the word, not the top"
    count = page.evaluate(IN_TARGET_SECTION_JS)
    assert count >= 1, f"no highlighted mention inside #{section} ({count})"
    assert "highlighted" in page.inner_text(".hl-note")
    page.click(".hl-note button")
    assert page.locator("mark.search-hl").count() == 0
    assert browser_page.console_errors == []


def test_search_as_you_type_and_the_slash_shortcut(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "home-q"
    page.keyboard.type("flight recorder", delay=20)
    page.wait_for_selector("#live-hits .hit")
    assert page.url.rstrip("/") == browser_page.base_url, "results came in place, no navigation"
    assert page.evaluate("() => document.activeElement.id") == "home-q", "typing is not interrupted"
    page.wait_for_function("() => document.getElementById('announcer').textContent.includes('mention')")
    assert page.locator("#live-hits .hit .passage mark").count() >= 1
    page.goto(browser_page.base_url + "/kb/")
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "header-q"


def test_the_plain_search_form_works_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page
    page.goto(browser_page_without_js.base_url + "/")
    page.fill("#home-q", "py-spy dump")
    page.press("#home-q", "Enter")
    page.wait_for_load_state()
    assert "/search?q=py-spy+dump" in page.url
    assert page.locator(".hit").count() >= 3 and page.locator(".hit .passage mark").count() >= 3


def test_nothing_found_offers_did_you_mean_and_browsing(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/search?q=watchdgo")
    assert page.locator("#answer").count() == 0
    suggestion = page.locator("a.suggestion")
    assert suggestion.inner_text() == "watchdog"
    assert page.locator(".browse a[href='/kb/']").count() == 1
    assert page.locator(".browse .tag").count() >= 5
    suggestion.click()
    page.wait_for_load_state()
    assert page.locator(".hit").count() >= 1


def test_the_case_list_filter_sends_only_the_tags_chosen(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/kb/")
    page.select_option("#tag-phase", "phase:checkpoint")
    page.click(".tag-filter button[type=submit]")
    page.wait_for_load_state()
    assert page.url.endswith("/kb/?tag=phase:checkpoint")
    assert "tagged" in page.inner_text("#list-h")


def test_a_log_line_entered_in_the_header_box_is_diagnosed_without_reaching_the_url(browser_page_without_js):
    """Regression: the header box was a GET form, so a pasted line with its HF_TOKEN went into the address, the
    browser's history and the server's access log."""
    page = browser_page_without_js.page
    secret = "hf_HeaderBoxTokenAbcdefghijklmnop0123"
    page.goto(browser_page_without_js.base_url + "/kb/")
    page.fill(
        "#header-q",
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
        f"Timeout(ms)=600000) ran for 600041 milliseconds before timing out. HF_TOKEN={secret}",
    )
    page.press("#header-q", "Enter")
    page.wait_for_load_state()
    assert page.url == browser_page_without_js.base_url + "/search"
    assert "Diagnosis of your log" in page.inner_text("h1")
