"""Back on every step and the answers checked before the outcome (issue 33 item 10, after GOV.UK Smart Answers):
Back opens the previous question with its answer selected and later answers kept; the first question's Back
goes to the list of troubleshooters; an outcome lists the answers it follows from above the diagnosis. Served from
the fixture tree (tests/troubleshooter/trees/relay.yaml), so rewording a real tree breaks none of these."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.kb.html_checks import assert_valid_html
from troubleshooter.tree_model import tree_walk

pytestmark = pytest.mark.django_db

RUN = {"phase": "running", "run-symptom": "slow", "launcher": "mpirun", "wait": "45"}


@pytest.fixture(autouse=True)
def _content(loaded_content, relay_served):
    """The pages serve the fixture tree; outcomes show case titles from the database."""


def back_href(page: str) -> str:
    return unescape(re.search(r'<a class="back-link" href="([^"]+)"', page).group(1))


def test_the_first_questions_back_goes_to_the_list_of_troubleshooters(client):
    assert back_href(client.get("/troubleshoot/relay/").content.decode()) == "/troubleshoot/"


def test_back_opens_the_previous_question_with_its_answer_selected_and_later_answers_kept(client):
    page = client.get("/troubleshoot/relay/", {"phase": "running", "run-symptom": "slow"}, follow=True).content.decode()
    back = back_href(page)
    assert dict(parse_qsl(urlsplit(back).query)) == {"phase": "running", "run-symptom": "slow", "_change": "run-symptom"}
    previous = client.get(back).content.decode()
    assert re.search(r'<input type="radio" id="choice-run-symptom-slow"[^>]*checked', previous)


def test_every_step_of_every_path_has_a_back_link(client, relay_served):
    state = next(iter(tree_walk(relay_served.trees["relay"])))
    for depth in range(len(state) + 1):
        answers = dict(list(state.items())[:depth])
        response = client.get("/troubleshoot/relay/", answers, follow=True)
        assert response.status_code == 200 and 'class="back-link"' in response.content.decode(), answers


def test_an_outcome_lists_the_answers_to_check_above_the_diagnosis(client):
    response = client.get("/troubleshoot/relay/", RUN, follow=True)
    page = response.content.decode()
    assert_valid_html(response.content)
    assert page.index("Check your answers") < page.index('class="diagnosis"')
    checked = page[page.index("Check your answers") : page.index('class="diagnosis"')]
    assert checked.count('class="answer-change"') == len(RUN)
