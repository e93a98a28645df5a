"""Diagnose a job's logs: read each file (repair, signatures, facts, stacks, tool output, first failure),
merge them into one job model (ranks, world size, stages), then score every case on its line signatures,
frame signatures and fact conditions, and explain each match with evidence."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnosis.conditions import condition_holds
from diagnosis.readers.events import Failure, failure_effects, failure_exception
from diagnosis.readers.facts import (
    BAND_FACTS,
    GENERIC_FACTS,
    RankState,
    facts_bounded,
    rank_facts,
)
from diagnosis.readers.flight_recorder import FlightRecorderReading, flight_recorder_detect, flight_recorder_read
from diagnosis.parallel import paths_read
from diagnosis.readers import READERS
from diagnosis.readers.base import Evidence, FileReading, Harmless, JobParts
from diagnosis.reading import Source, reading_rank_set, source_read
from diagnosis.rules import Rules
from diagnosis.readers.stacks import Stack, gloo_waits, stack_collectives
from diagnosis.readers.timeouts import timeouts_summary
from diagnosis.rank_groups import rank_groups_build
from diagnosis.verdict import RankVerdict, rank_verdict, seqnum_counters_apart, stack_groups, verdict_facts
from diagnosis.versions import version_in, versions_overlap

CONFIDENT = 0.5
HALF_SCORE = 6.0  # the score at which a case with an anchor becomes a confident match
NO_ANCHOR_CAP = 0.45
# Version facts a step's `versions` are checked against.
VERSION_FACTS = {
    "pytorch": "torch_version",
    "nccl": "nccl_version",
    "cuda": "cuda_version",
    "transformer-engine": "te_version",
    "linux-kernel": "kernel_version",
}


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
class Diagnosis:
    matches: list[CaseMatch]
    facts: dict[str, Any]
    verdict: RankVerdict | None
    stats: dict[str, Any]
    harmless: list[Harmless] = field(default_factory=list)
    failure: Failure | None = None
    repairs: list[str] = field(default_factory=list)
    stack_groups: list[dict] = field(default_factory=list)
    recorder: FlightRecorderReading | None = None
    rank_groups: dict[str, Any] | None = None  # where every rank is (diagnosis/rank_groups.py)
    timeouts: dict[str, Any] | None = None  # the limits the log shows, first to fire first (diagnosis/readers/timeouts.py)
    parts: dict[str, Any] = field(default_factory=dict)  # what readers without a field of their own found (JobParts.parts)

    @property
    def unrecognised(self) -> list[tuple[str | None, int, str]]:
        """Lines with a catalogued program's prefix that no template of the catalogue explains: (file, line, text)."""
        return list((self.parts.get("catalogue") or {}).get("unrecognised", []))

    @property
    def confident(self) -> list[CaseMatch]:
        return [m for m in self.matches if m.confidence >= CONFIDENT]


def confidence_from(score: float, anchored: bool) -> float:
    if score <= 0:
        return 0.0
    value = 1 - 0.5 ** (score / HALF_SCORE)
    return round(value if anchored else min(value, NO_ANCHOR_CAP), 3)


