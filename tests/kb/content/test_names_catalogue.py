"""The names catalogue (issue 32): the committed YAML is exactly what stage 2 builds from the committed harvest, and
the harvest rules read what the sources say. Pure: no database, no network, no sources needed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from kb.content.names_catalogue import CATALOGUE_DIR, PROGRAMS, HarvestRow, build, load, read_harvest, write_harvest

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "tools" / "catalogue"
HARVESTED = sorted(p.stem for p in (CATALOGUE_DIR / "harvest").glob("*.tsv"))


def _tool(name: str):
    """A harvester module from tools/catalogue (a folder of scripts, not a package)."""
    sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_program_is_harvested():
    assert set(HARVESTED) == set(PROGRAMS)


@pytest.mark.parametrize("program", HARVESTED)
def test_stage_two_rebuilds_the_committed_catalogue_byte_for_byte(program):
    committed = (CATALOGUE_DIR / f"{program}.yaml").read_text(encoding="utf-8")
    rebuilt = build(CATALOGUE_DIR / "harvest" / f"{program}.tsv", program, PROGRAMS[program][2])
    assert rebuilt == committed, f"run .venv/bin/python tools/catalogue/names_build.py {program}"


def test_torch_harvest_covers_the_releases_of_issue_32():
    releases = load()["pytorch"].releases
    wanted = ("1.13.1", "2.0.1", "2.1.2", "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1")
    assert set(wanted + ("2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")) <= set(releases)


def test_known_facts_are_in_the_catalogue():
    """Facts recorded by hand in shared/research (facts.md, audit-turn3.md) that the harvest must reproduce."""
    torch = load()["pytorch"].entries
    assert torch[("env", "TORCH_FR_BUFFER_SIZE")].first == "2.8.0"
    assert (
        torch[("env", "TORCH_NCCL_TRACE_BUFFER_SIZE")].replaced_by,
        torch[("env", "TORCH_NCCL_TRACE_BUFFER_SIZE")].deprecated_from,
    ) == (
        "TORCH_FR_BUFFER_SIZE",
        "2.8.0",
    )
    assert torch[("env", "TORCH_FR_DUMP_ON_TIMEOUT")].first == "2.15.0"
    assert torch[("env", "TORCH_NCCL_DUMP_ON_TIMEOUT")].replaced_by == "TORCH_FR_DUMP_ON_TIMEOUT"
    assert torch[("env", "NCCL_ASYNC_ERROR_HANDLING")].replaced_by == "TORCH_NCCL_ASYNC_ERROR_HANDLING"
    nccl = load()["nccl"].entries
    assert nccl[("env", "NCCL_RAS_ENABLE")].first == "2.24.3"
    assert nccl[("env", "NCCL_MULTI_RANK_GPU_ENABLE")].first == "2.30.7"


def test_build_reads_gaps_aliases_and_first_files(tmp_path):
    harvest = tmp_path / "x.tsv"
    rows = [
        HarvestRow("1.0", "env", "A", "lib/a.so"),
        HarvestRow("1.0", "env", "A", "src/a.hpp"),
        HarvestRow("3.0", "env", "A", "src/a.hpp"),
        HarvestRow("2.0", "env", "OLD", "src/a.hpp", "NEW"),
        HarvestRow("2.0", "env", "NEW", "src/a.hpp"),
        HarvestRow("3.0", "env", "OLD", "src/a.hpp", "NEW"),
    ]
    write_harvest(harvest, rows, "x")
    assert sorted(read_harvest(harvest)) == sorted(rows)
    text = build(harvest, "x", "test")
    assert "{name: A, kind: env, first: '1.0', last: '3.0', not_read_in: ['2.0'], file: src/a.hpp}" in text
    assert "deprecated: {replaced_by: NEW, from: '2.0', file: src/a.hpp}" in text
    assert build(harvest, "x", "test") == text


def test_nccl_rules_read_params_and_readers_but_not_messages():
    nccl = _tool("names_nccl")
    text = (
        'NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20);\n'
        "DEFINE_NCCL_PARAM(ncclParamDebugFile, const char*, NCCL_DEBUG_FILE, nullptr,\n"
        'const char* s = ncclGetEnv(\n  "NCCL_SOCKET_IFNAME");\n'
        'NCCLCHECK(ncclGetLevel(&level, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"));\n'
        'INFO(NCCL_ENV, "NCCL_COMM_ID set by environment to %s", env);\n'
        'WARN("User requested connection type NCCL_GIN_CONNECTION_FULL");\n'
    )
    assert nccl.reads(text) == {"NCCL_IB_TIMEOUT", "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"}


def test_torch_header_rule_reads_cvar_lists_as_current_then_deprecated():
    torch = _tool("names_torch")
    header = (
        "static std::vector<std::string> TORCH_NCCL_BLOCKING_WAIT = {\n"
        '    "TORCH_NCCL_BLOCKING_WAIT",\n    "NCCL_BLOCKING_WAIT"};\n'
        '// "TORCH_IN_A_COMMENT"\n'
    )
    rows = set(torch.header_rows("2.8.0", "x.hpp", header))
    assert HarvestRow("2.8.0", "env", "NCCL_BLOCKING_WAIT", "x.hpp", "TORCH_NCCL_BLOCKING_WAIT") in rows
    assert HarvestRow("2.8.0", "env", "TORCH_NCCL_BLOCKING_WAIT", "x.hpp", "") in rows
    assert not any(r.name == "TORCH_IN_A_COMMENT" for r in rows)


def test_torch_binary_rule_pairs_only_adjacent_literals_with_the_same_tail():
    import io

    torch = _tool("names_torch")
    data = b"\x00TORCH_FR_BUFFER_SIZE\x00TORCH_NCCL_TRACE_BUFFER_SIZE\x00TORCH_NCCL_DUMP_ON_TIMEOUT\x00TORCH_NCCL_NONBLOCKING_TIMEOUT\x00x\x00"
    names, pairs = torch.binary_literals(io.BytesIO(data), pairs=True)
    assert {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT"} <= names
    assert pairs == {("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")}


def test_torch_python_rule_reads_environment_lookups_and_launcher_flags():
    torch = _tool("names_torch")
    source = 'x = os.environ.get("TORCH_ELASTIC_X")\nmsg = "TORCH_NOT_READ"\nparser.add_argument("--nproc-per-node", "--nproc_per_node")\n'
    rows = set(torch.python_rows("2.8.0", "torch/distributed/run.py", source))
    assert {(r.kind, r.name) for r in rows} == {
        ("env", "TORCH_ELASTIC_X"),
        ("flag", "--nproc-per-node"),
        ("flag", "--nproc_per_node"),
    }
