"""What a wizard step shows, on a fixture tree: the hand-off from a log, Change, stable links, help, the script summary."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import html5lib
import pytest
from django.template.loader import render_to_string

from troubleshooter.engine import tree_step
from troubleshooter.parts import Check, Part, Setting
from troubleshooter.presentation import script_summary_html, step_view_model, value_help
from troubleshooter.rules import RULES
from troubleshooter.scripts import ScriptSource, script_render, script_summary
from troubleshooter.state import State, state_from_facts, state_resolve

LOG_FACTS = {"stage": "running", "op_type": ["ALLREDUCE"], "launcher": "mpirun", "timeout_ms": 600000}


def view(tree, state: State, raw: dict[str, str] | None = None) -> dict:
    step, canonical, error = state_resolve(tree, state)
    return step_view_model(tree, step, canonical, raw or dict(state.answers), error, absolute=lambda path: path)


def page(context: dict) -> html5lib.etree:
    return html5lib.parse(render_to_string("troubleshooter/_step.html", context), namespaceHTMLElements=False)


def query(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query)


def test_the_hand_off_lands_on_the_first_question_the_log_left_open(relay):
    state = state_from_facts(relay, LOG_FACTS)
    context = view(relay, state)
    assert context["question"].id == "wait", "phase, run-symptom and launcher came from the log"


def test_pre_answered_questions_are_listed_and_marked_from_your_log(relay):
    context = view(relay, state_from_facts(relay, LOG_FACTS))
    listed = {item["question"]: item for item in context["path"]}
    assert set(listed) == {"When does the relay stop?", "What happens while running?", "What starts the ranks?"}
    assert all(item["from_log"] and item["change_url"] for item in listed.values())
    items = page(context).findall(".//ol[@class='answer-list']/li")
    assert ["from your log" in "".join(li.itertext()) for li in items] == [True, True, True]


def test_an_answer_the_user_gave_is_not_marked_from_your_log(relay):
    context = view(relay, State({"phase": "running", "run-symptom": "gone"}, frozenset({"phase"})))
    assert [(item["question"], item["from_log"]) for item in context["path"]] == [
        ("When does the relay stop?", True),
        ("What happens while running?", False),
    ]


def test_the_stage_fact_answers_the_first_question_through_the_tree_mapping(relay):
    assert state_from_facts(relay, {"stage": "warming up"}).answers == {"phase": "warmup"}


def test_a_stage_the_tree_does_not_map_leaves_the_first_question_open_and_lists_the_rest(relay):
    context = view(relay, state_from_facts(relay, {**LOG_FACTS, "stage": "compiling"}))
    assert context["question"].id == "phase"
    assert [(item["question"], item["ahead"]) for item in context["path"]] == [
        ("What happens while running?", True),
        ("What starts the ranks?", True),
    ]


def test_change_preselects_the_current_choice(relay):
    context = view(relay, State({"phase": "running", "run-symptom": "gone"}, change="run-symptom"))
    assert context["question"].id == "run-symptom"
    radios = [el for el in page(context).iter("input") if el.get("type") == "radio"]
    assert [(r.get("value"), r.get("checked") is not None) for r in radios] == [("slow", False), ("gone", True)]


def test_change_fills_in_the_current_value(relay):
    state = State({"phase": "warmup", "warm-symptom": "stall", "launcher": "torchrun", "wait": "90"}, change="wait")
    field = next(el for el in page(view(relay, state)).iter("input") if el.get("name") == "wait")
    assert field.get("value") == "90"


def test_the_form_that_changes_an_answer_keeps_the_others_and_drops_its_log_mark(relay):
    state = State({"phase": "running", "run-symptom": "slow"}, frozenset({"phase", "run-symptom"}), change="phase")
    hidden = [(el.get("name"), el.get("value")) for el in page(view(relay, state)).iter("input") if el.get("type") == "hidden"]
    assert hidden == [("_log", "run-symptom"), ("run-symptom", "slow")]


def test_answers_off_the_path_are_dropped_from_every_link_the_step_emits(relay):
    stale = State({"phase": "running", "run-symptom": "slow", "warm-symptom": "stall"}, frozenset({"warm-symptom"}))
    tree = page(view(relay, stale))
    pairs = [pair for a in tree.iter("a") for pair in query(a.get("href") or "")]
    pairs += [(el.get("name"), el.get("value")) for el in tree.iter("input") if el.get("type") == "hidden"]
    assert ("phase", "running") in pairs, "the links do carry the answers on the path"
    assert not [pair for pair in pairs if "warm-symptom" in pair]


def test_a_value_question_has_one_help_text(relay):
    context = view(relay, State({"phase": "running", "run-symptom": "slow", "launcher": "torchrun"}))
    section = next(el for el in page(context).iter("section") if el.get("class") == "question")
    helps = [el for el in section.iter() if "help" in (el.get("class") or "").split()]
    assert len(helps) == 1
    text = "".join(helps[0].itertext())
    assert text.count("slowest step") == 1 and text.count("45") == 1


def test_value_help_names_the_example_only_when_the_rule_does_not(relay):
    question = relay.question("wait")
    assert value_help(question, RULES["minutes"]).endswith("For example: `45`.")
    interface = question.__class__(id="iface", kind="value", text="Which interface?", rule="interface", example="eth0")
    assert "For example" not in value_help(interface, RULES["interface"]), "the interface rule already cites eth0"


PARTS = {
    "relay-timeout": Part(
        id="relay-timeout",
        title="Longer timeouts, and what the network looks like",
        checks=(
            Check(tool="ss", title="Open sockets", run="ss -tan"),
            Check(tool="ip", title="Addresses", run="ip -br addr"),
            Check(tool="ss", title="Listening sockets", run="ss -ltn"),
        ),
        env=(
            Setting(name="NCCL_DEBUG", value="INFO", why="say which transport NCCL picks"),
            Setting(name="TORCH_DISTRIBUTED_DEBUG", value="DETAIL", why="log each collective"),
        ),
    )
}


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_the_script_summary_names_the_variables_the_script_exports(relay, launcher):
    step = tree_step(relay, {"phase": "running", "run-symptom": "slow", "launcher": launcher, "wait": "45"})
    script = script_render(step, PARTS, ScriptSource("https://kb/case/", (), "https://kb/wizard/", "test"))
    exported = list(dict.fromkeys(re.findall(r"^\s*export ([A-Z_]+)=", script, re.M)))
    summary = script_summary(step, PARTS)
    assert list(summary.exports) == exported == ["NCCL_DEBUG", "TORCH_DISTRIBUTED_DEBUG"]
    sentence = script_summary_html(summary, "CMD", mpirun=launcher == "mpirun")
    assert "exports <code>NCCL_DEBUG</code> and <code>TORCH_DISTRIBUTED_DEBUG</code>" in sentence
    assert "runs 3 read-only checks with <code>ss</code> and <code>ip</code>" in sentence
    assert ("<code>-x</code>" in sentence) == (launcher == "mpirun")
