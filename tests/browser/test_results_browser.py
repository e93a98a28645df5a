"""Issue 10 in a real browser, at a laptop (1366x900) and a phone (390x844) viewport: the answer is on
screen after Diagnose (with and without JavaScript), evidence rows expand, Share opens in a fresh
context, a vote is counted, the curators' page needs a staff login, inputs are never merged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.kb.web.test_results_page import sixty_four_rank_log
from tests.browser.screens import SIZES

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("KB_SCREENSHOTS")  # a folder: save screenshots for a person to look at


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    """Playwright's sync API runs an event loop in this thread; these tests read the database beside it."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def shot(page, name: str, size: dict) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{size['width']}.png"))


def in_first_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; }""",
        selector,
    )


def diagnose(page, base_url: str, size: dict, log: str) -> None:
    page.set_viewport_size(size)
    page.goto(base_url + "/")
    page.fill("#log", log)
    page.click("form.diagnose-form button[type=submit]")


@pytest.mark.parametrize("size", SIZES)
def test_the_best_case_is_in_the_first_viewport_after_diagnose(browser_page, size):
    page = browser_page.page
    diagnose(page, browser_page.base_url, size, sixty_four_rank_log())
    page.wait_for_selector("#answer h2")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'answer'")
    assert in_first_viewport(page, "#answer-h"), "the best case's title is on screen without scrolling"
    assert in_first_viewport(page, "#do-first")
    shot(page, "answer-js", size)
    assert browser_page.console_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_the_answer_is_first_without_javascript(browser_page_without_js, size):
    page = browser_page_without_js.page
    diagnose(page, browser_page_without_js.base_url, size, sixty_four_rank_log())
    page.wait_for_load_state()
    assert page.url.endswith("/diagnose")
    assert in_first_viewport(page, "#answer-h")
    # Chromium moves focus to an autofocus element at its next rendering update, which on a busy machine can come
    # after the load event: wait for it (10 s) rather than read it once.
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'answer'", timeout=10_000)
    shot(page, "answer-nojs", size)


@pytest.mark.parametrize("size", SIZES)
def test_an_evidence_row_expands_to_its_context_and_ranks_are_grouped(browser_page, size):
    page = browser_page.page
    diagnose(page, browser_page.base_url, size, sixty_four_rank_log(behind=37, silent=0))
    page.wait_for_selector("#answer h2")
    first = page.locator(".evidence-row").first
    assert "rank 37" in first.inner_text()
    assert not first.locator("ol.context").is_visible()
    first.locator("summary").click()
    assert first.locator("ol.context li").count() == 11
    groups = page.inner_text(".where-groups")
    assert "62 ranks" in groups and "Rank 37" in groups and "behind" in groups and "no timeout line" in groups
    page.locator(".evidence-row").first.scroll_into_view_if_needed()
    shot(page, "evidence-open", size)


@pytest.mark.parametrize("size", SIZES)
def test_share_opens_in_a_fresh_context_and_a_vote_is_counted(browser_page, size):
    page = browser_page.page
    diagnose(page, browser_page.base_url, size, sixty_four_rank_log() + "export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567\n")
    page.wait_for_selector("#share button[type=submit]")
    page.check("#share input[name=store_log]")
    page.click("#share button[type=submit]")
    page.wait_for_url("**/d/*")
    url = page.url
    assert "delete link" in page.inner_text(".report-owner")
    shot(page, "report-owner", size)
    other = page.context.browser.new_context(java_script_enabled=False, viewport=size)
    fresh = other.new_page()
    fresh.goto(url)
    assert in_first_viewport(fresh, "#answer-h")
    assert fresh.locator(".report-owner").count() == 0
    assert "hf_aBcDeF" not in fresh.content()
    fresh.check("#vote input[value=yes]")
    fresh.click("#vote button[type=submit]")
    fresh.wait_for_load_state()
    from kb.models import Vote

    assert Vote.objects.filter(target="report", answer="yes").count() == 1
    fresh.goto(url)
    assert "already counted" in fresh.inner_text("main")
    other.close()
    assert browser_page.console_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_a_vote_on_the_result_is_counted_with_htmx(browser_page, size):
    page = browser_page.page
    diagnose(page, browser_page.base_url, size, sixty_four_rank_log())
    page.wait_for_selector("#vote")
    page.check("#vote input[value=no]")
    page.click("#vote button[type=submit]")
    page.wait_for_selector("#vote.done")
    from kb.models import Vote

    assert Vote.objects.filter(target="result", answer="no").count() == 1


@pytest.mark.parametrize("size", SIZES)
def test_the_curators_page_needs_a_staff_login(browser_page, size, django_user_model):
    django_user_model.objects.create_user("curator", password="a-long-pass-1", is_staff=True)
    page = browser_page.page
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + "/curate/")
    assert "/admin/login/" in page.url
    page.fill("#id_username", "curator")
    page.fill("#id_password", "a-long-pass-1")
    page.click("input[type=submit]")
    page.wait_for_url("**/curate/")
    assert "What no case explained" in page.inner_text("main")
    shot(page, "curate", size)


@pytest.mark.parametrize("size", SIZES)
def test_a_multi_line_paste_in_the_header_goes_to_the_diagnosis(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + "/kb/")
    page.evaluate(
        """(text) => { const input = document.getElementById('header-q'); input.focus();
        const data = new DataTransfer(); data.setData('text/plain', text);
        input.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true})); }""",
        sixty_four_rank_log(),
    )
    page.wait_for_url("**/diagnose")
    page.wait_for_selector("#answer h2")
    assert "Most likely cause" in page.inner_text("#answer")


@pytest.mark.parametrize("size", SIZES)
def test_a_paste_and_a_file_are_refused_with_a_message(browser_page, size, tmp_path):
    page = browser_page.page
    log = tmp_path / "rank1.log"
    log.write_text(sixty_four_rank_log())
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + "/")
    page.fill("#log", "pasted line one\npasted line two")
    page.set_input_files("#file", str(log))
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#results .error-message")
    assert "never merged" in page.inner_text("#results")


@pytest.mark.parametrize("size", SIZES)
def test_an_unexplained_hang_shows_its_timeouts_and_leads_to_the_capture_script(browser_page, size):
    """The timeouts table fits the phone's width, and the capture link opens the capture tree with the log's
    launcher answered, ending in a script to download."""
    from tests.kb.web.test_timeouts import TRAINING_ARGS, WATCHDOG

    page = browser_page.page
    log = "+ torchrun --nproc_per_node 2 train.py\n" + TRAINING_ARGS.format(seconds=5400) + WATCHDOG.format(ms=600000, ran=600083)
    diagnose(page, browser_page.base_url, size, log)
    page.wait_for_selector("#timeouts-h")
    note = page.inner_text(".timeouts-note")
    assert "ddp_timeout" in note and "did not reach it" in note
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px"
    page.locator("#timeouts").scroll_into_view_if_needed()
    shot(page, "timeouts", size)
    page.locator("p.capture a").click()
    page.wait_for_selector("h1, h2")
    assert "/troubleshoot/capture/" in page.url and "launcher=torchrun" in page.url
    shot(page, "capture-first-question", size)
    assert browser_page.console_errors == []
