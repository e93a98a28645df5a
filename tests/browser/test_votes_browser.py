"""Votes in a real browser (issue 33 item 5, issue 34 finding 6), at a laptop and a phone viewport: a browser answers
a shared report once and is told its answer, a teammate in another browser still answers and both are counted,
and a case page's ballot sent again from another browser is refused."""

from __future__ import annotations

import json

import pytest

from kb.models import Report, Vote
from tests.browser.test_case_page_browser import AXE
from tests.browser.screens import SIZES, pasted_and_shared

pytestmark = pytest.mark.browser


def answer(page, value: str) -> None:
    page.check(f"#vote input[value={value}]")
    page.click("#vote button[type=submit]")
    page.wait_for_selector("#vote.done")


@pytest.mark.parametrize("size", SIZES)
def test_a_second_vote_from_the_same_browser_does_not_change_the_count_a_teammates_does(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    url = pasted_and_shared(page, browser_page.base_url)
    report = Report.objects.get(id=url.rsplit("/", 1)[1])
    reader = page.context.browser.new_context(viewport=size)
    first_tab, second_tab = reader.new_page(), reader.new_page()
    first_tab.goto(url)
    second_tab.goto(url)  # opened before the first answer: its form is still there
    answer(first_tab, "no")
    answer(second_tab, "yes")
    assert "already counted" in second_tab.inner_text("#vote") and "it did not fix it" in second_tab.inner_text("#vote")
    assert report.votes.count() == 1
    first_tab.reload()
    assert first_tab.locator("#vote form").count() == 0 and "Your answer was already counted" in first_tab.inner_text("main")
    reader.close()
    teammate = page.context.browser.new_context(viewport=size)
    other = teammate.new_page()
    other.goto(url)
    answer(other, "yes")
    assert report.votes.count() == 2
    other.reload()
    assert "2 people voted: 1 said it fixed the job" in other.inner_text("#readers-answers")
    other.evaluate(AXE)
    found = json.loads(other.evaluate("async () => JSON.stringify(await axe.run(document, {resultTypes: ['violations']}))"))
    assert [v["id"] for v in found["violations"]] == []
    teammate.close()
    assert browser_page.console_errors == []


def test_a_case_page_ballot_replayed_from_another_browser_is_refused(browser_page):
    page = browser_page.page
    page.goto(f"{browser_page.base_url}/kb/llama3-fsdp-allgather-timeout/")
    ballot = page.get_attribute("#vote input[name=ballot]", "value")
    answer(page, "yes")
    assert Vote.objects.count() == 1
    replayer = page.context.browser.new_context()
    again = replayer.new_page()
    again.goto(f"{browser_page.base_url}/kb/llama3-fsdp-allgather-timeout/")
    again.evaluate("(ballot) => { document.querySelector('#vote input[name=ballot]').value = ballot; }", ballot)
    again.check("#vote input[value=yes]")
    again.click("#vote button[type=submit]")
    again.wait_for_selector("#vote .error-message, .error-message")
    assert "already used" in again.inner_text("main")
    assert Vote.objects.count() == 1
    replayer.close()
