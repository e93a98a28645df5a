"""The step engine: state in, question or leaf out; pure, so no database and no HTTP here."""

import pytest

from troubleshooter.engine import StateError, step_resolve, tree_step
from troubleshooter.tree_model import tree_walk
from troubleshooter.tree_model import Leaf

IFNAME_PATH = {"when": "init", "init-log": "iface", "launcher": "mpirun", "iface": "eth0", "container": "docker"}


@pytest.fixture(scope="module")
def tree(library):
    return library.trees["hang"]


def test_an_empty_state_asks_the_start_question(tree):
    step = tree_step(tree, {})
    assert step.question.id == tree.start
    assert step.path == ()


def test_answers_lead_to_the_next_question(tree):
    step = tree_step(tree, {"when": "init"})
    assert step.question.id == "init-log"
    assert [a.question.id for a in step.path] == ["when"]


def test_a_complete_state_reaches_its_leaf_after_the_asked_questions(tree):
    step = tree_step(tree, IFNAME_PATH)
    assert step.leaf.id == "leaf-ifname"
    assert [a.question.id for a in step.path] == ["when", "init-log", "launcher", "iface", "container"]
    assert step.roles == {"launcher": "mpirun", "iface": "eth0", "container": "docker"}


def test_a_leaf_asks_its_missing_questions_in_order(tree):
    step = tree_step(tree, {"when": "init", "init-log": "iface"})
    assert step.question.id == "launcher"
    step = tree_step(tree, {"when": "init", "init-log": "iface", "launcher": "torchrun"})
    assert step.question.id == "iface"


def test_the_order_of_the_answers_does_not_matter(tree):
    shuffled = dict(reversed(list(IFNAME_PATH.items())))
    assert tree_step(tree, shuffled).leaf == tree_step(tree, IFNAME_PATH).leaf


def test_revisiting_an_earlier_question_keeps_the_later_answers(tree):
    without_launcher = {k: v for k, v in IFNAME_PATH.items() if k != "launcher"}
    step = tree_step(tree, without_launcher)
    assert step.question.id == "launcher"
    assert step.answers["iface"] == "eth0" and step.answers["container"] == "docker"
    changed = tree_step(tree, {**without_launcher, "launcher": "torchrun"})
    assert changed.leaf.id == "leaf-ifname"
    assert changed.roles["launcher"] == "torchrun"


def test_answers_off_the_current_path_are_kept_but_not_used(tree):
    step = tree_step(tree, {**IFNAME_PATH, "minutes": "30"})
    assert step.answers["minutes"] == "30"
    assert "minutes" not in [a.question.id for a in step.path]


def test_an_answer_the_log_already_gave_is_not_asked_again(tree):
    step = tree_step(tree, {"launcher": "srun", "when": "init", "init-log": "iface"})
    assert step.question.id == "iface"


def test_an_unknown_question_is_a_state_error(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {"nosuch": "1"})
    assert err.value.node is None
    assert "nosuch" in str(err.value)


def test_a_leaf_id_is_not_an_answerable_key(tree):
    with pytest.raises(StateError, match="diagnosis, not a question"):
        tree_step(tree, {"leaf-ifname": "x"})


def test_a_choice_that_does_not_exist_is_a_state_error_naming_its_question(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {"when": "yesterday"})
    assert err.value.node == "when"


def test_a_free_value_that_fails_its_rule_is_a_state_error(tree):
    with pytest.raises(StateError) as err:
        tree_step(tree, {**IFNAME_PATH, "iface": "eth0; rm -rf ~"})
    assert err.value.node == "iface"
    assert "interface" in str(err.value)


@pytest.mark.parametrize("raw, canonical", [("060", "60"), (" 45 ", "45")])
def test_integer_answers_are_canonical_so_equal_states_are_equal(tree, raw, canonical):
    assert tree_step(tree, {"minutes": raw}).answers["minutes"] == canonical


@pytest.mark.parametrize("value", ["0", "1441", "-5", "1e3", "sixty", ""])
def test_minutes_outside_the_rule_are_refused(tree, value):
    with pytest.raises(StateError):
        tree_step(tree, {"minutes": value})


def test_resolving_a_bad_state_drops_the_bad_answer_and_keeps_the_rest(tree):
    step, error = step_resolve(tree, {**IFNAME_PATH, "iface": "$(id)"})
    assert error and "interface" in error
    assert step.question.id == "iface"
    assert step.answers["container"] == "docker"


def test_resolving_ignores_unknown_keys_but_reports_them(tree):
    step, error = step_resolve(tree, {"when": "init", "utm_source": "wiki"})
    assert error and "utm_source" in error
    assert step.question.id == "init-log"


def test_walking_the_tree_reaches_every_leaf(tree):
    reached = {tree_step(tree, state).leaf.id for state in tree_walk(tree)}
    assert reached == {leaf.id for leaf in tree.leaves()}


def test_every_complete_state_ends_at_a_leaf(tree):
    for state in tree_walk(tree):
        assert isinstance(tree_step(tree, state).leaf, Leaf), state
