"""Diagnose a log: match every case's signatures, score, and explain each match with evidence lines."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

from kb.diagnosis.facts import GENERIC_FACTS, fact_literals, facts_extract
from kb.diagnosis.scanning import TextScanner
from kb.diagnosis.signatures import Signature, signature_hits
from kb.diagnosis.text import LineLocator, log_text
from kb.diagnosis.verdict import RankVerdict, rank_verdict

CONFIDENT = 0.5
HALF_SCORE = 6.0  # the score at which a case with an anchor becomes a confident match
NO_ANCHOR_CAP = 0.45
EVIDENCE_PER_SIGNAL = 3


@dataclass
class Evidence:
    line: int
    text: str
    signal: str
    source: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    span: tuple[int, int] = (0, 0)  # the matched part, as offsets into `text`


@dataclass
class CaseMatch:
    slug: str
    score: float
    confidence: float
    evidence: list[Evidence]
    signals: list[dict[str, Any]]  # id, description, weight, count


@dataclass
class Diagnosis:
    matches: list[CaseMatch]
    facts: dict[str, Any]
    verdict: RankVerdict | None
    stats: dict[str, Any]

    @property
    def confident(self) -> list[CaseMatch]:
        return [m for m in self.matches if m.confidence >= CONFIDENT]


def confidence_from(score: float, anchored: bool) -> float:
    if score <= 0:
        return 0.0
    value = 1 - 0.5 ** (score / HALF_SCORE)
    return round(value if anchored else min(value, NO_ANCHOR_CAP), 3)


def log_diagnose(sources: list[tuple[str, bytes | str]], signatures: list[Signature], *, top: int = 5) -> Diagnosis:
    """Diagnose one job's logs (one or several files: ranks or nodes). A signature counts once per case
    however many lines or files match it; evidence keeps the first few lines of each."""
    started = time.perf_counter()
    total_bytes = sum(len(data) for _, data in sources)
    literals = _literals(tuple(signatures))
    per_case: dict[str, dict[str, Any]] = {}
    facts: dict[str, Any] = {}
    all_ranks = {}
    line_total = 0
    for name, data in sources:
        text, unchanged = log_text(data)
        lines = LineLocator(text)
        scanner = TextScanner(text, literals, encoded=data if unchanged else None)
        line_total += lines.line_count()
        source = name if len(sources) > 1 else None
        for sig, hits, count in signature_hits(scanner, signatures, per_signature=EVIDENCE_PER_SIGNAL):
            entry = per_case.setdefault(sig.case, {"signals": {}, "evidence": []})
            signal = entry["signals"].setdefault(sig.id, {"signature": sig, "count": 0})
            signal["count"] += count
            for hit in hits:
                if sum(1 for e in entry["evidence"] if e.signal == sig.id) < EVIDENCE_PER_SIGNAL:
                    entry["evidence"].append(_evidence(lines, hit, sig.id, source))
        file_facts, ranks = facts_extract(scanner, lines)
        _merge_facts(facts, file_facts)
        for rank, state in ranks.items():
            all_ranks.setdefault(rank, state)
    matches = [_case_match(slug, entry) for slug, entry in per_case.items()]
    matches = [m for m in matches if m.score > 0]
    matches.sort(key=lambda m: (-m.confidence, -m.score, m.slug))
    for match in matches:
        for evidence in match.evidence:
            for key, value in evidence.groups.items():
                if key not in GENERIC_FACTS:  # the engine's own reading of those wins, with its types
                    facts.setdefault(key, value)
    verdict = rank_verdict(all_ranks, facts.get("world_size"))
    elapsed_ms = (time.perf_counter() - started) * 1000
    stats = {"bytes": total_bytes, "lines": line_total, "ms": round(elapsed_ms, 1), "files": len(sources)}
    return Diagnosis(matches=matches[:top], facts=facts, verdict=verdict, stats=stats)


@functools.lru_cache(maxsize=4)
def _literals(signatures: tuple[Signature, ...]) -> frozenset[tuple[str, bool]]:
    """Every literal any signature or fact rule looks for; computed once per compiled signature set."""
    return frozenset({(lit, s.ignorecase) for s in signatures for group in s.guards for lit in group} | fact_literals())


def _evidence(lines: LineLocator, hit, signal: str, source: str | None) -> Evidence:
    text, line_start = lines.line_text(hit.offset), lines.line_start(hit.offset)
    start = min(hit.offset - line_start, len(text))
    end = min(hit.end - line_start, len(text))
    return Evidence(line=lines.line_number(hit.offset), text=text, signal=signal, source=source,
                    groups=hit.groups, span=(start, end))


def _case_match(slug: str, entry: dict[str, Any]) -> CaseMatch:
    signals = entry["signals"].values()
    score = round(sum(s["signature"].weight for s in signals), 2)
    anchored = any(s["signature"].anchor for s in signals)
    evidence = sorted(entry["evidence"], key=lambda e: (e.source or "", e.line))
    described = [{"id": s["signature"].id, "description": s["signature"].description,
                  "weight": s["signature"].weight, "count": s["count"]}
                 for s in sorted(signals, key=lambda s: -s["signature"].weight)]
    return CaseMatch(slug=slug, score=score, confidence=confidence_from(score, anchored),
                     evidence=evidence, signals=described)


def _merge_facts(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if key not in into:
            into[key] = value
        elif isinstance(value, list) and isinstance(into[key], list):
            into[key] = sorted(set(into[key]) | set(value), key=str)
        elif key == "world_size":
            into[key] = max(into[key], value)
