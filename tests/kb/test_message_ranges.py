"""Release ranges of printed wordings are checked by machine (issue 32): a signature's or a known-harmless entry's
`versions` must agree with the releases the message catalogue says print what its pattern finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnosis.catalogue import Catalogue, Entry
from kb.content.message_ranges import message_range_problems

pytestmark = pytest.mark.slow  # reads the whole catalogue: make test runs it, make check does not

ROOT = Path(__file__).resolve().parents[2]


def test_content_ranges_agree_with_the_message_catalogue():
    catalogue = Catalogue.load(ROOT / "content" / "catalogue" / "messages", cache_dir=ROOT / "var" / "cache")
    problems = message_range_problems(ROOT / "content", catalogue)
    assert not problems, "\n".join(str(p) for p in problems)


def _catalogue() -> Catalogue:
    entry = Entry(
        id="made_up.connect_failed.v1",  # not a real id: the catalogue keeps per-id caches
        program="nccl",
        template="Connect to %s failed : %s",
        style="printf",
        severity="WARN",
        meaning="socket.connect_failed",
        first="2.4.8",
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
