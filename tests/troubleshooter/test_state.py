"""The wizard's URL state: answers off the path are dropped, answers still ahead are kept, reserved keys round-trip."""

from __future__ import annotations

import pytest

from troubleshooter.engine import StateError
from troubleshooter.state import State, state_parse, state_query, state_resolve


def test_an_answer_for_a_branch_no_longer_taken_is_dropped(relay):
    """Changing the first answer to 'running' leaves the warm-up symptom behind: it must not ride along in the URL."""
    _, canonical, error = state_resolve(relay, State({"phase": "running", "warm-symptom": "stall", "run-symptom": "slow"}))
    assert error is None
    assert canonical.answers == {"phase": "running", "run-symptom": "slow"}


def test_an_answer_to_a_question_still_ahead_is_kept(relay):
    """The launcher is asked only at the leaf; an answer given early (by a log) waits there instead of being lost."""
    step, canonical, _ = state_resolve(relay, State({"launcher": "mpirun"}))
    assert step.question.id == "phase"
    assert canonical.answers == {"launcher": "mpirun"}


def test_the_log_mark_goes_with_the_answer_it_marks(relay):
    _, canonical, _ = state_resolve(
        relay, State({"phase": "running", "warm-symptom": "stall"}, frozenset({"phase", "warm-symptom"}))
    )
    assert canonical.from_log == {"phase"}


def test_a_change_of_an_answer_that_is_gone_is_forgotten(relay):
    _, canonical, _ = state_resolve(relay, State({"phase": "running"}, change="warm-symptom"))
    assert canonical.change is None


def test_reserved_keys_round_trip_through_the_query(relay):
    state = State({"phase": "running", "launcher": "mpirun"}, frozenset({"phase", "launcher"}), change="phase")
    query = state_query(state)
    assert query == sorted(query)
    parsed: dict[str, list[str]] = {}
    for key, value in query:
        parsed.setdefault(key, []).append(value)
    assert state_parse(parsed) == state


def test_a_question_answered_twice_in_a_link_is_refused():
    with pytest.raises(StateError, match="answered 2 times"):
        state_parse({"phase": ["warmup", "running"]})
