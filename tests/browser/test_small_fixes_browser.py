"""Issue 33's smaller findings (item 10) in a real browser, at a laptop and a phone viewport: a source-location
search, the highlight's outline, the troubleshooter's Back and "check your answers", a refusal tied to its field,
and the signed-in indicator with its way into /curate/."""

from __future__ import annotations

import pytest

from tests.browser.screens import SIZES, curator_signed_in

pytestmark = pytest.mark.browser
IFNAME_OUTCOME = "/troubleshoot/hang/?container=docker&iface=eth0&init-log=iface&launcher=mpirun&when=init"


@pytest.mark.parametrize("size", SIZES)
def test_a_source_location_typed_in_the_header_is_searched_and_stays_in_the_box(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + "/kb/")
    page.fill("#header-q", "ProcessGroupNCCL.cpp:1234")
    page.press("#header-q", "Enter")
    page.wait_for_url("**/search?q=ProcessGroupNCCL.cpp%3A1234")
    assert page.input_value("#header-q") == "ProcessGroupNCCL.cpp:1234"
    assert page.locator("#answer").count() == 0 and page.locator(".hit").count() >= 1


def test_the_search_highlights_outline_clears_underscores(browser_page):
    page = browser_page.page
    page.goto(browser_page.base_url + "/kb/nccl-socket-ifname-wrong-interface/?hl=nccl_socket_ifname#fix-3")
    page.wait_for_selector("mark.search-hl")
    gap = page.evaluate(
        """() => {
          const mark = document.querySelector('mark.search-hl');
          const range = document.createRange();
          range.selectNodeContents(mark);
          const text = range.getBoundingClientRect();  // the glyphs' box: an underscore is drawn inside it
          const offset = parseFloat(getComputedStyle(mark).outlineOffset);
          return mark.getBoundingClientRect().bottom + offset - text.bottom;
        }"""
    )
    assert gap >= 2, f"the outline is drawn {gap}px below the glyphs' box"


@pytest.mark.parametrize("size", SIZES)
def test_the_outcome_lists_the_answers_to_check_above_it_and_back_goes_one_question_back(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + IFNAME_OUTCOME)
    check = page.get_by_role("heading", name="Check your answers").bounding_box()
    outcome = page.locator("#step-focus").bounding_box()
    assert check["y"] < outcome["y"] < size["height"] * 2
    page.get_by_role("link", name="Back to the previous question").click()
    page.wait_for_url("**_change=container**")
    assert page.locator("input[name=container][value=docker]").is_checked()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/troubleshoot/hang/?container=docker&iface=eth0&init-log=iface&launcher=mpirun&when=init")
    assert page.get_by_role("heading", name="Check your answers").is_visible()
    assert browser_page.console_errors == []


def test_back_on_the_first_question_goes_to_the_list_of_troubleshooters(browser_page_without_js):
    page = browser_page_without_js.page
    page.goto(browser_page_without_js.base_url + "/troubleshoot/hang/")
    page.get_by_role("link", name="Back to the list of troubleshooters").click()
    page.wait_for_url("**/troubleshoot/")


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-js"])
def test_a_refused_paste_is_tied_to_the_paste_box(browser_page, browser_page_without_js, javascript):
    current = browser_page if javascript else browser_page_without_js
    page = current.page
    page.goto(current.base_url + "/")
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#log[aria-invalid=true]")
    described = page.get_attribute("#log", "aria-describedby").split()
    message = page.locator(f"#{described[0]}")
    assert "Nothing to diagnose" in message.inner_text() and "log-help" in described


@pytest.mark.parametrize("size", SIZES)
def test_a_signed_in_curator_is_greeted_and_finds_the_curators_page(browser_page, size, django_user_model):
    page = browser_page.page
    page.set_viewport_size(size)
    curator_signed_in(page, browser_page.base_url, django_user_model, "/kb/")
    assert "Signed in as curator" in page.inner_text(".site-nav")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]
    page.get_by_role("link", name="Curate").click()
    page.wait_for_url("**/curate/")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_load_state()
    page.goto(browser_page.base_url + "/kb/")
    assert "Signed in" not in page.inner_text(".site-nav")
