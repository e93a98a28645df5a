"""Claims that rest on reading alone, with where they were read and when (issue 32, item 3).

The machine checks what it can (a pattern matches its examples, a script passes bash, a prose statement about a
catalogued name agrees with the names catalogue), but not that an Xid means what a page says, that a message first
appeared in a release, or that a variable defaults to a value. Such a claim carries `source: {read, checked}`
(content/FORMAT.md) on a signature, frame, fix step or harmless entry; every entry of content/names.yaml names its
`source` (with an optional `checked` date); and every version statement in case prose or a script file that the
prose check does not judge (kb/content/prose_ranges.py) is a claim too, with the source its block cites, if any
(`<!-- source: {read, checked} -->`). This module lists them so the oldest reading can be done again first.
Pure: no database, no Django.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kb.content.errors import display_path
from kb.content.frontmatter import front_matter_split
from kb.content.prose_ranges import Wordings, unjudged_statements
from kb.content.yamllines import line_of, yaml_parse_with_lines

# Where in a case's front matter a claim may carry a source, and how a listing names it.
CASE_CLAIM_LISTS = (("signatures", "id", "signature"), ("frames", "id", "frame"), ("steps", "anchor", "fix step"))


@dataclass(frozen=True)
class Claim:
    """One claim: the file and line that make it, what it is, what was read and the day it was read (None: undated)."""

    file: str
    line: int
    subject: str
    read: str  # '' for a prose statement whose block cites no source
    checked: datetime.date | None
    kind: str = "other"  # signature, frame, fix step, harmless line, names.yaml, prose: how a listing counts them

    def age(self, today: datetime.date) -> int | None:
        """Days since the source was read; None for an undated claim, whose age nobody knows."""
        return None if self.checked is None else (today - self.checked).days


def claims_oldest_first(claims: list[Claim]) -> list[Claim]:
    """Undated claims first (never dated, so the least known), then by the day they were read, oldest first."""
    return sorted(claims, key=lambda c: (c.checked is not None, c.checked or datetime.date.min, c.file, c.line))


def content_claims(content_dir: Path, wordings: Wordings | None = None) -> list[Claim]:
    """Every claim in content/ that rests on reading: case front matter, harmless entries, names.yaml and the prose
    version statements no catalogue judges (the names catalogue; the message catalogue too when `wordings` is
    given), oldest first."""
    claims = [
        *_case_claims(content_dir),
        *_harmless_claims(content_dir),
        *_names_claims(content_dir),
        *_prose_claims(content_dir, wordings),
    ]
    return claims_oldest_first(claims)


def _source_claim(source: Any, file: str, line: int, subject: str, kind: str) -> Claim | None:
    if not isinstance(source, dict) or not isinstance(source.get("read"), str):
        return None
    checked = source.get("checked")
    return Claim(file, line, subject, source["read"], checked if isinstance(checked, datetime.date) else None, kind)


def _case_claims(content_dir: Path) -> Iterator[Claim]:
    for path in sorted((content_dir / "cases").glob("*.md")):
        front = front_matter_split(path.read_text(encoding="utf-8"))
        data = front.data if isinstance(front.data, dict) else {}
        shown = display_path(path, content_dir)
        for key, id_key, kind in CASE_CLAIM_LISTS:
            for index, item in enumerate(data.get(key) or []):
                if isinstance(item, dict):
                    where = front.line_of((key, index, "source"))
                    claim = _source_claim(item.get("source"), shown, where, f"{kind} {item.get(id_key)}", kind)
                    if claim:
                        yield claim


def _harmless_claims(content_dir: Path) -> Iterator[Claim]:
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        data, lines = yaml_parse_with_lines(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            shown = display_path(path, content_dir)
            where = line_of(lines, ("source",))
            claim = _source_claim(data.get("source"), shown, where, f"harmless line {data.get('id')}", "harmless line")
            if claim:
                yield claim


def _names_claims(content_dir: Path) -> Iterator[Claim]:
    path = content_dir / "names.yaml"
    if not path.is_file():
        return
    data, lines = yaml_parse_with_lines(path.read_text(encoding="utf-8"))
    shown = display_path(path, content_dir)
    for index, entry in enumerate((data or {}).get("names") or []):
        if isinstance(entry, dict) and isinstance(entry.get("source"), str):
            where = line_of(lines, ("names", index, "source"))
            source = {"read": entry["source"], "checked": entry.get("checked")}
            claim = _source_claim(
                source, shown, where, f"{entry.get('kind')} {entry.get('name')} exists ({entry.get('versions')})", "names.yaml"
            )
            if claim:
                yield claim


def _prose_claims(content_dir: Path, wordings: Wordings | None) -> Iterator[Claim]:
    for statement in unjudged_statements(content_dir, wordings):
        source = statement.unit.source
        subject = f"prose '{statement.phrase}': {statement.context()}"
        yield Claim(
            statement.file, statement.line, subject, source.read if source else "", source.checked if source else None, "prose"
        )
