"""Tree and script-part validation: every problem is reported with its file and line, and stops the load."""

import functools
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from kb.content.cases import case_files_read
from troubleshooter.library import trees_check

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

MINI = """\
id: mini
title: A tiny tree
summary: Used by the validation tests.
start: q1
nodes:
  q1:
    type: choice
    question: Which way?
    choices:
      - id: a
        label: This way
        next: leaf-a
      - id: b
        label: That way
        next: leaf-a
  launcher:
    type: choice
    question: How do you start the ranks?
    role: launcher
    choices:
      - {id: torchrun, label: torchrun}
      - {id: accelerate, label: accelerate}
      - {id: deepspeed, label: deepspeed}
      - {id: mpirun, label: mpirun}
      - {id: srun, label: srun}
  leaf-a:
    type: leaf
    title: A leaf
    case: rendezvous-store-timeout
    diagnosis: Something.
    fix_steps: [fix-1]
    script: [firewall-ports]
    asks: [launcher]
"""


@functools.cache
def _real_case_docs() -> tuple:
    """The cases of content/, read once: these tests break trees and parts in a copy, never its cases, and
    rendering 18 case files per test was most of each test's time."""
    docs, case_errors = case_files_read(settings.CONTENT_DIR)
    assert not case_errors
    return tuple(docs)


def _check(content: Path) -> list:
    return trees_check(content, list(_real_case_docs()))


def _write_mini(content: Path, text: str = MINI) -> Path:
    path = content / "trees" / "mini.yaml"
    path.write_text(text)
    return path


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def _messages(errors, path_end: str) -> list[tuple[int, str]]:
    return [(e.line, e.message) for e in errors if e.path.endswith(path_end)]


def test_the_real_trees_and_parts_are_valid(settings):
    docs, _ = case_files_read(settings.CONTENT_DIR)
    assert trees_check(settings.CONTENT_DIR, docs) == []


def test_a_minimal_tree_is_valid(content_copy):
    _write_mini(content_copy)
    assert _check(content_copy) == []


def test_an_unreachable_node_is_reported_at_its_line(content_copy):
    path = _write_mini(
        content_copy,
        MINI + "  orphan:\n    type: value\n    question: Lost?\n    rule: minutes\n    example: '5'\n    next: leaf-a\n",
    )
    errors = _messages(_check(content_copy), "mini.yaml")
    assert (_line_of(path, "orphan:"), "node 'orphan' is not reachable from the start") in errors


def test_a_cycle_is_reported(content_copy):
    text = MINI.replace("        next: leaf-a\n      - id: b", "        next: q2\n      - id: b") + (
        "  q2:\n    type: choice\n    question: Again?\n    choices:\n"
        "      - {id: back, label: Back, next: q1}\n      - {id: forward, label: Forward, next: leaf-a}\n"
    )
    _write_mini(content_copy, text)
    messages = [m for _, m in _messages(_check(content_copy), "mini.yaml")]
    assert any(m.startswith("cycle: ") and "q1" in m and "q2" in m for m in messages)


def test_a_choice_that_leads_nowhere_is_reported_at_its_line(content_copy):
    path = _write_mini(content_copy, MINI.replace("        label: That way\n        next: leaf-a\n", "        label: That way\n"))
    errors = _messages(_check(content_copy), "mini.yaml")
    assert any(line == _line_of(path, "id: b") and "leads nowhere" in message for line, message in errors)


def test_a_next_that_names_no_node_is_reported(content_copy):
    _write_mini(content_copy, MINI.replace("        next: leaf-a\n      - id: b", "        next: leaf-z\n      - id: b"))
    assert any("'leaf-z' does not exist" in m for _, m in _messages(_check(content_copy), "mini.yaml"))


def test_a_leaf_naming_a_missing_case_is_reported_at_its_line(content_copy):
    path = _write_mini(content_copy, MINI.replace("case: rendezvous-store-timeout", "case: no-such-case"))
    errors = _messages(_check(content_copy), "mini.yaml")
    assert (_line_of(path, "case: no-such-case"), "leaf 'leaf-a' names case 'no-such-case', which does not exist") in errors


def test_a_leaf_naming_a_fix_step_the_case_lacks_is_reported(content_copy):
    path = _write_mini(content_copy, MINI.replace("fix_steps: [fix-1]", "fix_steps: [fix-1, fix-99]"))
    errors = _messages(_check(content_copy), "mini.yaml")
    assert (_line_of(path, "fix_steps:"), "case 'rendezvous-store-timeout' has no fix step #fix-99") in errors


def test_a_leaf_naming_a_missing_script_part_is_reported(content_copy):
    _write_mini(content_copy, MINI.replace("script: [firewall-ports]", "script: [firewall-ports, no-such-part]"))
    assert any("script part 'no-such-part' does not exist" in m for _, m in _messages(_check(content_copy), "mini.yaml"))


def test_a_value_question_without_an_example_is_reported(content_copy):
    path = _write_mini(
        content_copy,
        MINI.replace("    asks: [launcher]", "    asks: [launcher, port]")
        + "  port:\n    type: value\n    question: Port?\n    rule: port\n",
    )
    errors = _messages(_check(content_copy), "mini.yaml")
    assert (_line_of(path, "  port:"), "missing required field 'example'") in errors


