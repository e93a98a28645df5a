"""Wizard state parsing under random input: a step, or a StateError with a message, never anything else."""
import pytest
from django.conf import settings
from hypothesis import given, strategies as st

from troubleshooter.library import library_read
from troubleshooter.engine import StateError, tree_step

TREE = library_read(settings.CONTENT_DIR).trees["hang"]
QUESTION_IDS = sorted(node_id for node_id in TREE.nodes if TREE.question(node_id) is not None)
VALUES = st.one_of(st.text(max_size=30), st.sampled_from(["eth0", "60", "8", "torchrun", "mpirun", "yes", "", " "]))


@given(st.dictionaries(st.one_of(st.sampled_from(QUESTION_IDS), st.text(max_size=12)), VALUES, max_size=8))
def test_any_answers_give_a_step_or_a_state_error(answers):
    try:
        step = tree_step(TREE, answers)
    except StateError as err:
        assert str(err)
    else:
        assert step is not None


@pytest.mark.django_db
@given(st.lists(st.tuples(st.sampled_from(QUESTION_IDS + ["x", "tree"]), VALUES), max_size=6))
def test_any_query_string_is_answered_without_a_server_error(pairs):
    from urllib.parse import urlencode
    from django.test import Client
    client = Client()
    query = urlencode(pairs)
    assert client.get(f"/troubleshoot/hang/fix.sh?{query}").status_code in (200, 400)
    response = client.get(f"/troubleshoot/hang/?{query}")
    if response.status_code == 302:  # a valid state whose URL was not canonical: one redirect, then the step
        response = client.get(response["Location"])
    assert response.status_code in (200, 400)
