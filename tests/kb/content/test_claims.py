"""Claims that rest on reading alone (issue 32, item 3): the `source: {read, checked}` field content may carry, and
`manage.py claims`, which lists every such claim with its age, oldest first, so the oldest reading is redone first."""

from __future__ import annotations

import datetime
import io
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from kb.content.claims import Claim, claims_oldest_first, content_claims
from kb.content.fields import fields_check
from kb.content.schema import FRAME_FIELDS, SIGNATURE_FIELDS, STEP_FIELDS, harmless_check
from tests.kb.case_files import line_of

CONTENT = Path(__file__).resolve().parents[3] / "content"
SIGNATURE = {
    "id": "nccl-multi-rank-gpu-refused",
    "description": "NCCL 2.30.7 refused two ranks on one GPU.",
    "pattern": r"Multiple Ranks are using the same GPU/Partition\. Set NCCL_MULTI_RANK_GPU_ENABLE=1",
    "weight": 9,
    "examples": [
        "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration."
    ],
}
READ = {"read": "NVIDIA/nccl v2.30.7-1 src/init.cc:1057", "checked": datetime.date(2026, 11, 28)}


# --- the schema --------------------------------------------------------------------------------------------


FRAME = {
    "id": "waiting-on-file-baton",
    "description": "A rank waits on the JIT build lock.",
    "pattern": "torch/utils/file_baton\\.py:wait$",
    "weight": 6,
    "examples": ["/usr/lib/python3.10/site-packages/torch/utils/file_baton.py:wait"],
}
STEP = {"anchor": "fix-4", "versions": {"nccl": ">=2.30"}}


@pytest.mark.parametrize(
    "item, fields",
    [(SIGNATURE, SIGNATURE_FIELDS), (FRAME, FRAME_FIELDS), (STEP, STEP_FIELDS)],
    ids=["signature", "frame", "step"],
)
def test_signatures_frames_and_steps_accept_a_source(item, fields):
    assert fields_check({**item, "source": READ}, fields) == []
    assert fields_check({**item, "source": {"read": READ["read"]}}, fields) != []


def test_a_source_needs_the_day_it_was_read():
    problems = fields_check({**SIGNATURE, "source": {"read": READ["read"]}}, SIGNATURE_FIELDS)
    assert problems == [(("source",), "missing required field 'checked'")]


def test_a_source_read_in_the_future_is_refused():
    tomorrow = datetime.date.today() + datetime.timedelta(days=1)
    problems = fields_check({**SIGNATURE, "source": {**READ, "checked": tomorrow}}, SIGNATURE_FIELDS)
    assert problems == [(("source", "checked"), f"checked {tomorrow} is in the future")]


def test_a_source_written_as_plain_text_is_refused():
    problems = fields_check({**SIGNATURE, "source": "NVIDIA/nccl init.cc"}, SIGNATURE_FIELDS)
    assert problems and problems[0][0] == ("source",)


def test_a_source_with_an_unknown_key_is_refused():
    problems = fields_check({**SIGNATURE, "source": {**READ, "url": "https://example.org"}}, SIGNATURE_FIELDS)
    assert (("source", "url"), "unknown field 'url' (allowed: read, checked)") in problems


def test_a_source_date_is_stored_as_iso_text():
    """The database keeps signatures and steps as JSON, which has no date type."""
    from kb.content.load import json_ready

    assert json_ready([{**SIGNATURE, "source": READ}])[0]["source"] == {"read": READ["read"], "checked": "2026-11-28"}


def test_a_harmless_entry_accepts_a_source():
    entry = yaml.safe_load((CONTENT / "harmless" / "torch-nccl-avoid-record-streams.yaml").read_text())
    assert "source" in entry
    assert harmless_check(entry) == []
    assert harmless_check({**entry, "source": {"read": "x"}}) != []


# --- listing them ------------------------------------------------------------------------------------------