def log_diagnose(
    sources: list[tuple[str, Source]],
    rules: Rules,
    *,
    top: int = 5,
    budget_s: float | None = None,
    workers: int = 1,
    ranks: dict[str, int] | None = None,
    unpickled: dict[str, Any] | None = None,
) -> Diagnosis:
    """Diagnose one job's logs (one or several files: ranks or nodes; bytes, text, paths or binary file
    objects). A signal counts once per case however many lines or files show it; evidence keeps the first
    few lines of each.

    With `budget_s`, line matching stops when the time is spent and the answer is marked partial: a
    hostile input costs a bounded share of a worker, never the worker. With `workers` > 1, files given as
    paths are read in parallel processes, a large one as runs of its windows (the command line).
    Flight Recorder dumps among the sources are read as dumps, never executed; `ranks` names the rank of a
    file whose path says it (torchrun's --log-dir layout, rank3.log) for lines that do not."""
    started = time.perf_counter()
    deadline = started + budget_s if budget_s else None
    sources, dumps = sources_split(sources)
    labels = [name if len(sources) > 1 else None for name, _ in sources]
    if workers > 1 and all(isinstance(data, Path) for _, data in sources):
        readings = paths_read(rules, [data for _, data in sources], labels, deadline, workers)
    else:
        readings, unread = [], []
        for (_, data), label in zip(sources, labels):
            if readings and deadline is not None and time.perf_counter() > deadline:
                unread.append(FileReading(partial=True, label=label))  # the budget went on the files before it
                readings.append(unread[-1])
            else:
                readings.append(source_read(data, rules, label=label, deadline=deadline))
        if unread:
            unread[0].repairs.append(
                f"{len(unread)} of {len(sources)} files were not read: the time one diagnosis may take was spent on "
                "the files before them"
            )
    file_ranks: dict[int, int] = {}
    source_ranks: dict[str, int] = {}
    for (name, _), reading in zip(sources, readings):
        rank = (ranks or {}).get(name)
        reading_rank_set(reading, rank)
        if rank is not None:
            file_ranks[rank] = file_ranks.get(rank, 0) + reading.bytes
            source_ranks[name] = rank
    recorder = flight_recorder_read(dumps, unpickled) if dumps else None
    return job_diagnose(
        readings, rules, top=top, started=started, recorder=recorder, file_ranks=file_ranks, source_ranks=source_ranks
    )


def sources_split(sources: list[tuple[str, Source]]) -> tuple[list[tuple[str, Source]], list[tuple[str, Source]]]:
    """A job's log files and its Flight Recorder dumps (read as dumps, never as text), each in the order given."""
    is_dump = [isinstance(data, (bytes, bytearray)) and flight_recorder_detect(name, data) for name, data in sources]
    logs = [source for source, dump in zip(sources, is_dump) if not dump]
    return logs, [source for source, dump in zip(sources, is_dump) if dump]


