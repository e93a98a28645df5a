"""Diagnose a job's logs: read each file (repair, signatures, facts, stacks, tool output, first failure),
merge them into one job model (ranks, world size, stages), then score every case on its line signatures,
frame signatures and fact conditions, and explain each match with evidence."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kb.diagnosis import tools
from kb.diagnosis.conditions import condition_holds
from kb.diagnosis.events import Failure, failure_exception, first_failure
from kb.diagnosis.facts import GENERIC_FACTS, facts_extract
from kb.diagnosis.rules import Rules
from kb.diagnosis.scanning import TextScanner
from kb.diagnosis.signatures import signature_hits
from kb.diagnosis.stacks import Stack, stacks_extract
from kb.diagnosis.text import LineLocator, log_text, paste_repair
from kb.diagnosis.verdict import RankVerdict, rank_verdict, stack_groups, verdict_facts
from kb.diagnosis.versions import version_in

CONFIDENT = 0.5
HALF_SCORE = 6.0  # the score at which a case with an anchor becomes a confident match
NO_ANCHOR_CAP = 0.45
EVIDENCE_PER_SIGNAL = 3
MAX_HARMLESS = 20
# Version facts a step's `versions` are checked against.
VERSION_FACTS = {"pytorch": "torch_version", "nccl": "nccl_version", "cuda": "cuda_version",
                 "transformer-engine": "te_version", "linux-kernel": "kernel_version"}


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
    signals: list[dict[str, Any]]  # id, description, weight, count, kind
    kind: str = "cause"  # cause | guide
    fix_step: str | None = None
    steps_not_for_versions: list[str] = field(default_factory=list)


@dataclass
class Harmless:
    line: int
    text: str
    id: str
    title: str
    why: str
    source: str | None = None


@dataclass
class Diagnosis:
    matches: list[CaseMatch]
    facts: dict[str, Any]
    verdict: RankVerdict | None
    stats: dict[str, Any]
    harmless: list[Harmless] = field(default_factory=list)
    failure: Failure | None = None
    repairs: list[str] = field(default_factory=list)
    stack_groups: list[dict] = field(default_factory=list)

    @property
    def confident(self) -> list[CaseMatch]:
        return [m for m in self.matches if m.confidence >= CONFIDENT]


def confidence_from(score: float, anchored: bool) -> float:
    if score <= 0:
        return 0.0
    value = 1 - 0.5 ** (score / HALF_SCORE)
    return round(value if anchored else min(value, NO_ANCHOR_CAP), 3)


@dataclass
class _FileReading:
    """What one file yields; readings of several files merge into the job model in any order."""
    facts: dict[str, Any]
    ranks: dict
    stacks: list[Stack]
    failure: Failure | None
    lines: int


def log_diagnose(sources: list[tuple[str, bytes | str]], rules: Rules, *, top: int = 5,
                 budget_s: float | None = None) -> Diagnosis:
    """Diagnose one job's logs (one or several files: ranks or nodes). A signal counts once per case
    however many lines or files show it; evidence keeps the first few lines of each.

    With `budget_s`, line matching stops when the time is spent and the answer is marked partial: a
    hostile input costs a bounded share of a worker, never the worker."""
    started = time.perf_counter()
    deadline = started + budget_s if budget_s else None
    partial = False
    literals = rules.literals
    per_case: dict[str, dict[str, Any]] = {}
    facts: dict[str, Any] = {}
    all_ranks: dict = {}
    all_stacks: list[tuple[Stack, str | None]] = []
    failures: list[Failure] = []
    harmless: list[Harmless] = []
    repairs: list[str] = []
    line_total = 0
    for name, data in sources:
        source = name if len(sources) > 1 else None
        text, unchanged = log_text(data)
        repaired = paste_repair(text)
        if repaired.text is not text:
            text, unchanged = repaired.text, False
        repairs += repaired.notes
        lines = LineLocator(text, repaired.joins)
        scanner = TextScanner(text, literals, encoded=data if unchanged else None)
        line_total += lines.line_count()
        skip = _harmless_lines(scanner, lines, rules, source, harmless)
        for sig, hits, count in signature_hits(scanner, rules.signatures, per_signature=EVIDENCE_PER_SIGNAL + len(skip)):
            if deadline is not None and time.perf_counter() > deadline:
                partial = True
                break
            kept = [hit for hit in hits if lines.line_start(hit.offset) not in skip][:EVIDENCE_PER_SIGNAL]
            if skip and not kept:
                continue  # the signature matched harmless lines only
            entry = per_case.setdefault(sig.case, {"signals": {}, "evidence": []})
            signal = entry["signals"].setdefault(sig.id, {"id": sig.id, "description": sig.description,
                                                          "weight": sig.weight, "anchor": sig.anchor,
                                                          "count": 0, "kind": "line"})
            signal["count"] += count
            for hit in kept:
                if sum(1 for e in entry["evidence"] if e.signal == sig.id) < EVIDENCE_PER_SIGNAL:
                    entry["evidence"].append(_evidence(lines, hit, sig.id, source))
        reading = _file_read(scanner, lines, source)
        _merge_facts(facts, reading.facts)
        for rank, state in reading.ranks.items():
            all_ranks.setdefault(rank, state)
        all_stacks += [(stack, source) for stack in reading.stacks]
        if reading.failure:
            failures.append(reading.failure)

    failure = _earliest(failures)
    verdict = rank_verdict(all_ranks, facts.get("world_size"), failure if all_ranks else None)
    facts.update(verdict_facts(verdict))
    if all_stacks:
        facts["stack_frames"] = sorted({s.frames[0] for s, _ in all_stacks})[:50]
    if failure:
        facts["first_failure"] = failure.kind
        if failure.rank is not None:
            facts["first_failure_rank"] = failure.rank
    _frame_signals(rules, all_stacks, per_case)
    _condition_signals(rules, facts, per_case)

    matches = [_case_match(slug, entry, rules, facts) for slug, entry in per_case.items()]
    matches = [m for m in matches if m.score > 0]
    cause_confident = any(m.kind == "cause" and m.confidence >= CONFIDENT for m in matches)
    matches.sort(key=lambda m: (cause_confident and m.kind == "guide", -m.confidence, -m.score, m.slug))
    for match in matches:
        for evidence in match.evidence:
            for key, value in evidence.groups.items():
                if key not in GENERIC_FACTS:  # the engine's own reading of those wins, with its types
                    facts.setdefault(key, value)
    elapsed_ms = (time.perf_counter() - started) * 1000
    stats = {"bytes": sum(len(data) for _, data in sources), "lines": line_total, "ms": round(elapsed_ms, 1),
             "files": len(sources), **({"partial": True} if partial else {})}
    return Diagnosis(matches=matches[:top], facts=facts, verdict=verdict, stats=stats, harmless=harmless,
                     failure=failure, repairs=sorted(set(repairs)), stack_groups=stack_groups(all_stacks))


def _file_read(scanner: TextScanner, lines: LineLocator, source: str | None) -> _FileReading:
    file_facts, ranks = facts_extract(scanner, lines)
    file_facts.update(tools.tool_facts(scanner))
    stacks = stacks_extract(scanner, lines)
    return _FileReading(facts=file_facts, ranks=ranks, stacks=stacks,
                        failure=first_failure(scanner, lines, stacks, source), lines=lines.line_count())


def _harmless_lines(scanner: TextScanner, lines: LineLocator, rules: Rules, source: str | None,
                    found: list[Harmless]) -> set[int]:
    """Start offsets of lines that only a known-harmless message explains; they are never evidence."""
    skip: set[int] = set()
    for rule in rules.harmless:
        for sig, hits, _ in signature_hits(scanner, [rule.signature], per_signature=MAX_HARMLESS):
            for hit in hits:
                skip.add(lines.line_start(hit.offset))
                if len(found) < MAX_HARMLESS and not any(h.id == rule.id and h.source == source for h in found):
                    found.append(Harmless(line=lines.line_number(hit.offset), text=lines.line_text(hit.offset),
                                          id=rule.id, title=rule.title, why=rule.why, source=source))
    return skip


def _frame_signals(rules: Rules, stacks: list[tuple[Stack, str | None]], per_case: dict[str, dict]) -> None:
    """A frame signature counts when one of the innermost `depth` frames of a stack matches it. Only stacks
    that show where a process waits count: dumps (py-spy, faulthandler, gdb) and tracebacks that end in an
    interrupt or a timeout. A traceback of an error shows where it crashed, which is the error's evidence."""
    waiting = [(stack, source) for stack, source in stacks if stack.kind != "traceback" or not failure_exception(stack)]
    for frame in rules.frames:
        count = 0
        first: Evidence | None = None
        for stack, source in waiting:
            for index, name in enumerate(stack.frames[:frame.depth]):
                match = frame.regex.search(name)
                if match:
                    count += 1
                    if first is None:
                        where = f" (rank {stack.rank})" if stack.rank is not None else ""
                        first = Evidence(line=stack.frame_lines[index], text=f"{stack.kind} frame{where}: {name}",
                                         signal=frame.id, source=source, span=(0, 0))
                    break
        if count:
            entry = per_case.setdefault(frame.case, {"signals": {}, "evidence": []})
            entry["signals"][frame.id] = {"id": frame.id, "description": frame.description, "weight": frame.weight,
                                          "anchor": frame.anchor, "count": count, "kind": "frame"}
            entry["evidence"].append(first)


