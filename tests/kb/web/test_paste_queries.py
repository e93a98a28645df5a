"""A warm paste (the worker has the served rules and the search index open) is answered with at most two SQL
statements: the served revision, read once for the whole request, and the paste's counter, written in one
statement (issue 30, build step 2). Each variant is pasted once to warm the worker, then measured."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from kb.models import Case, CaseMatchDay
from tests.kb.web.test_capture_next_time import LAUNCH, PYSPY, TIMEOUT
from tests.kb.web.test_results_page import sixty_four_rank_log

pytestmark = pytest.mark.django_db

# The paste box of /diagnose, and the site's search box, which answers a log-shaped query in place.
FORMS = [("/diagnose", "log"), ("/search", "q")]
NO_CAUSE = LAUNCH + TIMEOUT + PYSPY  # a watchdog timeout and both ranks' stacks, nothing that says why
HTMX = {"HX-Request": "true", "HX-Target": "results"}


def _paste(client, url: str, field: str, log: str, **headers: str) -> str:
    response = client.post(url, {field: log}, headers=headers)
    assert response.status_code == 200
    return response.content.decode()


def _best_slug(page: str) -> str:
    return re.search(r'<h2 id="answer-h"><a href="/kb/([a-z0-9-]+)/"', page).group(1)


@pytest.mark.parametrize(("url", "field"), FORMS)
def test_a_warm_paste_with_a_confident_answer_runs_at_most_two_statements(client, django_assert_max_num_queries, url, field):
    _paste(client, url, field, sixty_four_rank_log())
    with django_assert_max_num_queries(2):
        page = _paste(client, url, field, sixty_four_rank_log())
    assert "Most likely cause" in page and "This paste was not counted" not in page


@pytest.mark.parametrize(("url", "field"), FORMS)
def test_a_warm_paste_with_no_confident_cause_runs_at_most_two_statements(client, django_assert_max_num_queries, url, field):
    _paste(client, url, field, NO_CAUSE)
    with django_assert_max_num_queries(2):
        page = _paste(client, url, field, NO_CAUSE)
    assert 'href="/troubleshoot/capture/' in page, "the capture script is offered"


@pytest.mark.parametrize(("url", "field"), FORMS)
def test_a_warm_paste_answered_as_an_htmx_fragment_runs_at_most_two_statements(client, django_assert_max_num_queries, url, field):
    _paste(client, url, field, sixty_four_rank_log(), **HTMX)
    with django_assert_max_num_queries(2):
        fragment = _paste(client, url, field, sixty_four_rank_log(), **HTMX)
    assert "Most likely cause" in fragment and "<html" not in fragment


def test_the_first_paste_of_a_day_for_a_case_is_counted_within_the_two_statements(client, django_assert_max_num_queries):
    """No counter row for the day yet: the count is still one statement, not an update and then an insert."""
    slug = _best_slug(_paste(client, "/diagnose", "log", sixty_four_rank_log()))
    CaseMatchDay.objects.filter(slug=slug).delete()
    with django_assert_max_num_queries(2):
        _paste(client, "/diagnose", "log", sixty_four_rank_log())
    assert CaseMatchDay.objects.get(slug=slug, day=timezone.now().date()).count == 1


def test_each_paste_answered_by_a_case_adds_one_to_its_count_for_the_day(client):
    slug = _best_slug(_paste(client, "/diagnose", "log", sixty_four_rank_log()))
    _paste(client, "/search", "q", sixty_four_rank_log())
    assert CaseMatchDay.objects.get(slug=slug, day=timezone.now().date()).count == 2


def test_a_pastes_vote_form_offers_every_case_but_the_triage_guides_by_title(client):
    page = _paste(client, "/diagnose", "log", sixty_four_rank_log())
    select = re.search(r'<select id="vote-other-result" name="other_case">(.*?)</select>', page, re.S).group(1)
    offered = re.findall(r'<option value="([a-z0-9-]+)">', select)
    assert offered == [slug for _, slug in sorted(Case.objects.filter(guide=False).values_list("title", "slug"))]
