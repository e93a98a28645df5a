"""The periodic dumps of PyTorch's debug server (diagnosis/readers/debug_dumps.py): each rank's section gives its stack
that rank, the fr_trace tables give the facts and rank groups a binary Flight Recorder dump gives, and anything
else reads as before. The dumps under tests/fixtures/debug_server/ were written by torch 2.15.0 and 2.13.0 on CPU
(Gloo, 4 ranks); see tests/fixtures/generators/README.md, "Debug server dumps". No PyTorch needed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.conf import settings
from hypothesis import given, strategies as st

from tools.corpus import content_rules
from diagnosis.readers.debug_dumps import LITERALS, debug_dump_rounds, debug_dumps_read
from diagnosis.engine import job_diagnose, log_diagnose
from diagnosis.reading import source_read
from diagnosis.rules import rules_compile
from diagnosis.scan.scanner import TextScanner
from diagnosis.readers.stacks import HEADER_LITERALS, stacks_extract
from diagnosis.text import LineLocator
from diagnosis.job_files import job_read

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DUMPS = FIXTURES / "debug_server"
NO_RULES = rules_compile([])


def newest(scenario: str, kind: str, release: str = "torch2150") -> Path:
    """The last round of one kind of dump (the frontend names each `<kind>_<YYYYmmdd_HHMMSS>.txt`)."""
    return sorted((DUMPS / release / scenario).glob(f"{kind}_2*.txt"))[-1]


def binary_dumps(scenario: str) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted((FIXTURES / "flight_recorder" / scenario).glob("rank_[0-9]"))]


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def ranked(path: Path) -> dict[int, list[str]]:
    """rank -> innermost frames of each stack read from one dump file."""
    reading = source_read(path.read_bytes(), NO_RULES, label=None)
    return {stack.rank: stack.frames for stack in reading.stacks}


@pytest.mark.parametrize("release", ["torch2150", "torch2130"])
def test_each_rank_section_gives_its_main_thread_that_rank(release):
    stacks = ranked(newest("missing_rank", "stacks", release))
    assert sorted(stacks) == [0, 1, 2, 3]
    assert stacks[2][0].endswith("debug_server.py:load_next_batch")
    assert all(stacks[r][0] == "torch/distributed/distributed_c10d.py:all_reduce" for r in (0, 1, 3))


def test_helper_threads_of_a_rank_are_not_placed_as_the_rank():
    reading = source_read(newest("missing_rank", "stacks").read_bytes(), NO_RULES, label=None)
    assert len(reading.stacks) == 4


def test_a_rank_in_a_different_place_is_grouped_apart_and_flagged_odd():
    diagnosis = log_diagnose([("stacks.txt", newest("missing_rank", "stacks").read_bytes())], NO_RULES)
    groups = diagnosis.rank_groups["groups"]
    assert [(g["ranks"], g["odd"]) for g in groups] == [([0, 1, 3], False), ([2], True)]
    assert groups[1]["where"].endswith("debug_server.py:load_next_batch")


def test_py_spy_sections_give_their_stacks_the_rank():
    diagnosis = log_diagnose([("pyspy_dump.txt", newest("missing_rank_pyspy", "pyspy_dump").read_bytes())], NO_RULES)
    assert [(g["ranks"], g["where"]) for g in diagnosis.stack_groups] == [
        ([0, 1, 3], "torch/distributed/distributed_c10d.py:all_reduce"),
        ([2], "debug_server.py:load_next_batch"),
    ]


def test_the_world_size_is_read_from_the_sections():
    reading = source_read(newest("missing_rank", "c10d_health_check").read_bytes(), NO_RULES, label=None)
    assert reading.facts["world_size"] == 4 and reading.stacks == []


def test_fr_trace_missing_rank_gives_the_facts_and_groups_of_the_binary_dumps(rules):
    from_text = log_diagnose([("fr_trace.txt", newest("missing_rank", "fr_trace").read_bytes())], rules)
    from_dumps = log_diagnose(binary_dumps("missing_rank"), rules)
    assert from_text.facts["fr_missing_ranks"] == from_dumps.facts["fr_missing_ranks"] == [2]
    assert from_text.rank_groups["summary"] == from_dumps.rank_groups["summary"]
    assert [m.slug for m in from_text.matches] == [m.slug for m in from_dumps.matches]


def test_fr_trace_mismatched_op_picks_the_case_the_binary_dumps_pick(rules):
    from_text = log_diagnose([("fr_trace.txt", newest("mismatched_op", "fr_trace").read_bytes())], rules)
    from_dumps = log_diagnose(binary_dumps("mismatched_op"), rules)
    assert from_text.facts["fr_mismatch"] is True and "fr_missing_ranks" not in from_text.facts
    assert from_text.confident[0].slug == from_dumps.confident[0].slug == "collective-mismatch-desync"
    assert from_text.rank_groups["summary"] == from_dumps.rank_groups["summary"]


def test_a_rank_that_did_not_answer_the_debug_server_is_named_and_placed():
    diagnosis = log_diagnose([("stacks.txt", newest("gil_held", "stacks").read_bytes())], NO_RULES)
    assert diagnosis.facts["debug_unanswered_ranks"] == [2] and diagnosis.facts["world_size"] == 4
    odd = [g for g in diagnosis.rank_groups["groups"] if g["odd"]]
    assert [(g["ranks"], g["text"]) for g in odd] == [([2], "rank 2 no answer to the debug server")]


def test_a_handler_missing_on_every_worker_is_not_silence():
    data = newest("missing_rank", "torchcomms_health_check").read_bytes()
    reading = source_read(data, NO_RULES, label=None)
    assert data.count(b"Error: 404") == 4 and "debug_unanswered_ranks" not in reading.facts


def test_the_fr_trace_places_a_silent_rank_before_its_silence():
    sources = [(p.name, p.read_bytes()) for p in (newest("gil_held", "stacks"), newest("gil_held", "fr_trace"))]
    groups = log_diagnose(sources, NO_RULES).rank_groups["groups"]
    assert [g["state"] for g in groups if g["ranks"] == [2]] == ["missing"]


def test_a_folder_of_rounds_is_read_at_its_newest_round():
    job = job_read(DUMPS / "torch2150" / "missing_rank")
    kinds = sorted(f.name.rsplit("_", 2)[0] for f in job.files)
    assert kinds == ["c10d_health_check", "fr_trace", "stacks", "torchcomms_health_check"]
    assert newest("missing_rank", "stacks").name in {f.name for f in job.files}
    assert any("older round" in note for note in job.notes)


def test_a_folder_of_dumps_places_every_rank():
    job = job_read(DUMPS / "torch2150" / "missing_rank")
    diagnosis = log_diagnose(job.sources(), NO_RULES, ranks=job.ranks())
    assert diagnosis.facts["fr_missing_ranks"] == [2]
    assert [(g["ranks"], g["odd"]) for g in diagnosis.rank_groups["groups"]] == [([0, 1, 3], False), ([2], True)]


def test_a_file_named_like_a_round_but_not_a_dump_is_not_superseded():
    names = ["run/stacks_20261125_153652.txt", "run/stacks_20261125_153711.txt"]
    assert debug_dump_rounds(names, {n: b"step 10 loss 2.3\n" for n in names}) == {}


def test_dumps_pasted_into_a_log_keep_their_ranks_and_end_where_the_log_resumes():
    dump = newest("missing_rank", "stacks").read_text()
    later = (
        "[rank5]:Traceback (most recent call last):\n"
        '[rank5]:  File "/home/user/work/train/train.py", line 9, in <module>\n'
        "[rank5]:KeyboardInterrupt\n"
    )
    text = "step 99 loss 2.1\n" + dump + "\n" + newest("missing_rank", "fr_trace").read_text() + "\n" + later
    reading = source_read(text, NO_RULES, label=None)
    assert sorted(s.rank for s in reading.stacks) == [0, 1, 2, 3, 5]
    assert reading.facts["fr_missing_ranks"] == [2]


def test_a_log_without_dumps_is_unaffected():
    text = (FIXTURES / "logs" / "generated" / "hang-faulthandler-then-ctrlc-torch2150.log").read_text()
    scanner = TextScanner(text, [(lit, False) for lit in HEADER_LITERALS + LITERALS])
    stacks = stacks_extract(scanner, LineLocator(text))
    reading = debug_dumps_read(scanner, stacks)
    assert reading.stacks is stacks and reading.facts == {} and reading.groups == []


def test_a_truncated_dump_is_read_as_far_as_it_goes():
    data = newest("missing_rank", "stacks").read_bytes()
    cut = data.index(b"=== Rank 2:")  # ranks 0 and 1 whole, then half of rank 2's header line
    reading = source_read(data[: cut + 12], NO_RULES, label=None)
    assert sorted(s.rank for s in reading.stacks) == [0, 1]


def test_a_truncated_fr_trace_is_read_as_far_as_it_goes():
    data = newest("missing_rank", "fr_trace").read_bytes()
    cut = data.index(b"--- NCCL Calls ---")
    reading = source_read(data[: cut - 40], NO_RULES, label=None)  # the last Collectives row cut short
    assert reading.facts["fr_pg_count"] == 1 and "fr_missing_ranks" not in reading.facts


_REAL = [newest("missing_rank", "stacks"), newest("gil_held", "stacks"), newest("mismatched_op", "fr_trace")]


@given(
    st.sampled_from(_REAL),
    st.integers(0, 4000),
    st.integers(0, 4000),
    st.sampled_from(["", "\n", "  ", "=== Rank 9: x ===\n", "--- Collectives ---\n", "Error: 408\n", "\x00", "{3: Collective("]),
)
def test_a_garbled_dump_never_raises(path, cut, at, insert):
    data = path.read_text()[:cut]
    text = data[:at] + insert + data[at:]
    reading = source_read(text, NO_RULES, label=None)
    assert all(s.rank is None or 0 <= s.rank for s in reading.stacks)


@pytest.mark.parametrize("path", _REAL + [newest("missing_rank", "fr_trace")], ids=lambda p: p.parent.name + "/" + p.name)
def test_a_dump_read_in_small_windows_gives_what_a_whole_read_gives(path):
    """An FR header's tables are read from its window's look-ahead (256 KB in production), so it is larger here
    than these tables; the stacks files span several windows."""
    data = path.read_bytes()
    whole = source_read(data, NO_RULES, label=None, repair=False, window_bytes=len(data) + 1)
    windowed = source_read(io.BytesIO(data), NO_RULES, label=None, repair=False, window_bytes=1024, lookahead_bytes=8192)
    assert windowed.facts == whole.facts
    assert [(s.rank, s.frames) for s in windowed.stacks] == [(s.rank, s.frames) for s in whole.stacks]
    assert job_diagnose([windowed], NO_RULES).rank_groups == job_diagnose([whole], NO_RULES).rank_groups