def job_diagnose(
    readings: list[FileReading],
    rules: Rules,
    *,
    top: int = 5,
    started: float | None = None,
    recorder: FlightRecorderReading | None = None,
    file_ranks: dict[int, int] | None = None,
    source_ranks: dict[str, int] | None = None,
) -> Diagnosis:
    """Merge the readings of a job's files (in file order), and what the Flight Recorder dumps say, into one
    job model and score every case. `file_ranks` (rank -> bytes of its files, from their paths) says which
    ranks the job has even when they printed nothing: torchrun writes a folder for every local rank."""
    started = started if started is not None else time.perf_counter()
    job = JobParts()
    for reading in readings:
        for reader in READERS:
            reader.job_add(job, reading)
    for reader in READERS:
        if hasattr(reader, "finish"):
            reader.finish(job, rules.messages)
    per_case, facts, all_ranks, all_stacks = job.per_case, job.facts, job.ranks, job.stacks
    dump_groups, failures, harmless, limits = job.dump_groups, job.failures, job.harmless, job.limits

    if len(facts.get("nccl_versions") or []) > 1 or {"<2.24", ">=2.24"} <= set(facts.get("nccl_band") or []):
        facts["nccl_builds_differ"] = True  # nodes (or containers) run different NCCL builds
    _gloo_ranks(all_ranks, gloo_waits([stack for stack, _ in all_stacks]), failures)
    job_rank_facts = rank_facts(all_ranks)
    facts.update(job_rank_facts)
    timeouts, timeout_facts = timeouts_summary(limits, facts.get("ran_for_ms"))
    facts.update(timeout_facts)
    if recorder is not None:
        facts.update(recorder.facts)
    failure = _earliest([f for f in failures if f.kind != "exit"])
    if failure is not None:
        failure = dataclasses.replace(failure, effects=failure_effects(failure, all_stacks))
    world_size = max(facts.get("world_size") or 0, max(file_ranks) + 1 if file_ranks else 0) or None
    apart = seqnum_counters_apart(all_ranks, facts, world_size)
    listed = job.parts.get("launcher_ranks") or set()
    verdict = rank_verdict(all_ranks, world_size, failure if all_ranks else None, counters_apart=apart, listed=listed)
    facts.update(verdict_facts(verdict))
    if job_rank_facts.get("ranks_disagree"):
        facts["ranks_disagree"] = True
    if all_stacks:
        facts["stack_frames"] = sorted({s.frames[0] for s, _ in all_stacks})[:50]
        collectives = stack_collectives([s for s, _ in all_stacks if not failure_exception(s)])
        if collectives:
            facts["stack_collectives"] = collectives
            if len(collectives) > 1:
                facts["ranks_disagree"] = True
    if any(stack.kind != "traceback" or not failure_exception(stack) for stack, _ in all_stacks):
        facts["rank_stacks"] = "present"  # what a hang's next capture need not ask for again
    if recorder is not None or any(key.startswith("fr_") for key in facts):
        facts["flight_recorder"] = "present"
    if failure:
        facts["first_failure"] = failure.kind
        if failure.rank is not None:
            facts["first_failure_rank"] = failure.rank
        fired = any(limit.get("fired") for limit in (timeouts or {}).get("limits", []))
        facts["failed_before_timeout"] = not facts.get("timed_out_ranks") and not fired
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
    partial = any(r.partial for r in readings)
    stats = {
        "bytes": sum(r.bytes for r in readings),
        "lines": sum(r.lines for r in readings),
        "ms": round(elapsed_ms, 1),
        "files": len(readings),
        **({"partial": True} if partial else {}),
    }
    facts, cut = facts_bounded(facts)
    if cut:
        stats["facts_cut"] = cut
    repairs = sorted({note for r in readings for note in r.repairs})
    groups_of_stacks = stack_groups(all_stacks)
    where = rank_groups_build(
        verdict=verdict,
        stack_groups=groups_of_stacks,
        # a rank the debug server's fr_trace places in a collective is placed there before "did not answer"
        recorder_groups=(recorder.groups if recorder else [])
        + sorted(dump_groups, key=lambda g: g.get("basis") == "debug-server"),
        file_ranks=file_ranks or {},
        world_size=world_size,
        matches=[m for m in matches[:top] if m.confidence >= CONFIDENT],
        steps=rules.steps,
        source_ranks=source_ranks,
    )
    return Diagnosis(
        matches=matches[:top],
        facts=facts,
        verdict=verdict,
        stats=stats,
        harmless=harmless,
        failure=failure,
        repairs=repairs,
        stack_groups=groups_of_stacks,
        recorder=recorder,
        rank_groups=where,
        timeouts=timeouts,
        parts=job.parts,
    )


def _gloo_ranks(ranks: dict[int, RankState], waits: list, failures: list[Failure]) -> None:
    """A gloo timeout reads like a watchdog's: the rank whose traceback ends in one waited in that collective. A
    traceback that names no rank (PyTorch <= 2.1 prints no "[rankN]:" prefix) is that of the one rank torchrun's
    failure table says exited with an error, when the log holds one such traceback and the table one such rank."""
    unnamed = [wait for wait in waits if wait.rank is None]
    exited = {f.rank for f in failures if f.kind == "exit" and f.rank is not None}
    for wait in waits:
        rank = wait.rank
        if rank is None and len(unnamed) == 1 and len(exited) == 1:
            rank = next(iter(exited))
        if rank is not None and rank not in ranks:
            ranks[rank] = RankState(rank=rank, op=wait.op, timeout_ms=wait.timeout_ms, line=wait.line)


