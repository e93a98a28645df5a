"""Issue 13 in a real browser at phone width (390x844): upload a torchrun job tarball, see where every rank
is, with and without JavaScript; the groups fit the screen and the odd one out is marked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.kb.job_fixtures import tar_gz, torchrun_job
from tests.browser.screens import PHONE

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("KB_SCREENSHOTS")  # a folder: save screenshots for a person to look at


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    """Playwright's sync API runs an event loop in this thread; these tests read the database beside it."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def upload_job(page, base_url: str) -> None:
    page.set_viewport_size(PHONE)
    page.goto(base_url + "/")
    page.set_input_files(
        "#file", files=[{"name": "job-71.tar.gz", "mimeType": "application/gzip", "buffer": tar_gz(torchrun_job(silent=0))}]
    )
    page.click("form.diagnose-form button[type=submit]")


def check_groups(page) -> None:
    groups = page.locator(".where-group")
    assert groups.count() == 2
    assert groups.nth(0).locator("h3").inner_text() == "3 ranks in ALLREDUCE #1 (timed out)"
    odd = groups.nth(1)
    assert "odd" in odd.get_attribute("class")
    assert odd.locator("h3").inner_text().startswith("1 rank printed output, but no timeout line")
    assert odd.locator(".where-fix a").get_attribute("href").endswith("#fix-1")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the groups fit a phone screen without scrolling sideways"


def test_an_uploaded_job_shows_where_every_rank_is_at_phone_width(browser_page):
    page = browser_page.page
    upload_job(page, browser_page.base_url)
    page.wait_for_selector("#where .where-group")
    check_groups(page)
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.locator("#where").scroll_into_view_if_needed()
        page.screenshot(path=str(Path(SHOTS) / "where-every-rank-390.png"))
        page.locator("#where").screenshot(path=str(Path(SHOTS) / "where-every-rank-section-390.png"))
    assert browser_page.console_errors == []


def test_an_uploaded_job_shows_where_every_rank_is_without_javascript(browser_page_without_js):
    page = browser_page_without_js.page
    upload_job(page, browser_page_without_js.base_url)
    page.wait_for_load_state()
    assert page.url.endswith("/diagnose")
    check_groups(page)


def test_a_chosen_log_folder_keeps_the_sub_folders_that_name_the_ranks(browser_page, tmp_path):
    """Django keeps only a file's bare name; the page sends each file's path inside the folder beside it, so
    torchrun's <rank>/stdout.log still says which rank it is (four files are all called stdout.log)."""
    folder = tmp_path / "logs"
    for name, data in torchrun_job(silent=0).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    page = browser_page.page
    page.set_viewport_size(PHONE)
    page.goto(browser_page.base_url + "/")
    page.set_input_files("#folder", str(folder))
    assert page.locator("input.folder-path").count() == 8
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#where .where-group")
    check_groups(page)
    assert browser_page.console_errors == []
