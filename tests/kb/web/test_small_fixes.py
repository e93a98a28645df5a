"""Issue 33's smaller findings (item 10) through the test client: a deleted report's 404 is the site's page under
DEBUG too, "Do this first" always names its step, and a refusal is tied to the field it is about."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string

from kb.models import Report
from tests.kb.web.test_reports import share
from tests.kb.web.test_results_page import sixty_four_rank_log

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("suffix", ["", ".md", "/log", "/log.txt", "/delete"])
def test_a_deleted_reports_addresses_answer_the_sites_404_page_with_debug_on(client, settings, suffix):
    """`make run` runs with DEBUG on, where a raised Http404 showed Django's technical page."""
    report, url = share(client, sixty_four_rank_log(), store_log="on")
    Report.objects.filter(id=report.id).delete()
    settings.DEBUG = True
    response = client.get(url + suffix)
    page = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Page not found</h1>" in page and "does not exist, has expired, or was deleted" in page
    assert "technical_404" not in page and "Django tried these URL patterns" not in page


def best_result(fix_title: str) -> dict:
    steps = [{"id": "fix-1", "title": "1. Find the rank that died first"}, {"id": "fix-2", "title": "2. Read the kernel log"}]
    best = {"title": "A case", "url": "/kb/a-case/", "fix_url": "/kb/a-case/#fix-2" if fix_title else "/kb/a-case/#fix"}
    return {"best": {**best, "fix_title": fix_title, "steps": steps, "percent": 80, "why": "", "evidence": []}}


def do_first_button(html: str) -> tuple[str, str]:
    match = re.search(r'<a class="button" id="do-first" href="([^"]+)">([^<]+)</a>', html)
    return match.group(1), match.group(2)


def test_do_this_first_names_the_step_the_evidence_points_to():
    assert do_first_button(render_to_string("kb/_results.html", {"result": best_result("2. Read the kernel log")})) == (
        "/kb/a-case/#fix-2",
        "Do this first: 2. Read the kernel log",
    )


def test_do_this_first_names_the_first_step_when_the_evidence_points_to_none():
    """Issue 33: the button read "Do this first" and named nothing."""
    assert do_first_button(render_to_string("kb/_results.html", {"result": best_result("")})) == (
        "/kb/a-case/#fix-1",
        "Do this first: 1. Find the rank that died first",
    )


def test_without_javascript_an_empty_paste_returns_the_form_with_the_refusal_tied_to_the_paste_box(client):
    response = client.post("/diagnose", {"log": ""})
    page = response.content.decode()
    assert response.status_code == 400
    textarea = re.search(r"<textarea id=\"log\"[^>]*>", page, re.S).group(0)
    assert 'aria-invalid="true"' in textarea and 'aria-describedby="log-error log-help"' in textarea
    assert re.search(r'<p class="field-error" id="log-error"><strong>Nothing to diagnose:</strong>', page)


def test_with_htmx_a_refusal_names_the_field_it_is_about(client):
    response = client.post("/diagnose", {"log": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert 'id="form-error" data-error-for="log"' in response.content.decode()


def test_a_troubleshooter_answer_refused_is_tied_to_its_field(client):
    page = client.get(
        "/troubleshoot/hang/", {"when": "init", "init-log": "iface", "launcher": "mpirun", "iface": "eth0;rm"}
    ).content
    field = re.search(r'<input id="answer-iface"[^>]*>', page.decode(), re.S).group(0)
    assert 'aria-describedby="step-error help-iface"' in field and 'aria-invalid="true"' in field
    assert 'id="step-error"' in page.decode()
