"""The curators' report (issue 33 item 6) in a real browser, at desktop and phone width: clusters counted in pastes, a draft
signature each, and the two answers, Dismiss and This is case, with htmx (the cluster swapped in place) and without
JavaScript (the form posts and the page comes back). axe-core finds no violation, light and dark."""

from __future__ import annotations

import json
import os

import pytest

from kb.models import LineTemplate
from kb.reports import store
from tests.browser.test_case_page_browser import AXE
from tests.browser.screens import DESKTOP, SIZES, curator_signed_in

pytestmark = pytest.mark.browser


def signed_in(current, django_user_model, size: dict) -> object:
    store.templates_record("unmatched", ["<time> frobnicator ERROR widget <num> failed"] * 3)
    store.templates_record("unmatched", ["<time> frobnicator ERROR widget <num> failed"])
    store.templates_record("unmatched", ["gizmo service unreachable: connection refused by <host>"])
    page = current.page
    page.set_viewport_size(size)
    curator_signed_in(page, current.base_url, django_user_model, "/curate/")
    return page


def screenshot(page, name: str) -> None:
    """Set KB_SCREENSHOTS=/tmp to look at the page."""
    if os.environ.get("KB_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["KB_SCREENSHOTS"], name), full_page=True)


@pytest.mark.parametrize("size", SIZES)
def test_a_curator_links_and_dismisses_with_htmx(browser_page, django_user_model, size):
    links_and_dismisses(browser_page, django_user_model, javascript=True, size=size)


def test_a_curator_links_and_dismisses_without_javascript(browser_page_without_js, django_user_model):
    links_and_dismisses(browser_page_without_js, django_user_model, javascript=False, size=DESKTOP)


def links_and_dismisses(current, django_user_model, *, javascript: bool, size: dict) -> None:
    name = f"{'htmx' if javascript else 'no-js'}-{size['width']}"
    page = signed_in(current, django_user_model, size)
    frob = LineTemplate.objects.get(template__contains="frobnicator")
    gizmo = LineTemplate.objects.get(template__contains="gizmo")
    item = page.locator(f"#cluster-{frob.id}")
    assert "2 pastes (4 lines)" in item.inner_text()
    screenshot(page, f"curate-{name}-before.png")

    item.get_by_label("This is case").select_option("host-oom-kill")
    item.get_by_role("button", name="Save").click()
    page.wait_for_selector(f"#cluster-{frob.id} .cluster-case")
    assert "content/cases/host-oom-kill.md" in page.locator(f"#cluster-{frob.id}").inner_text()
    frob.refresh_from_db()
    assert frob.case_slug == "host-oom-kill"

    page.locator(f"#cluster-{gizmo.id}").get_by_role("button", name="Dismiss").click()
    if javascript:  # swapped in place: the page stays, the item says what happened and offers the way back
        page.wait_for_selector(f"#cluster-{gizmo.id} .cluster-dismissed")
        assert page.url.endswith("/curate/")
    else:  # the page again, without the dismissed cluster
        page.wait_for_load_state()
        assert page.locator(f"#cluster-{gizmo.id}").count() == 0
    gizmo.refresh_from_db()
    assert gizmo.dismissed
    screenshot(page, f"curate-{name}-after.png")

    page.goto(current.base_url + "/curate/")
    assert page.locator(f"#cluster-{gizmo.id}").count() == 0 and page.locator(f"#cluster-{frob.id}").count() == 1
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]
    assert current.console_errors == [] and current.failed_responses == []
    if javascript:
        page.evaluate(AXE)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            result = json.loads(
                page.evaluate("async () => JSON.stringify(await axe.run(document, {resultTypes: ['violations']}))")
            )
            found = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]]
            assert found == [], f"{scheme}: {json.dumps(found)}"
