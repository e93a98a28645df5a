"""The step engine: state in, question or leaf out; pure, so no database and no HTTP here. Checked on the fixture
tree (tests/troubleshooter/trees/relay.yaml), so rewording a real tree breaks none of these; the real trees keep one
smoke test at the end."""

import pytest

from troubleshooter.engine import StateError, step_resolve, tree_step
from troubleshooter.tree_model import tree_walk
from troubleshooter.tree_model import Leaf

RUN_PATH = {"phase": "running", "run-symptom": "slow", "launcher": "mpirun", "wait": "45"}


@pytest.fixture(scope="module")
def tree(relay):
    return relay


def test_an_empty_state_asks_the_start_question(tree):
    step = tree_step(tree, {})
    assert step.question.id == tree.start
    assert step.path == ()


def test_answers_lead_to_the_next_question(tree):
    step = tree_step(tree, {"phase": "running"})
    assert step.question.id == "run-symptom"
    assert [a.question.id for a in step.path] == ["phase"]


def test_a_complete_state_reaches_its_leaf_after_the_asked_questions(tree):
    step = tree_step(tree, RUN_PATH)
    assert step.leaf.id == "leaf-run"
    assert [a.question.id for a in step.path] == ["phase", "run-symptom", "launcher", "wait"]
    assert step.roles == {"launcher": "mpirun"}


def test_a_leaf_asks_its_missing_questions_in_order(tree):
    step = tree_step(tree, {"phase": "running", "run-symptom": "slow"})
    assert step.question.id == "launcher"
    step = tree_step(tree, {"phase": "running", "run-symptom": "slow", "launcher": "torchrun"})
    assert step.question.id == "wait"


def test_the_order_of_the_answers_does_not_matter(tree):
    shuffled = dict(reversed(list(RUN_PATH.items())))
    assert tree_step(tree, shuffled).leaf == tree_step(tree, RUN_PATH).leaf


def test_revisiting_an_earlier_question_keeps_the_later_answers(tree):
    without_launcher = {k: v for k, v in RUN_PATH.items() if k != "launcher"}
    step = tree_step(tree, without_launcher)
    assert step.question.id == "launcher"
    assert step.answers["wait"] == "45"
    changed = tree_step(tree, {**without_launcher, "launcher": "torchrun"})
    assert changed.leaf.id == "leaf-run"
    assert changed.roles["launcher"] == "torchrun"


def test_answers_off_the_current_path_are_kept_but_not_used(tree):
    step = tree_step(tree, {**RUN_PATH, "warm-symptom": "stall"})
    assert step.answers["warm-symptom"] == "stall"
    assert "warm-symptom" not in [a.question.id for a in step.path]


def test_an_answer_the_log_already_gave_is_not_asked_again(tree):
    step = tree_step(tree, {"launcher": "srun", "phase": "running", "run-symptom": "slow"})
    assert step.question.id == "wait"


def test_an_unknown_question_is_a_state_error(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {"nosuch": "1"})
    assert err.value.node is None
    assert "nosuch" in str(err.value)


def test_a_leaf_id_is_not_an_answerable_key(tree):
    with pytest.raises(StateError, match="diagnosis, not a question"):
        tree_step(tree, {"leaf-run": "x"})


def test_a_choice_that_does_not_exist_is_a_state_error_naming_its_question(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {"phase": "yesterday"})
    assert err.value.node == "phase"


def test_a_free_value_that_fails_its_rule_is_a_state_error(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {**RUN_PATH, "wait": "45; rm -rf ~"})
    assert err.value.node == "wait"
    assert "whole number of minutes" in str(err.value)


@pytest.mark.parametrize("raw, canonical", [("060", "60"), (" 45 ", "45")])
def test_integer_answers_are_canonical_so_equal_states_are_equal(tree, raw, canonical):
    assert tree_step(tree, {"wait": raw}).answers["wait"] == canonical


@pytest.mark.parametrize("value", ["0", "1441", "-5", "1e3", "sixty", ""])
def test_minutes_outside_the_rule_are_refused(tree, value):
    with pytest.raises(StateError):
        tree_step(tree, {"wait": value})


def test_resolving_a_bad_state_drops_the_bad_answer_and_keeps_the_rest(tree):
    step, error = step_resolve(tree, {**RUN_PATH, "wait": "$(id)"})
    assert error and "whole number of minutes" in error
    assert step.question.id == "wait"
    assert step.answers["launcher"] == "mpirun"


def test_resolving_ignores_unknown_keys_but_reports_them(tree):
    step, error = step_resolve(tree, {"phase": "running", "utm_source": "wiki"})
    assert error and "utm_source" in error
    assert step.question.id == "run-symptom"


def test_walking_the_tree_reaches_every_leaf(tree):
    reached = {tree_step(tree, state).leaf.id for state in tree_walk(tree)}
    assert reached == {leaf.id for leaf in tree.leaves()}


def test_every_complete_state_ends_at_a_leaf(tree):
    for state in tree_walk(tree):
        assert isinstance(tree_step(tree, state).leaf, Leaf), state


def test_every_complete_state_of_every_real_tree_ends_at_a_leaf(library):
    """The smoke test of the real trees: the engine walks each of them to a leaf on every path."""
    assert library.trees
    for tree_id, tree in sorted(library.trees.items()):
        for state in tree_walk(tree):
            assert isinstance(tree_step(tree, state).leaf, Leaf), (tree_id, state)
