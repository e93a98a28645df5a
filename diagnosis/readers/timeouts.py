"""The time limits a job's log shows, and which one ends a hang first.

A hung job is bounded by several clocks that users set in different places and often confuse: the process
group's collective timeout (the watchdog's `Timeout(ms)=`), the framework setting meant to feed it (Trainer
`ddp_timeout`, Megatron-LM `--distributed-timeout-minutes`, DeepSpeed `DEEPSPEED_TIMEOUT`), PyTorch's
heartbeat monitor (`TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC`, which watches the watchdog thread, not a collective),
start-up limits (TCPStore, torchrun's rendezvous) and whole-job limits (Slurm `--time`, `mpirun --timeout`).
This reader lists the ones the log prints, with the line, and says which fires first for a collective that
never completes, and when a framework setting did not reach the process group that timed out.

Wordings, from the emitting code: ProcessGroupNCCL's watchdog line and its INFO lines "ProcessGroupNCCL
initialization options: ... TIMEOUT(ms): N" and "ProcessGroupNCCL environments: ...
TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: N" (printed with TORCH_CPP_LOG_LEVEL=INFO; the heartbeat field from 2.2);
"watchdog got stuck for N seconds" (heartbeat monitor, 2.3 on); gloo's "Timed out waiting Nms for recv operation
to complete" and ProcessGroupGloo's "failed to pass monitoredBarrier in N ms"; the TrainingArguments print (`ddp_timeout=N,`);
Megatron-LM's argument table (`distributed_timeout_minutes ..... N`); TCPStore's "Timed out after N seconds
waiting for clients" and "wait timeout after Nms"; Slurm's "DUE TO TIME LIMIT".
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from diagnosis.scan.literals import required_literals
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator
import dataclasses

from diagnosis.readers.base import FileReading, JobParts, Window

PG_TIMEOUT = "the process group's timeout"
LATE_S = 600  # a watchdog this much later than its limit (and later than the limit is long) was not checking
MAX_LINES_PER_RULE = 64  # watchdog lines repeat once per rank; the first few say all there is
MAX_SEEN = 32
SLURM_TIME = r"(?:\d{1,4}-)?\d{1,6}(?::\d{1,2}){0,2}"
# A launcher's own options come before the program: each an option with at most one value, so a program's `-t 5`
# or `--timeout 30` after `python train.py` is not read as the launcher's limit.
LAUNCHER_OPTIONS = r"(?:[ \t]+-[^\s]{1,80}(?:[ \t]+[^\s-][^\s]{0,200})?){0,30}?"


@dataclass(frozen=True)
class TimeoutRule:
    kind: str  # collective | framework | heartbeat | startup | job
    setting: str  # what a user sets (or reads) to change it
    pattern: re.Pattern
    unit: float  # seconds per unit of the captured number (1/1000 for ms, 60 for minutes)
    fired: bool = False  # the line itself says this limit ran out

    @property
    def literals(self) -> tuple[str, ...]:
        return required_literals(self.pattern.pattern)


def _rule(kind: str, setting: str, pattern: str, unit: float = 1.0, fired: bool = False) -> TimeoutRule:
    return TimeoutRule(kind, setting, re.compile(pattern, re.MULTILINE), unit, fired)


RULES: tuple[TimeoutRule, ...] = (
    _rule("collective", PG_TIMEOUT, r"WorkNCCL\([^)\n]{0,300}?Timeout\(ms\)=(\d{1,12})\) ran for", 0.001, True),
    _rule("collective", PG_TIMEOUT, r"ProcessGroupNCCL initialization options: [^\n]{0,200}?TIMEOUT\(ms\): (\d{1,12})", 0.001),
    # Gloo (CPU) groups: gloo's transport reports the group's timeout when a send or receive runs out.
    _rule("collective", PG_TIMEOUT, r"Timed out waiting (\d{1,12})ms for (?:recv|send) operation to complete", 0.001, True),
    _rule("collective", "monitored_barrier's timeout", r"failed to pass monitoredBarrier in (\d{1,12}) ms", 0.001, True),
    _rule("framework", "ddp_timeout (transformers Trainer)", r"(?<![\w.])ddp_timeout=(\d{1,9}),"),
    _rule("framework", "ddp_timeout (transformers Trainer)", r"--ddp_timeout[= ](\d{1,9})\b"),
    _rule("framework", "ddp_timeout (transformers Trainer)", r"--ddp-timeout[= ](\d{1,9})\b"),
    _rule("framework", "--distributed-timeout-minutes (Megatron-LM)", r"\bdistributed_timeout_minutes \.{2,60} (\d{1,6})\b", 60),
    _rule("framework", "--distributed-timeout-minutes (Megatron-LM)", r"--distributed-timeout-minutes[= ](\d{1,6})\b", 60),
    _rule("framework", "DEEPSPEED_TIMEOUT (DeepSpeed, minutes)", r"\bDEEPSPEED_TIMEOUT[=:] ?'?(\d{1,6})\b", 60),
    _rule("heartbeat", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", r"\bTORCH_NCCL_HEARTBEAT_TIMEOUT_SEC(?:: |=)(\d{1,7})\b"),
    _rule("heartbeat", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", r"watchdog got stuck for (\d{1,7}) seconds", fired=True),
    _rule(
        "startup",
        "TCPStore timeout (init_process_group's timeout)",
        r"Timed out after (\d{1,7}) seconds waiting for clients",
        fired=True,
    ),
    _rule("startup", "TCPStore timeout (init_process_group's timeout)", r"\bwait timeout after (\d{1,10})ms", 0.001, True),
    _rule("startup", "torchrun --rdzv-conf join_timeout", r"--rdzv[_-]conf[= ][^\n]{0,200}?\bjoin_timeout=(\d{1,7})\b"),
    _rule("job", "mpirun --timeout", rf"\b(?:mpirun|mpiexec|prterun){LAUNCHER_OPTIONS}[ \t]+--timeout[= ](\d{{1,7}})\b"),
    _rule(
        "job", "Slurm --time", rf"\b(?:srun|sbatch|salloc){LAUNCHER_OPTIONS}[ \t]+(?:--time[= ]|-t ?)({SLURM_TIME})(?=\s|$)", 60
    ),
    _rule("job", "Slurm --time", rf"^#SBATCH (?:--time[= ]|-t ?)({SLURM_TIME})\s*$", 60),
)
SLURM_LIMIT_HIT = re.compile(r"\*\*\* (?:JOB|STEP) [\w.]{1,40} ON \S{1,100} CANCELLED AT \S{1,40} DUE TO TIME LIMIT")
LITERALS: tuple[str, ...] = tuple(dict.fromkeys(lit for rule in RULES for lit in rule.literals)) + ("DUE TO TIME LIMIT",)

# What each kind of limit bounds, said once for the page, the JSON and the command line.
BOUNDS = {
    "collective": "each collective of the group (timeout= of init_process_group or new_group); the watchdog aborts the job when it runs out",
    "framework": "the timeout the framework passes to init_process_group when it creates the process group",
    "heartbeat": "the watchdog thread itself: it ends a process whose watchdog is stuck (in a CUDA or NCCL call), not a slow collective",
    "startup": "joining the job at start-up (the store and the rendezvous), not collectives",
    "job": "the whole job, whatever it is doing",
}


@dataclass(frozen=True)
class TimeoutSeen:
    kind: str
    setting: str
    seconds: float | None  # None: the log says the limit ran out but not its length (Slurm)
    line: int
    text: str
    fired: bool
    source: str | None = None


def timeouts_extract(scanner: TextScanner, lines: LineLocator, start: int = 0, end: int | None = None) -> list[TimeoutSeen]:
    """Every distinct limit in `scanner.text[start:end]`, with the first line that shows it."""
    end = len(scanner.text) if end is None else end
    found: list[TimeoutSeen] = []
    for rule in RULES:
        for count, match in enumerate(scanner.matches(rule.pattern, rule.literals)):
            if count >= MAX_LINES_PER_RULE:
                break
            seconds = _seconds(match.group(1), rule.unit)
            if seconds is not None and start <= match.start() < end:
                found.append(_seen(rule.kind, rule.setting, seconds, rule.fired, lines, match.start()))
    hit = next((m for m in scanner.matches(SLURM_LIMIT_HIT, ("DUE TO TIME LIMIT",)) if start <= m.start() < end), None)
    if hit is not None:
        found.append(_seen("job", "Slurm --time", None, True, lines, hit.start()))
    seen: list[TimeoutSeen] = []
    timeouts_merge(seen, found, None)
    return seen


def _seen(kind: str, setting: str, seconds: float | None, fired: bool, lines: LineLocator, at: int) -> TimeoutSeen:
    # the line the text shown begins on (a paste's wrapped line, joined again, begins before the match)
    line = lines.line_number(lines.line_start(at))
    return TimeoutSeen(kind, setting, seconds, line, lines.line_text(at, 300).strip(), fired)


def _seconds(value: str, unit: float) -> float | None:
    if ":" in value or "-" in value:
        return _slurm_seconds(value)
    number = int(value) * unit
    return number if number > 0 else None


def _slurm_seconds(value: str) -> float | None:
    """Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch(1), --time)."""
    days, _, clock = value.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, (minutes, seconds) = 0, (parts + [0])[:2]
    total = int(days or 0) * 86400 + hours * 3600 + minutes * 60 + seconds
    return float(total) if total > 0 else None


def timeouts_merge(into: list[TimeoutSeen], new: list[TimeoutSeen], source: str | None) -> None:
    """Add another file's (or window's) limits. One entry per limit and length: the line where it fired wins
    over a line that only states it (the INFO print at start-up), else the first line is kept."""
    index = {(t.kind, t.setting, t.seconds): i for i, t in enumerate(into)}
    for item in new:
        if source and not item.source:
            item = TimeoutSeen(**{**asdict(item), "source": source})
        key = (item.kind, item.setting, item.seconds)
        if key in index:
            if item.fired and not into[index[key]].fired:
                into[index[key]] = item
        elif len(into) < MAX_SEEN:
            index[key] = len(into)
            into.append(item)


def duration_text(seconds: float) -> str:
    """600 -> '600 s (10 min)'; 5400 -> '5400 s (90 min)'; 23825 -> '23825 s (about 6.6 h)'; 45 -> '45 s'."""
    shown = f"{seconds:g} s"
    if seconds < 120:
        return shown
    value, unit = (seconds / 3600, "h") if seconds >= 7200 else (seconds / 60, "min")
    rounded = round(value, 1)
    return f"{shown} ({'' if rounded == value else 'about '}{rounded:g} {unit})"


def _no_collective_limit(ordered: list[TimeoutSeen]) -> str:
    fired = next((t for t in ordered if t.fired), None)
    if fired is None:
        return "The log shows no limit on collectives, only the limits below."
    after = f" after {duration_text(fired.seconds)}" if fired.seconds else ""
    return f"{fired.setting[:1].upper()}{fired.setting[1:]} ran out{after}; the log shows no limit on collectives."


def timeouts_summary(seen: list[TimeoutSeen], ran_for_ms: int | None = None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The limits in the order they would end a collective that never completes, what the log says fired, and
    notes; plus the facts conditions can use. `ran_for_ms`: the longest time a timed-out collective ran, from the
    watchdog lines. (None, {}) when the log shows no limit."""
    if not seen:
        return None, {}
    facts: dict[str, Any] = {}
    notes: list[str] = []
    # equal limits are taken in the log's order, however the file was read (whole, or as windows)
    collective = min(
        (t for t in seen if t.kind == "collective" and t.seconds), key=lambda t: (t.seconds, t.source or "", t.line), default=None
    )
    framework = next((t for t in seen if t.kind == "framework"), None)
    if framework is not None:
        facts["timeout_set_s"] = int(framework.seconds)
    if collective is not None and framework is not None:
        applied = any(t.kind == "collective" and t.seconds == framework.seconds for t in seen)
        facts["timeout_not_applied"] = not applied
        if not applied:
            notes.append(
                f"{framework.setting} is {duration_text(framework.seconds)}, but the process group "
                f"{'that timed out' if collective.fired else 'the log describes'} has {duration_text(collective.seconds)}: "
                "the setting did not reach it. A framework's timeout applies only to a process group it creates itself; "
                "one created earlier (by accelerate, by your code, by another library) keeps its own. Pass the timeout "
                "where that group is created (init_process_group or new_group), or raising it changes nothing."
            )
    bounding = [t for t in (collective or framework,) if t is not None] + [t for t in seen if t.kind == "job" and t.seconds]
    bounding.sort(key=lambda t: (t.seconds, t.source or "", t.line))
    first = bounding[0] if bounding else None
    if first is not None and first.kind == "job" and collective is not None:
        notes.append(
            f"{first.setting} ({duration_text(first.seconds)}) ends the job before the collective timeout "
            f"({duration_text(collective.seconds)}): a hang then leaves no watchdog line and no Flight Recorder dump. "
            "Keep the job limit longer than the collective timeout, with minutes to spare for the dumps."
        )
    late_s = (ran_for_ms or 0) / 1000 - collective.seconds if collective is not None and collective.fired else 0
    if late_s > max(LATE_S, collective.seconds if collective else 0):
        facts["watchdog_late_s"] = int(late_s)
        notes.append(
            f"The watchdog reported the timeout {duration_text(round(late_s))} after it ran out (a collective ran for "
            f"{duration_text(round(ran_for_ms / 1000))} against a limit of {duration_text(collective.seconds)}). It checks "
            "every few seconds, so its thread was held up (in a CUDA or NCCL call) or the whole process was paused (a "
            "suspended job, a frozen node): look at what the host and the GPU were doing, not only at the collective."
        )
    if any(t.kind == "heartbeat" and t.fired for t in seen):
        notes.append(
            "The heartbeat monitor ended a process because its watchdog thread was stuck, usually inside a CUDA or "
            "NCCL call: look at what the GPU or the communicator was doing, not at the collective timeout."
        )
    if any(t.kind == "job" and t.fired for t in seen):
        notes.append("The scheduler ended the job at its time limit: the log stops there, whatever was running.")
    ordered = sorted(seen, key=lambda t: (t.seconds is None, t.seconds or 0, t.kind, t.source or "", t.line))
    summary = (
        f"A collective that never completes is ended first by {first.setting}, after {duration_text(first.seconds)}"
        + (" (it fired)" if first.fired else "")
        + "."
        if first is not None
        else _no_collective_limit(ordered)
    )
    limits = [{**asdict(t), "bounds": BOUNDS[t.kind], "duration": duration_text(t.seconds) if t.seconds else ""} for t in ordered]
    return {
        "summary": summary,
        "first": limits[ordered.index(first)] if first else None,
        "limits": limits,
        "notes": notes,
        # one limit and nothing to say of it repeats the watchdog line: the page and the command line skip it
        "telling": bool(notes) or len(limits) > 1,
    }, facts


class TimeoutsReader:
    """The time limits a file shows, one entry per limit and length."""

    name = "timeouts"
    literals = frozenset((literal, False) for literal in LITERALS)

    def read(self, window: Window, part: FileReading) -> None:
        timeouts_merge(part.timeouts, timeouts_extract(window.scanner, window.lines, window.start, window.limit), None)

    def merge(self, into: FileReading, later: FileReading) -> None:
        timeouts_merge(into.timeouts, later.timeouts, None)

    def shift(self, part: FileReading, by: int) -> None:
        part.timeouts = [dataclasses.replace(seen, line=seen.line + by) for seen in part.timeouts]

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        timeouts_merge(job.limits, reading.timeouts, reading.label)


READER = TimeoutsReader()
