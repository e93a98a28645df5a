"""Currency check: every environment variable, flag, MCA parameter and command the content names is in the
committed allow-list content/names.yaml, with its source and version range (issue 11, item 5).

Pure: no database. A failure lists file:line for every offending use."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kb.content.names import KINDS, Occurrence, content_names, markdown_names, unknown_names, yaml_names

CONTENT = Path(__file__).resolve().parents[3] / "content"
NAMES_FILE = CONTENT / "names.yaml"
REQUIRED = ("name", "kind", "software", "versions", "source")


def _entries() -> list[dict]:
    return yaml.safe_load(NAMES_FILE.read_text(encoding="utf-8"))["names"]


def _allowed(existing: bool) -> set[tuple[str, str]]:
    return {(e["name"], e["kind"]) for e in _entries() if e.get("exists", True) is existing}


def _report(bad: list[Occurrence], why: str) -> str:
    lines = [f"{o.where()}: {o.kind} {o.name}" for o in bad]
    return f"{len(bad)} {why} (add a verified entry to content/names.yaml or fix the content):\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def occurrences() -> list[Occurrence]:
    return content_names(CONTENT)


# names.yaml's own schema


def test_names_file_entries_have_every_field():
    bad = [
        e.get("name", repr(e)) for e in _entries() if any(e.get(k) in (None, "", []) for k in REQUIRED) or e["kind"] not in KINDS
    ]
    assert not bad, f"entries missing one of {REQUIRED} or with an unknown kind: {bad}"


def test_names_file_has_no_duplicates():
    counts = Counter((e["name"], e["kind"]) for e in _entries())
    assert not [k for k, n in counts.items() if n > 1]


def test_deprecated_names_name_their_replacement():
    names = {e["name"] for e in _entries()}
    bad = [e["name"] for e in _entries() if e.get("deprecated") and e.get("replaced_by") not in names]
    assert not bad, f"deprecated entries whose replaced_by is missing or not itself listed: {bad}"


def test_names_file_entries_have_the_shape_of_their_kind():
    shapes = {
        "env": r"[A-Z][A-Z0-9_]*[A-Z0-9]",
        "symbol": r"[A-Z][A-Z0-9_]*[A-Z0-9]",
        "mca": r"[a-z][a-z0-9_]*",
        "flag": r"--[a-z][a-z0-9_-]*",
        "command": r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    }
    bad = [e["name"] for e in _entries() if not re.fullmatch(shapes[e["kind"]], e["name"])]
    assert not bad


# content against the allow-list


def test_content_names_only_listed_names(occurrences):
    allowed = _allowed(True) | _allowed(False)
    bad = unknown_names(occurrences, allowed)
    assert not bad, _report(bad, "names not in content/names.yaml")


def test_names_that_do_not_exist_are_only_named_as_corrections(occurrences):
    missing = {name for name, _ in _allowed(False)}
    bad = []
    for o in occurrences:
        if o.name not in missing:
            continue
        if o.file.endswith(".md"):
            if o.section != "corrections":
                bad.append(o)
            continue
        line = (CONTENT.parent / o.file).read_text(encoding="utf-8").splitlines()[o.line - 1]
        if re.search(rf"(?:name:\s*{o.name}\b|\b{o.name}=|export\s+{o.name}\b)", line):
            bad.append(o)
    assert not bad, _report(bad, "uses of names that do not exist outside a #corrections section")


def test_every_content_kind_is_scanned(occurrences):
    files = {o.file.split("/")[1] for o in occurrences}
    assert {"cases", "harmless", "scripts", "trees"} <= files


# the extractor


PROSE = """## Root causes {#root-cause}

When the ranks reach the first ALLREDUCE at different times, the watchdog on rank 3 reports an
_ALLGATHER_BASE or BROADCAST after the TIMEOUT. NCCL WARN lines, the RANK column in the table, an
OOM kill, CUDA and TORCH in upper case, and placeholders like `NCCL_...`, `TORCH_FR_*` or `NCCL_IB_*`
are not names. Set the timeout in code -- not in the environment.
"""


def test_extractor_does_not_flag_plain_prose():
    found = markdown_names(PROSE, "prose.md")
    assert [o for o in found if o.name != "RANK"] == []


def test_extractor_flags_a_made_up_variable():
    found = markdown_names("Set `NCCL_MADE_UP_VAR=1` before the launch.\n", "case.md")
    assert ("NCCL_MADE_UP_VAR", "env", 1) in {(o.name, o.kind, o.line) for o in found}
    assert unknown_names(found, _allowed(True)) == found


def test_extractor_reads_flags_mca_and_commands_from_a_bash_block():
    text = "x\n```bash\nsudo NCCL_DEBUG=INFO mpirun -mca btl_tcp_if_include eth0 \\\n  --tp-comm-overlap | tee log\n```\n"
    found = {(o.name, o.kind, o.line) for o in markdown_names(text, "c.md")}
    assert {
        ("mpirun", "command", 3),
        ("tee", "command", 4),
        ("btl_tcp_if_include", "mca", 3),
        ("--tp-comm-overlap", "flag", 4),
        ("NCCL_DEBUG", "env", 3),
    } <= found
    assert not any(kind == "command" and line == 4 and name == "--tp-comm-overlap" for name, kind, line in found)


def test_extractor_skips_here_documents_and_python_inside_bash():
    text = "```bash\npython - <<'EOF'\nimport torch\nprint(torch.__version__)\nEOF\nls /dev/shm\n```\n"
    commands = [o.name for o in markdown_names(text, "c.md") if o.kind == "command"]
    assert commands == ["python", "ls"]


def test_extractor_reads_run_lines_of_script_parts():
    text = "parts:\n  p:\n    checks:\n      - run: |\n          ncclras --help || say none\n      - run: ibv_devinfo -v\n"
    found = {(o.name, o.kind, o.line) for o in yaml_names(text, "s.yaml", script=True)}
    assert {("ncclras", "command", 5), ("say", "command", 5), ("ibv_devinfo", "command", 6), ("--help", "flag", 5)} <= found


def test_extractor_is_linear_on_a_long_hostile_line():
    line = "NCCL_" * 20000 + "-" * 20000 + "`" + "--a" * 20000
    found = markdown_names(line, "x.md") + yaml_names(line, "x.yaml", script=True)
    assert all(o.line == 1 for o in found)


def test_a_parameter_default_with_spaces_starts_no_command():
    from kb.content.names import command_names

    assert command_names("ranks=${ranks:-(no RANK set)}") == [] and command_names("x=${a:-b} ls -la") == ["ls"]


def test_an_arithmetic_expansion_starts_no_command():
    from kb.content.names import command_names

    assert command_names("hidden=$((hidden + 1))") == [] and command_names("n=$((n * 2)); ls -la") == ["ls"]
    assert command_names("rank=$(tr x y)") == ["tr"]
