"""Release ranges of printed wordings are checked by machine (issue 32): a signature's or a known-harmless entry's
`versions` must agree with the releases the message catalogue says print what its pattern finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnosis.catalogue import Catalogue, Entry
from kb.content.message_ranges import message_range_problems

pytestmark = pytest.mark.slow  # reads the whole catalogue: make test runs it, make check does not

ROOT = Path(__file__).resolve().parents[3]


def test_content_ranges_agree_with_the_message_catalogue():
    catalogue = Catalogue.load(ROOT / "content" / "catalogue" / "messages", cache_dir=ROOT / "var" / "cache")
    problems = message_range_problems(ROOT / "content", catalogue)
    assert not problems, "\n".join(str(p) for p in problems)


def _catalogue(first: str = "2.4.8") -> Catalogue:
    """NCCL's "Connect to %s failed" as printed from `first` to 2.9.9, among four harvested releases."""
    entry = Entry(
        id=f"made_up.connect_failed_from_{first.replace('.', '_')}.v1",  # not a real id: the catalogue keeps per-id caches
        program="nccl",
        template="Connect to %s failed : %s",
        style="printf",
        severity="WARN",
        meaning="socket.connect_failed",
        first=first,
        last="2.9.9",
        file="src/include/socket.h",
        fields=(("address", "address"), ("error", "str")),
    )
    return Catalogue([entry], {"nccl": ["2.3.7", "2.4.8", "2.9.9", "2.10.3"]}, use_hyperscan=False)


def _case(tmp_path: Path, versions: str) -> Path:
    content = tmp_path / "content"
    (content / "cases").mkdir(parents=True)
    (content / "harmless").mkdir()
    (content / "cases" / "c.md").write_text(
        "---\nsignatures:\n  - id: connect-failed\n    pattern: 'Connect to \\S+ failed : '\n"
        f'    versions: {{nccl: "{versions}"}}\n---\nbody\n',
        encoding="utf-8",
    )
    return content


def test_a_range_that_agrees_passes(tmp_path):
    assert message_range_problems(_case(tmp_path, ">=2.4,<2.10"), _catalogue()) == []


def test_a_range_that_leaves_out_a_release_printing_the_wording_fails_at_its_line(tmp_path):
    [problem] = message_range_problems(_case(tmp_path, ">=2.5,<2.10"), _catalogue())
    assert (problem.file, problem.line) == ("content/cases/c.md", 5)
    assert "excludes 2.4.8, which prints it" in problem.message


def test_a_range_that_takes_in_a_release_not_printing_the_wording_fails(tmp_path):
    [problem] = message_range_problems(_case(tmp_path, ">=2.4"), _catalogue())
    assert "includes 2.10.3, which does not print it" in problem.message


def test_a_lower_bound_at_the_first_harvested_release_cannot_be_confirmed_and_fails(tmp_path):
    [problem] = message_range_problems(_case(tmp_path, ">=2.3,<2.10"), _catalogue(first="2.3.7"))
    assert "the first release the catalogue harvested (2.3.7) already prints" in problem.message
    assert problem.line == 5


def test_the_same_lower_bound_with_its_source_cited_passes(tmp_path):
    content = _case(tmp_path, ">=2.3,<2.10")
    case = content / "cases" / "c.md"
    case.write_text(
        case.read_text().replace(
            "    versions:", '    source: {read: "NVIDIA/nccl v2.3.5-5 socket.h", checked: 2026-11-28}\n    versions:'
        )
    )
    assert message_range_problems(content, _catalogue(first="2.3.7")) == []


def test_a_range_without_a_lower_bound_is_not_asked_for_one(tmp_path):
    assert message_range_problems(_case(tmp_path, "<2.10"), _catalogue(first="2.3.7")) == []