def _frame_signals(rules: Rules, stacks: list[tuple[Stack, str | None]], per_case: dict[str, dict]) -> None:
    """A frame signature counts when one of the innermost `depth` frames of a stack matches it. Only stacks
    that show where a process waits count: dumps (py-spy, faulthandler, gdb) and tracebacks that end in an
    interrupt or a timeout. A traceback of an error shows where it crashed, which is the error's evidence."""
    waiting = [(stack, source) for stack, source in stacks if stack.kind != "traceback" or not failure_exception(stack)]
    for frame in rules.frames:
        count = 0
        first: Evidence | None = None
        for stack, source in waiting:
            for index, name in enumerate(stack.frames[: frame.depth]):
                match = frame.regex.search(name)
                if match:
                    count += 1
                    if first is None:
                        where = f" (rank {stack.rank})" if stack.rank is not None else ""
                        first = Evidence(
                            line=stack.frame_lines[index],
                            text=f"{stack.kind} frame{where}: {name}",
                            signal=frame.id,
                            source=source,
                            span=(0, 0),
                        )
                    break
        if count:
            entry = per_case.setdefault(frame.case, {"signals": {}, "evidence": []})
            entry["signals"][frame.id] = {
                "id": frame.id,
                "description": frame.description,
                "weight": frame.weight,
                "anchor": frame.anchor,
                "count": count,
                "kind": "frame",
            }
            entry["evidence"].append(first)


def _condition_signals(rules: Rules, facts: dict[str, Any], per_case: dict[str, dict]) -> None:
    for condition in rules.conditions:
        if not condition_holds(condition, facts):
            continue
        entry = per_case.get(condition.case)
        if entry is None and condition.weight <= 0:
            continue  # evidence against a case nothing else pointed at changes nothing
        entry = per_case.setdefault(condition.case, {"signals": {}, "evidence": []})
        entry["signals"][condition.id] = {
            "id": condition.id,
            "description": condition.description,
            "weight": condition.weight,
            "anchor": condition.anchor,
            "count": 1,
            "kind": "condition",
            "fact": condition.fact,
        }


def _case_match(slug: str, entry: dict[str, Any], rules: Rules, facts: dict[str, Any]) -> CaseMatch:
    signals = list(entry["signals"].values())
    score = round(sum(s["weight"] for s in signals), 2)
    anchored = any(s["anchor"] for s in signals)
    evidence = sorted(entry["evidence"], key=lambda e: (e.source or "", e.line))
    described = [{k: v for k, v in s.items() if k != "anchor"} for s in sorted(signals, key=lambda s: -s["weight"])]
    step, not_for = _fix_step(rules.steps.get(slug, []), {s["id"]: s["weight"] for s in signals}, facts)
    return CaseMatch(
        slug=slug,
        score=score,
        confidence=confidence_from(score, anchored),
        evidence=evidence,
        signals=described,
        kind="guide" if slug in rules.guides else "cause",
        fix_step=step,
        steps_not_for_versions=not_for,
    )


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
    """A step holds unless the log's version (or, with none printed, the range its wording implies) is
    outside the step's range."""
    for software, spec in step.versions.items():
        read = facts.get(VERSION_FACTS.get(software, ""))
        if read:
            if not version_in(str(read), spec):
                return False
            continue
        band = facts.get(BAND_FACTS.get(software, ""))
        if band and versions_overlap(software, list(band)) and not versions_overlap(software, [*band, spec]):
            return False
    return True


def _earliest(failures: list[Failure]) -> Failure | None:
    """The earliest failure: by time when every one has a time, else the first in file order (each file's own
    earliest, torchrun's root cause where its table names a kill). A launcher's epilogue (a bare exit code) is
    never one: the caller leaves those out."""
    if not failures:
        return None
    timed = [f for f in failures if f.time]
    if len(timed) == len(failures) and len(failures) > 1:
        return min(failures, key=lambda f: f.time)
    return failures[0]