def test_an_example_that_fails_its_own_rule_is_reported(content_copy):
    path = _write_mini(
        content_copy,
        MINI.replace("    asks: [launcher]", "    asks: [launcher, port]")
        + "  port:\n    type: value\n    question: Port?\n    rule: port\n    example: '99999'\n",
    )
    errors = _messages(_check(content_copy), "mini.yaml")
    assert any(line == _line_of(path, "example: '99999'") and "does not pass its own rule" in m for line, m in errors)


def test_a_leaf_whose_script_reads_an_unanswered_role_is_reported(content_copy):
    _write_mini(content_copy, MINI.replace("script: [firewall-ports]", "script: [nccl-pin-iface]"))
    messages = [m for _, m in _messages(_check(content_copy), "mini.yaml")]
    assert any("needs answers for role(s) iface" in m for m in messages)


def test_a_fact_mapping_to_a_missing_choice_is_reported(content_copy):
    _write_mini(
        content_copy,
        MINI.replace(
            "    question: Which way?\n",
            "    question: Which way?\n    facts:\n      - fact: stage\n        values: {training: c}\n",
        ),
    )
    assert any("maps to 'c', which is not a choice here" in m for _, m in _messages(_check(content_copy), "mini.yaml"))


def test_a_choice_id_yaml_reads_as_a_boolean_is_reported(content_copy):
    _write_mini(content_copy, MINI.replace("      - id: b\n", "      - id: no\n"))
    assert any("put it in quotes" in m for _, m in _messages(_check(content_copy), "mini.yaml"))


def test_a_yaml_syntax_error_is_reported_at_its_line(content_copy):
    path = _write_mini(content_copy, MINI.replace("title: A tiny tree", "title: [unclosed"))
    errors = _messages(_check(content_copy), "mini.yaml")
    assert errors and errors[0][1].startswith("YAML error") and abs(errors[0][0] - _line_of(path, "title: [unclosed")) <= 1


def test_a_duplicate_key_is_reported_at_its_line(content_copy):
    path = _write_mini(
        content_copy, MINI.replace("    question: Which way?\n", "    question: Which way?\n    question: Twice?\n")
    )
    assert (_line_of(path, "question: Twice?"), "duplicate key 'question'") in _messages(_check(content_copy), "mini.yaml")


@pytest.mark.parametrize("variable", ["NCCL_TIMEOUT", "NCCL_ALGO", "NCCL_PROTO"])
def test_a_part_that_sets_a_variable_that_is_no_fix_is_refused(content_copy, variable):
    path = content_copy / "scripts" / "network.yaml"
    path.write_text(path.read_text().replace("      - name: GLOO_SOCKET_IFNAME", f"      - name: {variable}"))
    errors = _messages(_check(content_copy), "network.yaml")
    assert any(line == _line_of(path, f"name: {variable}") and "not a known, current variable" in m for line, m in errors)


def test_a_flight_recorder_variable_without_the_pytorch_condition_is_refused(content_copy):
    path = content_copy / "scripts" / "debug.yaml"
    path.write_text(
        path.read_text().replace(
            "      - only: {torch: [ge-2.5]}\n        name: TORCH_NCCL_DUMP_ON_TIMEOUT",
            "      - name: TORCH_NCCL_DUMP_ON_TIMEOUT",
        )
    )
    assert any("TORCH_NCCL_DUMP_ON_TIMEOUT exists only for torch" in m for _, m in _messages(_check(content_copy), "debug.yaml"))


def test_a_placeholder_inside_quotes_is_refused(content_copy):
    path = content_copy / "scripts" / "network.yaml"
    path.write_text(path.read_text().replace("ip -br addr show dev @iface@", 'ip -br addr show dev "@iface@"'))
    assert any("write @iface@ bare" in m for _, m in _messages(_check(content_copy), "network.yaml"))


def test_validate_content_stops_with_file_and_line(content_copy, settings, capsys):
    path = _write_mini(content_copy, MINI.replace("case: rendezvous-store-timeout", "case: no-such-case"))
    settings.CONTENT_DIR = content_copy
    with pytest.raises(CommandError):
        call_command("validate_content")
    assert (
        f"trees/mini.yaml:{_line_of(path, 'case: no-such-case')}: leaf 'leaf-a' names case 'no-such-case'"
        in capsys.readouterr().err
    )


def test_a_misspelt_key_in_a_version_range_is_reported_at_its_line(content_copy):
    """`bellow:` for `below:` was silently dropped, and the range then caught every version."""
    path = content_copy / "trees" / "hang.yaml"
    path.write_text(path.read_text().replace('          - below: "1.9"\n', '          - bellow: "1.9"\n', 1))
    docs, _ = case_files_read(content_copy)
    messages = _messages(trees_check(content_copy, docs), "hang.yaml")
    assert (_line_of(path, "bellow:"), "unknown field 'bellow' (allowed: below, answer)") in messages
