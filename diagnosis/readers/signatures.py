"""Compile the signatures from case front matter and find where they match in a log.

Each pattern is matched one line at a time, but only on the lines that contain one of its required
literals (see diagnosis.scan), so a large log costs a few substring searches per pattern.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from diagnosis.scan.literals import required_literal_groups
from diagnosis.scan.scanner import TextScanner
import time
from typing import Any

from diagnosis.readers.base import Evidence, FileReading, JobParts, Window
from diagnosis.text import LineLocator


@dataclass(frozen=True)
class Signature:
    case: str
    id: str
    description: str
    weight: float
    anchor: bool
    pattern: str
    flags: int
    ignorecase: bool
    guards: tuple[tuple[str, ...], ...]  # every match contains one literal of each group, best group first

    @property
    def regex(self) -> re.Pattern:
        """Compiled on first use: most signatures' literals are absent from a given log, so the command line
        on a short paste compiles a handful of patterns, not all of them."""
        return _compiled(self.pattern, self.flags)

    @property
    def literals(self) -> tuple[str, ...]:
        """The group whose lines are scanned: every match contains one of these."""
        return self.guards[0] if self.guards else ()

    @functools.cached_property  # asked for every signature of every file of a job
    def prefilter(self) -> tuple[tuple[str, ...], ...]:
        """The groups the one-pass prefilter checks: the scanned group, and the other groups whose literals
        are distinctive. Short common ones (' - ', 'NCCL') occur in nearly every log and would only slow the
        pass; so would a group found wherever the scanned one is ('NCCL WARN ' beside 'NCCL WARN NET/IB : Got
        completion from peer '): a group left out counts as present."""
        scanned = self.guards[:1]
        return scanned + tuple(
            group
            for group in self.guards[1:]
            if min(len(lit) for lit in group) >= PREFILTER_MIN and not _contained(scanned[0], group)
        )


def _contained(scanned: tuple[str, ...], group: tuple[str, ...]) -> bool:
    """Every literal of the scanned group holds one of `group`'s: wherever the scanned group occurs, so does `group`."""
    return all(any(lit in outer for lit in group) for outer in scanned)


def signatures_compile(cases: Iterable[dict]) -> list[Signature]:
    """From `[{"slug": ..., "signatures": [...]}, ...]` (front matter or database rows) to Signatures."""
    compiled: list[Signature] = []
    for case in cases:
        for sig in case["signatures"]:
            ignorecase = "ignorecase" in (sig.get("flags") or [])
            flags = re.MULTILINE | (re.IGNORECASE if ignorecase else 0)
            compiled.append(
                Signature(
                    case=case["slug"],
                    id=sig["id"],
                    description=sig["description"],
                    weight=float(sig["weight"]),
                    anchor=bool(sig.get("anchor", False)),
                    pattern=sig["pattern"],
                    flags=flags,
                    ignorecase=ignorecase,
                    guards=required_literal_groups(sig["pattern"], ignorecase),
                )
            )
    return compiled


@functools.lru_cache(maxsize=None)
def _compiled(pattern: str, flags: int) -> re.Pattern:
    return re.compile(pattern, flags)


@dataclass(frozen=True)
class Hit:
    signature: Signature
    offset: int
    end: int
    groups: dict[str, str]


PREFILTER_MIN = 6
MAX_COUNTED_LINES = 100  # a signal that matched this many lines is reported as "100 or more"; counting on costs time


@dataclass(frozen=True)
class SignatureIndex:
    """Which signatures a text can match, found from the literals it holds instead of by asking about every signature:
    a text holds few of the literals, and a job of thousands of small files asked about 250 signatures a file.
    A signature is keyed by its smallest required literal group (one of them must occur for it to match); one
    with no prefilter, or matched ignoring case, is asked about as before."""

    unkeyed: tuple[int, ...]
    keyed: dict[str, tuple[int, ...]]

    @classmethod
    def build(cls, signatures: list[Signature]) -> SignatureIndex:
        unkeyed: list[int] = []
        keyed: dict[str, list[int]] = {}
        for position, sig in enumerate(signatures):
            if not sig.prefilter or sig.ignorecase:
                unkeyed.append(position)
                continue
            for literal in min(sig.prefilter, key=len):
                keyed.setdefault(literal, []).append(position)
        return cls(tuple(unkeyed), {literal: tuple(positions) for literal, positions in keyed.items()})

    def candidates(self, scanner: TextScanner, signatures: list[Signature]) -> list[Signature]:
        """The signatures, in their order, that the literals present leave possible (all when the literal pass did
        not run)."""
        present = scanner.present_among(self.keyed)
        if present is None:
            return signatures
        positions = set(self.unkeyed).union(*(self.keyed[literal] for literal in present))
        return [signatures[position] for position in sorted(positions)]


def signature_hits(
    scanner: TextScanner,
    signatures: list[Signature],
    *,
    per_signature: int = 3,
    start: int = 0,
    end: int | None = None,
    index: SignatureIndex | None = None,
) -> Iterator[tuple[Signature, list[Hit], int]]:
    """For each signature present: its first few hits and the number of lines it matched (capped), counting
    only matches from `start` to `end` (a window's own part, when the text carries context around it). `index`:
    the signatures' SignatureIndex, to skip those whose literals are absent without asking about each."""
    for sig in index.candidates(scanner, signatures) if index is not None else signatures:
        if not scanner.can_match(sig.prefilter, sig.ignorecase):
            continue
        hits: list[Hit] = []
        total = 0
        for match in scanner.matches(sig.regex, sig.literals, sig.ignorecase):
            if match.start() < start:
                continue
            if end is not None and match.start() >= end:
                break
            total += 1
            if total >= MAX_COUNTED_LINES:
                break
            if len(hits) < per_signature:
                groups = {k: v for k, v in match.groupdict().items() if v is not None}
                hits.append(Hit(signature=sig, offset=match.start(), end=match.end(), groups=groups))
        if total:
            yield sig, hits, total


EVIDENCE_PER_SIGNAL = 3


def per_case_merge(into: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> None:
    """Signals and evidence of a later window or file: counts add up (to the cap), evidence keeps the first few
    lines of each signal."""
    for slug, entry in new.items():
        target = into.setdefault(slug, {"signals": {}, "evidence": []})
        for signal_id, signal in entry["signals"].items():
            if signal_id in target["signals"]:
                total = target["signals"][signal_id]["count"] + signal["count"]
                target["signals"][signal_id]["count"] = min(total, MAX_COUNTED_LINES)
            else:
                target["signals"][signal_id] = dict(signal)
        for evidence in entry["evidence"]:
            if sum(1 for e in target["evidence"] if e.signal == evidence.signal) < EVIDENCE_PER_SIGNAL:
                target["evidence"].append(evidence)


def _evidence(lines: LineLocator, hit, signal: str, label: str | None) -> Evidence:
    text, line_start = lines.line_text(hit.offset), lines.line_start(hit.offset)
    start = min(hit.offset - line_start, len(text))
    end = min(hit.end - line_start, len(text))
    # the line the shown text begins on: in a paste whose wrapped lines were joined, the match may start on a later one
    return Evidence(
        line=lines.line_number(line_start), text=text, signal=signal, source=label, groups=hit.groups, span=(start, end)
    )


class SignaturesReader:
    """The cases' line signatures: a count per signal (to the cap) and the first few lines of each as evidence. Lines
    that only a known-harmless message explains are never evidence (the harmless reader, run before, marks them)."""

    name = "signatures"
    literals: frozenset[tuple[str, bool]] = frozenset()  # the signatures' own, which Rules.literals adds

    def read(self, window: Window, part: FileReading) -> None:
        skip = window.skip
        lines = window.lines
        for sig, hits, count in signature_hits(
            window.scanner,
            window.rules.signatures,
            per_signature=EVIDENCE_PER_SIGNAL + len(skip),
            start=window.start,
            end=window.limit,
            index=window.rules.signature_index,
        ):
            if window.deadline is not None and time.perf_counter() > window.deadline:
                part.partial = True
                break
            kept = [hit for hit in hits if lines.line_start(hit.offset) not in skip][:EVIDENCE_PER_SIGNAL]
            if skip and not kept:
                continue  # the signature matched harmless lines only
            entry = part.per_case.setdefault(sig.case, {"signals": {}, "evidence": []})
            entry["signals"][sig.id] = {
                "id": sig.id,
                "description": sig.description,
                "weight": sig.weight,
                "anchor": sig.anchor,
                "count": min(count, MAX_COUNTED_LINES),
                "kind": "line",
            }
            entry["evidence"] += [_evidence(lines, hit, sig.id, window.label) for hit in kept]

    def merge(self, into: FileReading, later: FileReading) -> None:
        per_case_merge(into.per_case, later.per_case)

    def shift(self, part: FileReading, by: int) -> None:
        for entry in part.per_case.values():
            for evidence in entry["evidence"]:
                evidence.line += by

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        per_case_merge(job.per_case, reading.per_case)


READER = SignaturesReader()
