"""The prose extractor (kb/content/prose.py) that the audit tool, the prose range check and `make claims` share:
which version statements it finds in a case body, and where."""

from __future__ import annotations

import datetime

from kb.content.errors import ContentError
from kb.content.prose import body_units, statements

SAMPLE = """\
## Background {#background}

Flight Recorder dumps need PyTorch 2.5+ and a buffer
size; the variables are read from 2.8. Before that, nothing.

### Step 1: Save sharded (PyTorch >= 2.2) {#fix-1}

| release | behaviour |
|---|---|
| 2.2-2.7 | `TORCH_NCCL_TRACE_BUFFER_SIZE` |

- NCCL 2.23: `NCCL_CONF_FILE` appears.
- accelerate (0.25+) sets it.

```text
[rank0]: PyTorch 2.4.1 printed this from 2.3
```
"""


def _found(text: str, first_line: int = 10) -> list[tuple[int, str]]:
    return [(s.line, s.phrase) for s in statements(body_units(text.splitlines(), first_line, "case.md"))]


def test_statements_are_found_in_paragraphs_headings_tables_and_lists_with_their_file_lines():
    assert _found(SAMPLE) == [
        (12, "PyTorch 2.5+"),
        (13, "from 2.8"),
        (15, ">= 2.2"),
        (19, "2.2-2.7"),
        (21, "NCCL 2.23"),
        (22, "0.25+"),
    ]


def test_code_blocks_are_left_out():
    assert _found("```bash\npip install torch==2.4.1  # from 2.3\n```\n~~~\nNCCL 2.18+\n~~~\n") == []


def test_a_statement_broken_over_two_lines_is_found_at_the_line_where_it_starts():
    assert _found("The call was fixed in transformers\n4.26.0 and later.\n", 5) == [(5, "transformers 4.26.0")]


def test_a_heading_anchor_is_not_part_of_the_statement_context():
    [statement] = statements(body_units(["### 2. On NCCL 2.30 and later {#fix-2}"], 1, "case.md"))
    assert statement.unit.text == "### 2. On NCCL 2.30 and later"


def test_each_sentence_of_a_paragraph_is_its_own_unit():
    units = body_units(["NCCL 2.5 checks it. PyTorch 2.0 raises", "DistBackendError."], 1, "case.md")
    assert [u.text for u in units] == ["NCCL 2.5 checks it.", "PyTorch 2.0 raises DistBackendError."]
    assert [u.line_at(0) for u in units] == [1, 1]


def test_a_source_comment_applies_to_the_statements_of_its_block_and_is_not_prose():
    lines = [
        "- `TORCH_FR_DUMP_ON_TIMEOUT` from 2.15.",
        '  <!-- source: {read: "torch 2.15.0 wheel FlightRecorder.hpp", checked: 2026-11-28} -->',
        "- `TORCH_FR_BUFFER_SIZE` from 2.8.",
    ]
    first, second = statements(body_units(lines, 1, "case.md"))
    assert first.unit.source.read == "torch 2.15.0 wheel FlightRecorder.hpp"
    assert first.unit.source.checked == datetime.date(2026, 11, 28)
    assert "source" not in first.unit.text and second.unit.source is None


def test_a_malformed_source_comment_is_a_content_error_at_its_line():
    problems: list[ContentError] = []
    body_units(["NCCL 2.23 reads it. <!-- source: {checked: 2026-11-28} -->"], 7, "case.md", problems)
    assert [(p.path, p.line) for p in problems] == [("case.md", 7)]
    assert "needs `read`" in problems[0].message