CASE = """---
slug: two-ranks
signatures:
  - id: new-wording
    pattern: 'Multiple Ranks'
    source: {read: "NVIDIA/nccl v2.30.7-1 src/init.cc:1057", checked: 2026-11-28}
  - id: old-wording
    pattern: 'Duplicate GPU detected'
    source: {read: "NVIDIA/nccl v2.29.7-1 src/init.cc:974", checked: 2025-06-01}
  - id: no-claim
    pattern: 'invalid usage'
steps:
  - anchor: fix-4
    source: {read: "NVIDIA/nccl v2.30.7-1 docs/userguide/source/env.rst", checked: 2026-01-10}
---
body
"""
HARMLESS = """id: avoid-record-streams
pattern: 'TORCH_NCCL_AVOID_RECORD_STREAMS'
source: {read: "torch 2.14.1 libtorch_cuda.so strings", checked: 2026-03-02}
"""
NAMES = """names:
- name: NCCL_DEBUG
  kind: env
  versions: any
  source: NVIDIA/nccl src/debug.cc
- name: NCCL_MULTI_RANK_GPU_ENABLE
  kind: env
  versions: '>=2.30'
  source: NVIDIA/nccl v2.30.7-1 src/init.cc:68
  checked: 2026-11-20
"""


@pytest.fixture
def content(tmp_path: Path) -> Path:
    root = tmp_path / "content"
    (root / "cases").mkdir(parents=True)
    (root / "harmless").mkdir()
    (root / "cases" / "two-ranks.md").write_text(CASE)
    (root / "harmless" / "avoid-record-streams.yaml").write_text(HARMLESS)
    (root / "names.yaml").write_text(NAMES)
    return root


def test_every_sourced_claim_is_listed_once_with_what_was_read(content):
    subjects = [(c.subject, c.read) for c in content_claims(content)]
    assert sorted(subjects) == sorted(
        [
            ("signature new-wording", "NVIDIA/nccl v2.30.7-1 src/init.cc:1057"),
            ("signature old-wording", "NVIDIA/nccl v2.29.7-1 src/init.cc:974"),
            ("fix step fix-4", "NVIDIA/nccl v2.30.7-1 docs/userguide/source/env.rst"),
            ("harmless line avoid-record-streams", "torch 2.14.1 libtorch_cuda.so strings"),
            ("env NCCL_DEBUG exists (any)", "NVIDIA/nccl src/debug.cc"),
            ("env NCCL_MULTI_RANK_GPU_ENABLE exists (>=2.30)", "NVIDIA/nccl v2.30.7-1 src/init.cc:68"),
        ]
    )


def test_claims_come_undated_first_then_oldest_first(content):
    order = [c.subject for c in content_claims(content)]
    assert order == [
        "env NCCL_DEBUG exists (any)",
        "signature old-wording",
        "fix step fix-4",
        "harmless line avoid-record-streams",
        "env NCCL_MULTI_RANK_GPU_ENABLE exists (>=2.30)",
        "signature new-wording",
    ]


def test_a_claim_points_at_the_line_of_its_source(content):
    claim = next(c for c in content_claims(content) if c.subject == "signature old-wording")
    assert (claim.file.endswith("content/cases/two-ranks.md"), claim.line) == (True, 9)
    assert CASE.splitlines()[claim.line - 1].strip().startswith("source:")


def test_a_claim_s_age_is_the_days_since_it_was_read():
    claim = Claim("content/names.yaml", 3, "env X", "src", datetime.date(2026, 11, 1))
    assert claim.age(datetime.date(2026, 11, 28)) == 27
    assert Claim("content/names.yaml", 3, "env X", "src", None).age(datetime.date(2026, 11, 28)) is None


def test_claims_read_on_the_same_day_keep_file_order():
    day = datetime.date(2026, 11, 28)
    later = Claim("content/cases/b.md", 5, "signature b", "src", day)
    earlier = Claim("content/cases/a.md", 9, "signature a", "src", day)
    assert claims_oldest_first([later, earlier]) == [earlier, later]


def test_the_command_prints_each_claim_with_its_age_in_days(content, settings):
    settings.CONTENT_DIR = content
    out = io.StringIO()
    call_command("claims", stdout=out)
    text = out.getvalue()
    age = (datetime.date.today() - datetime.date(2025, 6, 1)).days
    assert f"{age} days (2025-06-01)" in text
    assert "read: NVIDIA/nccl v2.29.7-1 src/init.cc:974" in text
    assert text.index("undated") < text.index("2025-06-01") < text.index("2026-11-28")
    assert text.rstrip().endswith("6 claim(s).")


