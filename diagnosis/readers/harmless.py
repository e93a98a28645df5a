"""Known-harmless lines (content/harmless/): messages users paste as the cause although they are not. They are listed
apart, with why, and the lines only they explain are never evidence for a case (the signatures reader skips them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnosis.readers.base import FileReading, Harmless, JobParts, Window
from diagnosis.readers.signatures import signature_hits
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator

if TYPE_CHECKING:
    from diagnosis.rules import Rules

MAX_HARMLESS = 20


def harmless_lines(
    scanner: TextScanner, lines: LineLocator, rules: Rules, label: str | None, found: list[Harmless], start: int, limit: int
) -> set[int]:
    """Start offsets of lines that only a known-harmless message explains; they are never evidence."""
    skip: set[int] = set()
    for rule in rules.harmless:
        for _, hits, _ in signature_hits(scanner, [rule.signature], per_signature=MAX_HARMLESS, start=start, end=limit):
            for hit in hits:
                skip.add(lines.line_start(hit.offset))
                if len(found) < MAX_HARMLESS and not any(h.id == rule.id and h.source == label for h in found):
                    found.append(
                        Harmless(
                            line=lines.line_number(lines.line_start(hit.offset)),
                            text=lines.line_text(hit.offset),
                            id=rule.id,
                            title=rule.title,
                            why=rule.why,
                            source=label,
                        )
                    )
    return skip


class HarmlessReader:
    name = "harmless"
    literals: frozenset[tuple[str, bool]] = frozenset()  # the harmless patterns' own, which Rules.literals adds

    def read(self, window: Window, part: FileReading) -> None:
        window.skip = harmless_lines(
            window.scanner, window.lines, window.rules, window.label, part.harmless, window.start, window.limit
        )

    def merge(self, into: FileReading, later: FileReading) -> None:
        for harmless in later.harmless:
            if len(into.harmless) < MAX_HARMLESS and not any(h.id == harmless.id for h in into.harmless):
                into.harmless.append(harmless)

    def shift(self, part: FileReading, by: int) -> None:
        for harmless in part.harmless:
            harmless.line += by

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        job.harmless += [h for h in reading.harmless if len(job.harmless) < MAX_HARMLESS]


READER = HarmlessReader()