def _condition_signals(rules: Rules, facts: dict[str, Any], per_case: dict[str, dict]) -> None:
    for condition in rules.conditions:
        if not condition_holds(condition, facts):
            continue
        entry = per_case.get(condition.case)
        if entry is None and condition.weight <= 0:
            continue  # evidence against a case nothing else pointed at changes nothing
        entry = per_case.setdefault(condition.case, {"signals": {}, "evidence": []})
        entry["signals"][condition.id] = {"id": condition.id, "description": condition.description,
                                          "weight": condition.weight, "anchor": condition.anchor, "count": 1,
                                          "kind": "condition", "fact": condition.fact}


def _evidence(lines: LineLocator, hit, signal: str, source: str | None) -> Evidence:
    text, line_start = lines.line_text(hit.offset), lines.line_start(hit.offset)
    start = min(hit.offset - line_start, len(text))
    end = min(hit.end - line_start, len(text))
    return Evidence(line=lines.line_number(hit.offset), text=text, signal=signal, source=source,
                    groups=hit.groups, span=(start, end))


def _case_match(slug: str, entry: dict[str, Any], rules: Rules, facts: dict[str, Any]) -> CaseMatch:
    signals = list(entry["signals"].values())
    score = round(sum(s["weight"] for s in signals), 2)
    anchored = any(s["anchor"] for s in signals)
    evidence = sorted(entry["evidence"], key=lambda e: (e.source or "", e.line))
    described = [{k: v for k, v in s.items() if k != "anchor"} for s in sorted(signals, key=lambda s: -s["weight"])]
    step, not_for = _fix_step(rules.steps.get(slug, []), {s["id"]: s["weight"] for s in signals}, facts)
    return CaseMatch(slug=slug, score=score, confidence=confidence_from(score, anchored), evidence=evidence,
                     signals=described, kind="guide" if slug in rules.guides else "cause",
                     fix_step=step, steps_not_for_versions=not_for)


