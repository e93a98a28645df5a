"""Version statements in case prose that the names catalogue can decide are checked against it (issue 32, item 3):
the rules of kb/content/prose_ranges.py on small catalogues, the real content, and the check at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.content.load import content_check
from kb.content.names_catalogue import Catalogue, CatalogueEntry
from kb.content.prose import body_units
from kb.content.prose_ranges import Wordings, prose_range_problems, verdicts
from kb.content.ranges import NameOwners
from tests.kb.case_files import case_text, line_of, write_case

ROOT = Path(__file__).resolve().parents[3]
TORCH = ("2.2.2", "2.5.1", "2.7.1", "2.8.0", "2.10.0", "2.14.1", "2.15.0")
ENTRIES = (
    CatalogueEntry("TORCH_FR_BUFFER_SIZE", "env", "2.8.0", "2.15.0", "FlightRecorder.hpp"),
    CatalogueEntry("TORCH_FR_DUMP_TEMP_FILE", "env", "2.8.0", "2.15.0", "libtorch_cpu.dylib"),
    CatalogueEntry("TORCH_FR_DUMP_ON_TIMEOUT", "env", "2.15.0", "2.15.0", "FlightRecorder.hpp"),
    CatalogueEntry(
        "TORCH_NCCL_TRACE_BUFFER_SIZE", "env", "2.2.2", "2.15.0", "ProcessGroupNCCL.hpp",
        replaced_by="TORCH_FR_BUFFER_SIZE", deprecated_from="2.8.0", deprecated_file="FlightRecorder.hpp",
    ),
    CatalogueEntry(
        "NCCL_BLOCKING_WAIT", "env", "2.2.2", "2.15.0", "ProcessGroupNCCL.hpp",
        replaced_by="TORCH_NCCL_BLOCKING_WAIT", deprecated_from="2.2.2", deprecated_file="ProcessGroupNCCL.hpp",
    ),
    CatalogueEntry("TORCH_NCCL_BLOCKING_WAIT", "env", "2.2.2", "2.15.0", "ProcessGroupNCCL.hpp"),
    CatalogueEntry("NCCL_DEBUG", "env", "2.2.2", "2.15.0", "ProcessGroupNCCL.cpp"),
)  # fmt: skip
NCCL_ENTRIES = (
    CatalogueEntry("NCCL_CONF_FILE", "env", "2.23.4", "2.30.7", "src/misc/param.cc"),
    CatalogueEntry("NCCL_DEBUG", "env", "2.18.6", "2.30.7", "src/debug.cc"),
)


def _catalogues() -> dict[str, Catalogue]:
    torch = Catalogue("torch", "pytorch", ("env", "flag"), TORCH, {(e.kind, e.name): e for e in ENTRIES})
    nccl = Catalogue("nccl", "nccl", ("env",), ("2.18.6", "2.23.4", "2.30.7"), {(e.kind, e.name): e for e in NCCL_ENTRIES})
    return {"pytorch": torch, "nccl": nccl}


# A made-up wording: the check reads the message catalogue's templates and the releases that print each.
WORDINGS = Wordings(
    releases={"nccl": ("2.18.6", "2.23.4", "2.24.3", "2.30.7")},
    templates={"nccl": [("Rendezvous: Using %s:%d", frozenset({"2.24.3", "2.30.7"}))]},
)


def _verdicts(lines: tuple[str, ...]):
    return verdicts(body_units(list(lines), 1, "case.md"), _catalogues(), NameOwners({}), WORDINGS)


def _problems(*lines: str) -> list[str]:
    return [p for v in _verdicts(lines) for p in v.problems]


def _judged(*lines: str) -> list[str]:
    return [v.unit.text[v.start : v.end] for v in _verdicts(lines)]


# The original wording of audit finding #23 (git show 95c5089:content/cases/nccl-watchdog-timeout-triage.md:568).
WRONG_23 = "- Keep Flight Recorder on (a buffer size, dump on timeout, a shared dump path; `TORCH_FR_*` names from 2.8)."
FIXED_23 = (
    "- Keep Flight Recorder on (`TORCH_FR_BUFFER_SIZE` and `TORCH_FR_DUMP_TEMP_FILE` from 2.8, `TORCH_FR_DUMP_ON_TIMEOUT`",
    "  from 2.15, the `TORCH_NCCL_*` names before).",
)


def test_a_name_said_to_be_read_from_a_release_that_does_not_read_it_fails():
    assert _problems(WRONG_23) == [
        "TORCH_FR_DUMP_ON_TIMEOUT 'from 2.8': 2.8.0 does not read it; the torch names catalogue says read in 2.15.0 "
        "(FlightRecorder.hpp)"
    ]


def test_the_fixed_wording_of_finding_23_passes_and_both_statements_are_judged():
    assert _problems(*FIXED_23) == []
    assert _judged(*FIXED_23) == ["from 2.8", "from 2.15"]


def test_a_lower_bound_fails_when_an_earlier_release_already_reads_the_name():
    [problem] = _problems("`TORCH_NCCL_BLOCKING_WAIT` (2.5+) replaces the old name.")
    assert problem.startswith("TORCH_NCCL_BLOCKING_WAIT '2.5+': 2.2.2 already reads it")


def test_an_upper_bound_may_end_where_the_catalogue_makes_the_name_a_deprecated_alias():
    assert _problems("The old `TORCH_NCCL_TRACE_BUFFER_SIZE` (2.2-2.7) is still accepted.") == []
    [problem] = _problems("The old `TORCH_NCCL_TRACE_BUFFER_SIZE` (2.2-2.5) is still accepted.")
    assert problem.startswith("TORCH_NCCL_TRACE_BUFFER_SIZE '2.2-2.5': 2.7.1, 2.8.0 … 2.15.0 (5 releases) still read it")


def test_a_bound_below_a_release_ends_at_the_harvested_release_before_it():
    assert _problems("The old `TORCH_NCCL_TRACE_BUFFER_SIZE` (< 2.8) is still accepted.") == []
    [problem] = _problems("The old `TORCH_NCCL_TRACE_BUFFER_SIZE` (< 2.5) is still accepted.")
    assert problem.startswith("TORCH_NCCL_TRACE_BUFFER_SIZE '< 2.5': 2.5.1, 2.7.1 … 2.15.0 (6 releases) still read it")


def test_a_release_that_reads_names_must_read_each_of_them():
    assert _problems("PyTorch 2.8+ reads `TORCH_FR_BUFFER_SIZE` and `TORCH_FR_DUMP_TEMP_FILE`.") == []
    [problem] = _problems("PyTorch 2.8+ reads `TORCH_FR_BUFFER_SIZE` and `TORCH_FR_DUMP_ON_TIMEOUT`.")
    assert problem.startswith("TORCH_FR_DUMP_ON_TIMEOUT '2.8+': 2.8.0, 2.10.0, 2.14.1 do not read it")


def test_a_deprecation_release_is_checked_against_the_alias_the_catalogue_lists():
    assert _problems("`NCCL_BLOCKING_WAIT` is deprecated since PyTorch 2.2 in favour of `TORCH_NCCL_BLOCKING_WAIT`.") == []
    [problem] = _problems("`NCCL_BLOCKING_WAIT` is deprecated since PyTorch 2.5 in favour of `TORCH_NCCL_BLOCKING_WAIT`.")
    assert "NCCL_BLOCKING_WAIT is listed as a deprecated alias of TORCH_NCCL_BLOCKING_WAIT from 2.2.2" in problem


def test_the_program_named_in_the_statement_chooses_the_catalogue():
    assert _problems("`NCCL_CONF_FILE` from NCCL 2.23 names a file.") == []
    [problem] = _problems("`NCCL_CONF_FILE` from NCCL 2.18 names a file.")
    assert "the nccl names catalogue says read in 2.23.4–2.30.7" in problem


def test_what_is_not_plain_is_not_judged():
    assert _judged("`NCCL_DEBUG` from 2.8 prints more.") == []  # two catalogues read it and none is named
    assert _judged("`NCCL_CONF_FILE` (default unset from NCCL 2.23) names a file.") == []  # about a default
    assert _judged("`TORCH_FR_BUFFER_SIZE` from 1.10 on.") == []  # before the first harvested release
    assert _judged("CUDA 12.1 reads `TORCH_FR_BUFFER_SIZE`.") == []  # another program's release
    assert _judged("`TORCH_FR_BUFFER_SIZE` 2.2-2.7 in a list.") == []  # a bare range with no parenthesis


def test_a_catalogued_wording_next_to_a_release_is_checked_against_the_message_catalogue():
    assert _problems("NCCL prints `Rendezvous: Using` (2.24+) at init.") == []
    assert _problems("NCCL prints `Rendezvous: Using` (2.23+) at init.") == [
        "`Rendezvous: Using` '2.23+': 2.23.4 does not print it; the nccl message catalogue says printed by 2.24.3–2.30.7"
    ]


def test_a_patch_release_other_than_the_harvested_one_is_not_judged():
    assert _judged("`TORCH_FR_BUFFER_SIZE` from 2.8.1 on.", "NCCL prints `Rendezvous: Using` from 2.24.1.") == []
    assert _judged("`TORCH_FR_BUFFER_SIZE` from 2.8.0 on.") == ["from 2.8.0"]


def test_a_wording_of_another_program_than_the_sentence_names_is_not_judged():
    assert _judged("PyTorch prints `Rendezvous: Using` (2.24+) too.") == []


def test_content_prose_agrees_with_the_names_catalogue():
    problems = prose_range_problems(ROOT / "content")
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.slow  # reads the whole message catalogue, as tests/kb/content/test_message_ranges.py does
def test_content_prose_agrees_with_the_message_catalogue():
    from diagnosis.catalogue import Catalogue

    messages = Catalogue.load(ROOT / "content" / "catalogue" / "messages", cache_dir=ROOT / "var" / "cache")
    problems = prose_range_problems(ROOT / "content", Wordings.from_messages(messages))
    assert not problems, "\n".join(map(str, problems))


def test_a_wrong_prose_statement_fails_the_content_check_with_its_file_and_line(tmp_path):
    content = tmp_path / "content"
    text = case_text("test-case").replace("Barriers are collectives.", "Barriers are collectives.\n\n" + WRONG_23)
    write_case(content, "test-case", text)
    (content / "catalogue" / "names").mkdir(parents=True)
    rows = "".join(f"- {{name: {e.name}, kind: env, first: {e.first}, last: {e.last}, file: {e.file}}}\n" for e in ENTRIES[:3])
    (content / "catalogue" / "names" / "torch.yaml").write_text(
        f"program: torch\nreleases: [{', '.join(TORCH)}]\nnames:\n{rows}", encoding="utf-8"
    )
    _, _, errors = content_check(content)
    assert [str(e) for e in errors] == [
        f"content/cases/test-case.md:{line_of(text, 'TORCH_FR_*')}: prose: TORCH_FR_DUMP_ON_TIMEOUT 'from 2.8': 2.8.0 "
        "does not read it; the torch names catalogue says read in 2.15.0 (FlightRecorder.hpp)"
    ]
