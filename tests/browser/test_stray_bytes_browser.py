"""A log with a stray NUL byte uploaded in a real browser (issue 33 item 4), at a laptop and a phone viewport: the same
case as the paste, and the page says what was done with the byte."""

from __future__ import annotations

import pytest

from tests.kb.web.test_stray_control_bytes import BUS_ERROR_LOG, SHM_CASE
from tests.browser.screens import SIZES

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", SIZES)
def test_a_nul_containing_log_uploads_and_gets_the_same_case_as_pasted(browser_page, size):
    page = browser_page.page
    page.set_viewport_size(size)
    page.goto(browser_page.base_url + "/")
    page.fill("#log", BUS_ERROR_LOG.decode().replace("\x00", ""))
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#answer-h a")
    pasted = page.get_attribute("#answer-h a", "href")
    page.goto(browser_page.base_url + "/")
    page.set_input_files("#file", files=[{"name": "train.log", "mimeType": "text/plain", "buffer": BUS_ERROR_LOG}])
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#answer-h a")
    assert page.get_attribute("#answer-h a", "href") == pasted == f"/kb/{SHM_CASE}/"
    assert "1 NUL byte dropped" in page.inner_text("#results")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]
    assert browser_page.console_errors == []