def _fix_step(steps, weights: dict[str, float], facts: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The step the evidence points at most strongly among those that hold for the versions the log shows,
    and the steps the log's versions rule out."""
    not_for = [s.anchor for s in steps if not _step_applies(s, facts)]
    best, best_weight = None, 0.0
    for step in steps:
        if step.anchor in not_for:
            continue
        weight = sum(weights.get(ref, 0) for ref in step.evidence)
        if weight > best_weight:
            best, best_weight = step.anchor, weight
    return best, not_for


def _step_applies(step, facts: dict[str, Any]) -> bool:
    for software, spec in step.versions.items():
        read = facts.get(VERSION_FACTS.get(software, ""))
        if read and not version_in(str(read), spec):
            return False
    return True


def _earliest(failures: list[Failure]) -> Failure | None:
    """torchrun's own root cause first, then the earliest failure (by time when every one has a time)."""
    if not failures:
        return None
    timed = [f for f in failures if f.time]
    if len(timed) == len(failures) and len(failures) > 1:
        return min(failures, key=lambda f: f.time)
    return failures[0]


def _merge_facts(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if key not in into:
            into[key] = value
        elif isinstance(value, list) and isinstance(into[key], list):
            into[key] = sorted(set(into[key]) | set(value), key=str)
        elif key == "world_size":
            into[key] = max(into[key], value)

