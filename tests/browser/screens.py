"""The two screens issue 33's items are tried at, and the steps several browser tests take the same way."""

from __future__ import annotations

import pytest

from tests.kb.web.test_results_page import sixty_four_rank_log

DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = [pytest.param(DESKTOP, id="1366x900"), pytest.param(PHONE, id="390x844")]


def curator_signed_in(page, base_url: str, django_user_model, next_path: str) -> None:
    """A staff account made and signed in through the admin's login form, landing on `next_path`."""
    django_user_model.objects.create_user("curator", password="a-long-pass-1", is_staff=True)
    page.goto(f"{base_url}/admin/login/?next={next_path}")
    page.fill("#id_username", "curator")
    page.fill("#id_password", "a-long-pass-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}")


def pasted_and_shared(page, base_url: str, *, store_log: bool = False) -> str:
    """A 64-rank log pasted, diagnosed and shared (with the log stored, if asked): the shared report's URL."""
    page.goto(base_url + "/")
    page.fill("#log", sixty_four_rank_log())
    page.click("form.diagnose-form button[type=submit]")
    page.wait_for_selector("#share button[type=submit]")
    if store_log:
        page.check("#share input[name=store_log]")
    page.click("#share button[type=submit]")
    page.wait_for_url("**/d/*")
    return page.url