def test_the_command_can_leave_out_undated_and_recent_claims(content, settings):
    settings.CONTENT_DIR = content
    out = io.StringIO()
    cutoff = (datetime.date.today() - datetime.date(2026, 3, 2)).days
    call_command("claims", "--dated", "--older-than", str(cutoff), stdout=out)
    text = out.getvalue()
    assert "undated" not in text and "2026-11-28" not in text and "2026-11-20" not in text
    assert "2025-06-01" in text and "2026-03-02" in text
    assert text.rstrip().endswith("3 claim(s).")


def test_the_project_s_content_lists_the_claims_this_audit_dated():
    """The claims fixed after audit turn 3 carry their source, so `make claims` lists them."""
    subjects = {c.subject for c in content_claims(CONTENT) if c.checked}
    assert {"signature nccl-multi-rank-gpu-refused", "harmless line torch-nccl-avoid-record-streams"} <= subjects


# --- version statements in case prose ----------------------------------------------------------------------

PROSE_BODY = """
## Background {#background}

The bootstrap line moved in NCCL 2.23, so older logs show it elsewhere.

- `TORCH_FR_BUFFER_SIZE` from 2.8 sizes the Flight Recorder buffer.
- The heartbeat monitor exists since PyTorch 2.2. <!-- source: {read: "torch 2.2.2 ProcessGroupNCCL.hpp", checked: 2026-10-01} -->
"""
TORCH_NAMES = """program: torch
releases: [2.2.2, 2.7.1, 2.8.0, 2.15.0]
names:
- {name: TORCH_FR_BUFFER_SIZE, kind: env, first: 2.8.0, last: 2.15.0, file: FlightRecorder.hpp}
"""


@pytest.fixture
def prose_content(content: Path) -> Path:
    (content / "cases" / "two-ranks.md").write_text(CASE.replace("\nbody\n", PROSE_BODY))
    (content / "catalogue" / "names").mkdir(parents=True)
    (content / "catalogue" / "names" / "torch.yaml").write_text(TORCH_NAMES)
    return content


def _prose(content: Path) -> list[Claim]:
    return [c for c in content_claims(content) if c.kind == "prose"]


def test_a_prose_version_statement_is_listed_with_its_file_and_line(prose_content):
    first = _prose(prose_content)[0]
    text = (prose_content / "cases" / "two-ranks.md").read_text()
    assert (first.file.endswith("content/cases/two-ranks.md"), first.line) == (True, line_of(text, "NCCL 2.23"))
    assert first.subject == "prose 'NCCL 2.23': The bootstrap line moved in NCCL 2.23, so older logs show it elsewhere."
    assert (first.read, first.checked) == ("", None)


def test_a_source_comment_gives_a_prose_claim_what_was_read_and_when(prose_content):
    claim = next(c for c in _prose(prose_content) if "since PyTorch 2.2" in c.subject)
    assert (claim.read, claim.checked) == ("torch 2.2.2 ProcessGroupNCCL.hpp", datetime.date(2026, 10, 1))


def test_a_prose_statement_the_names_catalogue_judges_is_not_listed(prose_content):
    subjects = [c.subject for c in _prose(prose_content)]
    assert not any("from 2.8" in s for s in subjects)
    assert len(subjects) == 2


def test_undated_prose_claims_come_first(prose_content):
    claims = content_claims(prose_content)
    assert claims.index(_prose(prose_content)[0]) < claims.index(next(c for c in claims if c.checked))


def test_the_command_counts_the_claims_it_lists_by_kind(prose_content, settings):
    settings.CONTENT_DIR = prose_content
    out = io.StringIO()
    call_command("claims", stdout=out)
    *_, by_kind, total = out.getvalue().rstrip().splitlines()
    assert by_kind == "by kind: fix step 1, harmless line 1, names.yaml 2, prose 2, signature 2"
    assert total == "8 claim(s)."
    assert "read: nothing cited" in out.getvalue()


def test_the_renderer_drops_a_source_comment_from_a_list_item_and_a_table_row():
    from kb.content.rendering import body_render

    comment = '<!-- source: {read: "NVIDIA/nccl v2.23.4-1 src/misc/param.cc:53", checked: 2026-11-28} -->'
    html = body_render(
        f"- From NCCL 2.23 it reads the file.\n  {comment}\n\n| a | b |\n|---|---|\n| 2.23+ {comment} | x |\n"
    ).html
    assert "source" not in html and "param.cc" not in html and "2.23+" in html
