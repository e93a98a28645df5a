"""Wizard state under random input. The contract: a state URL answers 200 with the step its answers lead to, or
400 (404 for an unknown tree) with a message that says what was wrong; never a 500, never an empty refusal."""

from urllib.parse import urlencode

import html5lib
import pytest
from django.conf import settings
from django.test import Client
from hypothesis import given, strategies as st

from troubleshooter.engine import StateError, tree_step
from troubleshooter.library import library_read
from troubleshooter.tree_model import tree_branches, tree_walk

TREE = library_read(settings.CONTENT_DIR).trees["hang"]
QUESTION_IDS = sorted(node_id for node_id in TREE.nodes if TREE.question(node_id) is not None)
VALUES = st.one_of(st.text(max_size=30), st.sampled_from(["eth0", "60", "8", "torchrun", "mpirun", "yes", "", " "]))
BRANCHES = list(tree_branches(TREE))
STATES = list(tree_walk(TREE))


def _shown_node(page: bytes) -> str:
    """The heading of the step panel: the question asked, or the diagnosis reached."""
    tree = html5lib.parse(page, namespaceHTMLElements=False)
    heading = tree.find(".//h2[@id='step-focus']")
    assert heading is not None, "the page shows no step"
    return "".join(heading.itertext()).strip()


def _error_message(page: bytes) -> str:
    tree = html5lib.parse(page, namespaceHTMLElements=False)
    alert = tree.find(".//div[@class='error-message']")
    return "".join(alert.itertext()).replace("That link or answer did not work.", "").strip() if alert is not None else ""


@given(st.dictionaries(st.one_of(st.sampled_from(QUESTION_IDS), st.text(max_size=12)), VALUES, max_size=8))
def test_any_answers_give_a_step_or_a_state_error(answers):
    """A step asks exactly one question or reaches exactly one leaf, on answers taken from the state as given."""
    try:
        step = tree_step(TREE, answers)
    except StateError as err:
        assert str(err).strip()
    else:
        assert (step.question is None) != (step.leaf is None)
        assert all(answers[a.question.id] == a.value for a in step.path)


@pytest.mark.django_db
@given(
    st.sampled_from(["hang", "hang", "hang", "no-such-tree"]),
    st.lists(st.tuples(st.sampled_from(QUESTION_IDS + ["x", "tree"]), VALUES), max_size=6),
)
def test_any_query_string_answers_a_step_or_a_refusal_with_a_message(tree_id, pairs):
    client = Client()
    query = urlencode(pairs)
    page = client.get(f"/troubleshoot/{tree_id}/?{query}")
    if page.status_code == 302:  # a valid state whose URL was not canonical: one redirect, then the step
        page = client.get(page["Location"])
    script = client.get(f"/troubleshoot/{tree_id}/fix.sh?{query}")
    if tree_id != "hang":
        for response in (page, script):
            assert response.status_code == 404
            assert f"There is no troubleshooter called &#x27;{tree_id}&#x27;" in response.content.decode()
        return
    assert page.status_code in (200, 400), page.status_code
    _shown_node(page.content)  # a refused state still shows a usable step
    assert bool(_error_message(page.content)) == (page.status_code == 400)
    assert script.status_code in (200, 400), script.status_code
    if script.status_code == 200:
        assert script.content.startswith(b"#!/usr/bin/env bash\n")
    else:
        assert script["Content-Type"].startswith("text/plain") and script.content.strip()


@pytest.mark.django_db
@given(st.sampled_from(BRANCHES), st.integers(min_value=0))
def test_a_valid_prefix_of_a_path_asks_that_path_s_next_question(branch, cut):
    trail, _ = branch
    k = cut % len(trail)
    response = Client().get(f"/troubleshoot/hang/?{urlencode(trail[:k])}", follow=True)
    assert response.status_code == 200, _error_message(response.content)
    assert _shown_node(response.content) == TREE.question(trail[k][0]).text


@pytest.mark.django_db
@given(st.sampled_from(STATES))
def test_a_complete_state_shows_its_leaf_and_serves_its_script(state):
    leaf = tree_step(TREE, state).leaf
    client = Client()
    response = client.get(f"/troubleshoot/hang/?{urlencode(state)}", follow=True)
    assert response.status_code == 200, _error_message(response.content)
    assert _shown_node(response.content) == leaf.title
    script = client.get(f"/troubleshoot/hang/fix.sh?{urlencode(state)}")
    assert script.status_code == 200 and script.content.startswith(b"#!/usr/bin/env bash\n")
