"""Version statements in prose: the one extractor that the audit tool, the prose range check and `make claims` share
(issue 32, item 3).

A statement is a phrase that ties something to releases ("from 2.3", "NCCL 2.18+", "2.3–2.4", "≤ 2.13", "(2.3+)")
in a case body or a script file. Fenced code is left out: log excerpts and commands are checked as examples and names.
Each statement comes with its unit, the sentence, list item, table row or heading it sits in, because what a
statement is about is said around it. An author cites what was read for the statements of one block (a paragraph,
list item, table row or heading) with an HTML comment in that block, which the renderer drops (content/FORMAT.md):

    `TORCH_FR_DUMP_ON_TIMEOUT` from 2.15 <!-- source: {read: "torch 2.15.0 wheel FlightRecorder.hpp", checked: 2026-11-28} -->

Pure: no Django.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from kb.content.errors import ContentError

SOFTWARE = (
    r"(?:PyTorch|torch|NCCL|DeepSpeed|TransformerEngine|Transformer Engine|TE|accelerate|Accelerate|transformers|"
    r"Open MPI|OpenMPI|driver|CUDA|Megatron(?:-LM)?|TRL|trl|vLLM|kernel|Linux|Slurm|huggingface_hub)"
)
VERSION = r"v?\d+\.\d+(?:\.\d+)?"
STATEMENT = re.compile(
    rf"\b{SOFTWARE}\s+(?:v|version\s+)?\d+\.\d+(?:\.\d+)?\+?"  # "NCCL 2.18+", "PyTorch 2.4.1"
    rf"|\b(?:from|since|until|before|after|up to|through|in|by)\s+{VERSION}\b\+?"  # "from 2.3"
    rf"|\b{VERSION}\s*(?:–|-|to)\s*{VERSION}\b"  # "2.3–2.4"
    rf"|(?:>=|<=|<|>|≥|≤)\s*{VERSION}\b"  # "≥ 2.8"
    rf"|\b{VERSION}\+"  # "(2.3+)"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_ATTRIBUTES = re.compile(r"\s*\{[:#][^}]*\}\s*$")  # a heading's {#anchor}: not prose
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMENT = re.compile(r"<!--(.*?)-->")
_SOURCE_COMMENT = re.compile(r"^\s*source:\s*(.*?)\s*$", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])")


@dataclass(frozen=True)
class Source:
    """What was read for the statements of a block, and the day (None: undated)."""

    read: str
    checked: datetime.date | None


@dataclass(frozen=True)
class Unit:
    """A sentence, list item, table row or heading; `lines` maps offsets in `text` to file lines."""

    file: str
    text: str
    lines: tuple[tuple[int, int], ...]  # (offset where a file line starts in text, file line)
    source: Source | None = None

    def line_at(self, offset: int) -> int:
        line = self.lines[0][1]
        for start, number in self.lines:
            if start > offset:
                break
            line = number
        return line


@dataclass(frozen=True)
class Statement:
    """One version statement: where, the phrase, the unit it is in and its offsets there."""

    unit: Unit
    start: int
    end: int
    line: int

    @property
    def phrase(self) -> str:
        return self.unit.text[self.start : self.end]

    @property
    def file(self) -> str:
        return self.unit.file

    def context(self, width: int = 70) -> str:
        """The unit, cut to `width` characters either side of the phrase when it is long."""
        text = self.unit.text
        if len(text) <= 2 * width + len(self.phrase):
            return text
        lo, hi = max(0, self.start - width), min(len(text), self.end + width)
        return ("…" if lo else "") + text[lo:hi].strip() + ("…" if hi < len(text) else "")


@dataclass
class _Block:
    lines: list[tuple[int, str]]  # (file line, text without comments)
    sentences: bool  # a paragraph or list item is split into sentences; a table row or heading is one unit
    comments: list[tuple[int, str]]


def source_comment(comment: str) -> Source | str | None:
    """The source an HTML comment cites; a message when it is a `source:` comment that is malformed; None when it
    is another comment."""
    m = _SOURCE_COMMENT.match(comment)
    if not m:
        return None
    try:
        value = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return 'a source comment must be <!-- source: {read: "...", checked: YYYY-MM-DD} --> (its value is not YAML)'
    if not isinstance(value, dict) or not isinstance(value.get("read"), str) or not value["read"].strip():
        return "a source comment needs `read`: what was read (a repository and tag with file and line, a wheel and file)"
    checked = value.get("checked")
    if checked is not None and not isinstance(checked, datetime.date):
        return f"a source comment's `checked` must be a date (YYYY-MM-DD), not {checked!r}"
    if isinstance(checked, datetime.date) and checked > datetime.date.today():
        return f"a source comment's `checked` date {checked.isoformat()} is in the future"
    return Source(value["read"].strip(), checked)


def _blocks(lines: list[str], first_line: int) -> Iterator[_Block]:
    block: _Block | None = None
    fenced = False
    for number, raw in enumerate(lines, start=first_line):
        if _FENCE.match(raw):
            fenced = not fenced
            if block:
                yield block
            block = None
            continue
        if fenced:
            continue
        comments = [(number, c) for c in _COMMENT.findall(raw)]
        line = _COMMENT.sub(" ", raw).rstrip()
        if not line.strip() and not comments:
            if block:
                yield block
            block = None
            continue
        if _TABLE_RULE.match(line) and "-" in line:
            continue
        if line.lstrip().startswith("|") or _HEADING.match(line):
            if block:
                yield block
            text = _ATTRIBUTES.sub("", line) if _HEADING.match(line) else line
            yield _Block([(number, text.strip())], False, comments)
            block = None
            continue
        if _ITEM.match(line) and block:
            yield block
            block = None
        if block is None:
            block = _Block([], True, [])
        if line.strip():
            block.lines.append((number, line.strip()))
        block.comments += comments
    if block:
        yield block


def body_units(lines: list[str], first_line: int, file: str, problems: list[ContentError] | None = None) -> list[Unit]:
    """The units of Markdown `lines` (the first is file line `first_line`), fenced code left out. A malformed source
    comment is appended to `problems` when a list is given."""
    units = []
    for block in _blocks(lines, first_line):
        source = None
        for number, comment in block.comments:
            cited = source_comment(comment)
            if isinstance(cited, str):
                if problems is not None:
                    problems.append(ContentError(file, number, cited))
            elif cited is not None:
                source = cited
        if not block.lines:
            continue
        text, starts = "", []
        for number, line in block.lines:
            if text:
                text += " "
            starts.append((len(text), number))
            text += line
        pieces = [(0, len(text))]
        if block.sentences:
            cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
            pieces = list(zip([0, *cuts], [*cuts, len(text)]))
        for lo, hi in pieces:
            sentence = text[lo:hi].rstrip()
            first = [n for start, n in starts if start <= lo][-1]
            mapped = [(0, first)] + [(start - lo, n) for start, n in starts if lo < start < hi]
            units.append(Unit(file, sentence, tuple(mapped), source))
    return units


def statements(units: list[Unit]) -> list[Statement]:
    """Every version statement in `units`, in order."""
    out = []
    for unit in units:
        for m in STATEMENT.finditer(unit.text):
            out.append(Statement(unit, m.start(), m.end(), unit.line_at(m.start())))
    return out


def file_units(path: Path, shown: str, problems: list[ContentError] | None = None) -> list[Unit]:
    """The prose units of a case (its body after the front matter) or of a script file (each line a unit: YAML
    strings are not Markdown paragraphs)."""
    lines = path.read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
    if path.suffix == ".md":
        start = _front_matter_end(lines)
        return body_units(lines[start:], start + 1, shown, problems)
    units = []
    fenced = False
    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):  # a bash snippet inside a YAML string
            fenced = not fenced
            continue
        if not fenced and line.strip():
            units.append(Unit(shown, line.strip(), ((0, number),)))
    return units


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first body line: after the closing '---' of the front matter (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return i + 1
    return 0


def prose_files(content_dir: Path) -> list[Path]:
    """The files whose prose holds version statements: case bodies and script parts."""
    return sorted((content_dir / "cases").glob("*.md")) + sorted((content_dir / "scripts").glob("*.yaml"))


def content_statements(content_dir: Path, problems: list[ContentError] | None = None) -> list[Statement]:
    """Every prose version statement in content/, file by file."""
    base = content_dir.parent
    out = []
    for path in prose_files(content_dir):
        out += statements(file_units(path, str(path.relative_to(base)), problems))
    return out
