"""Failures that come first: a rank killed by the kernel, a GPU fault, a crash or a Python exception
explains the collective timeouts that follow it on the other ranks (cause before effect).

torchrun's error summary names the first failure itself ("Root Cause (first observed failure)"), and it
is read first; otherwise the earliest failure line of the log wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnosis.scan.literals import required_literals
from diagnosis.scan.scanner import TextScanner
from diagnosis.readers.stacks import Stack, stacks_extract
from diagnosis.text import TAG_OUTPUT_PREFIX, TORCHRUN_PREFIX, LineLocator, text_clipped
import dataclasses

from diagnosis.readers.base import FileReading, JobParts, Window


@dataclass(frozen=True)
class Failure:
    # sigkill | oom-kill | signal | cuda-error | ecc-error | exception | exit (a launcher's table names a rank that ended
    # with a bare non-zero exit code, SIGABRT, SIGTERM or SIGINT: the epilogue of a failure, never its cause)
    kind: str
    line: int
    text: str
    rank: int | None = None
    time: str | None = None
    source: str | None = None
    start_line: int | None = None  # where the text that reports it starts (a table's header), when not `line`
    frame: str | None = None  # an exception's innermost frame (path:function), where to look first
    frame_line: int | None = None  # the log line of that frame
    effects: tuple[str, ...] = ()  # other ranks' errors that follow from it ("rank 0: RuntimeError: ... closed by peer")


def _rule(kind: str, pattern: str) -> tuple[str, re.Pattern, tuple[str, ...]]:
    return kind, re.compile(pattern, re.MULTILINE), required_literals(pattern)


# mpirun (Open MPI's orterun/prterun help text "proc-aborted-strsignal": "%s noticed that process rank %lu with PID %lu
# on node %s exited on signal %d (%s).")
_MPIRUN_SIGNAL = r"noticed that process rank \d+ with PID \d+ on node \S+ exited on signal "

# Lines that are failures in their own right, never the effect of another rank's timeout.
FAILURE_RULES = (
    _rule("oom-kill", r"Out of memory: Killed process \d+|Memory cgroup out of memory: Killed process \d+"),
    _rule("oom-kill", r"\boom-kill:constraint=|\boom_reaper: reaped process \d+"),
    _rule("sigkill", r"Signal 9 \(SIGKILL\) received by PID \d+"),
    _rule("sigkill", r"died with <Signals\.SIGKILL: 9>|exited with code 137\b|exit code: 137\b"),
    # torch elastic's agent (api.py) and DeepSpeed's launcher (launch.py sigkill_handler) on a worker killed by SIGKILL
    _rule("sigkill", r"failed \(exitcode: -9\) local_rank: \d+|exits with return code = -9\b"),
    _rule("sigkill", _MPIRUN_SIGNAL + r"9\b"),
    # bash's notice of a job ended by SIGKILL (jobs.c): a script's "<name>: line N: PID Killed  command"; an
    # interactive shell's bare "Killed", printed where the cursor was, so often after a progress bar's last redraw
    # (srun's "task N: Killed" is not one: Slurm reports so the tasks it killed itself once another failed)
    _rule("sigkill", r"line \d+: +\d+ Killed +\S|(?:^|[\]|]|[^:] )Killed[ \t]*$"),
    _rule("ecc-error", r"uncorrectable ECC error encountered"),
    _rule("ecc-error", r"NVRM: Xid \([^)\n]{0,80}\): (?:48|63|64|92|94|95),"),
    _rule("cuda-error", r"NVRM: Xid \([^)\n]{0,80}\): (?:74|79),|GPU has fallen off the bus"),
    _rule(
        "cuda-error",
        r"CUDA error: (?:an illegal memory access was encountered|unspecified launch failure|"
        r"an illegal instruction was encountered|misaligned address|uncorrectable NVLink error detected)",
    ),
    _rule(
        "signal",
        r"Signal (?:4|7|11) \(SIG(?:ILL|BUS|SEGV)\) received by PID \d+|Fatal Python error: (?:Segmentation fault|Bus error)"
        rf"|{_MPIRUN_SIGNAL}(?:4|7|11)\b",
    ),
)
LITERALS = tuple(lit for _, _, lits in FAILURE_RULES for lit in lits) + ("Root Cause (first observed failure)",)

_ROOT_CAUSE = "Root Cause (first observed failure)"
_TABLE_FIELD = re.compile(r"\s{0,40}(?:\[\d+\]:?\s*)?(time|rank|exitcode|traceback)\s*:\s*([^\n]{1,300})$")
_EXITCODE = re.compile(r"(-?\d+)")
_SIGNALS = {-9: "sigkill", -7: "signal", -11: "signal", -4: "signal"}
# An exception that reports a distributed timeout or abort is the effect, not the cause.
_EFFECT_WORDS = (
    "imeout",
    "timed out",
    "Timed out",
    "DistBackendError",
    "DistNetworkError",
    "DistStoreError",
    "ChildFailedError",
    "KeyboardInterrupt",
    "SignalException",
    "NCCL",
    "ProcessGroup",
    "watchdog",
    "Connection",
    "Broken pipe",
    "SystemExit",
    "aborted",
    "Gloo",
    "monitoredBarrier",  # ProcessGroupGloo::monitoredBarrier: a rank that waited for another (both sides name it)
)
_RANK_NEAR = re.compile(rf"{TORCHRUN_PREFIX}|\[Rank (\d{{1,5}})\]|{TAG_OUTPUT_PREFIX}|\brank[ :=]{{1,3}}(\d{{1,5}})\b")
_TIME = re.compile(
    r"(\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d)|[EWIF](\d{4} \d\d:\d\d:\d\d)|\[(\w{3} \w{3} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4})\]"
)


def first_failure(scanner: TextScanner, lines: LineLocator, stacks: list[Stack], source: str | None = None) -> Failure | None:
    """The failure that came first in one text: torchrun's own root cause when it printed one, else the
    earliest failure line or non-distributed exception."""
    root = _root_cause(scanner, lines, source)
    if root is not None and root.kind != "exit":
        return root
    found: list[tuple[int, Failure]] = []
    for kind, regex, literals in FAILURE_RULES:
        match = next(scanner.matches(regex, literals), None)
        if match:
            offset = match.start()
            line_text = lines.line_text(offset, limit=300)
            number = lines.line_number(lines.line_start(offset))  # where the text shown begins
            found.append((offset, Failure(kind, number, line_text, _rank_in(line_text), _time_in(line_text), source)))
    for index, stack in enumerate(stacks):
        if failure_exception(stack):
            raised = _original(stack, stacks[index + 1 : index + 2])
            found.append(
                (
                    stack.offset,
                    Failure(
                        "exception",
                        stack.line,
                        raised.exception or stack.exception,
                        # a rank named on a line above an unprefixed traceback is as often another rank's output
                        None if stack.rank_nearby else stack.rank,
                        None,
                        source,
                        frame=raised.frames[0] if raised.frames else None,
                        frame_line=raised.frame_lines[0] if raised.frame_lines else None,
                    ),
                )
            )
            break
    if not found:
        return root  # a plain non-zero exit: what failed is not known, only that something did
    return min(found, key=lambda item: item[0])[1]


# A launcher's own closing traceback (torchrun's `sys.exit(main())` down to `raise ChildFailedError(`), which reports
# that a worker failed, never why: frames of the launcher, innermost first
_LAUNCHER_FRAMES = re.compile(
    r"torch/distributed/(?:launcher/api\.py:launch_agent|run\.py:(?:main|run)|elastic/multiprocessing/errors/__init__\.py:wrapper)$"
    r"|torch/distributed/launch\.py:(?:sigkill_handler|main)$"  # torch.distributed.launch (<= 1.8): CalledProcessError
    r"|deepspeed/launcher/(?:runner|launch)\.py:main$|/torchrun:<module>$"
)


# torch.utils.data re-raises a loader worker's exception in the main process as "<Type>: Caught <Type> in DataLoader
# worker process N." followed by "Original Traceback (most recent call last):" and the worker's own frames
# (torch/_utils.py ExceptionWrapper.reraise, 1.13 to 2.14)
_LOADER_RERAISE = re.compile(r"Caught \w+ in DataLoader worker process \d+")


# What a rank prints when a peer it talks to is gone: gloo's transport, NCCL's aborts and remote errors
_PEER_LOST = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "NCCL", "DistBackendError", "aborted")


def failure_effects(failure: Failure, stacks: list[tuple[Stack, str | None]], limit: int = 8) -> tuple[str, ...]:
    """Other processes' tracebacks that end in a lost peer (gloo's "Connection closed by peer", an NCCL error or
    abort): the effects of `failure`, one "rank N: <error>" each; for an exception, those printed after it."""
    found: list[str] = []
    for stack, source in stacks:
        if stack.kind != "traceback" or not stack.exception or failure_exception(stack):
            continue
        if failure.kind == "exception" and source == failure.source and stack.line <= failure.line:
            continue  # (a kill that torchrun's table reports at the end came before the errors printed above it)
        if not any(word in stack.exception for word in _PEER_LOST):
            continue
        rank = stack.rank if stack.rank is not None and not stack.rank_nearby else None
        found.append(f"{'rank ' + str(rank) if rank is not None else 'a process'}: {text_clipped(stack.exception, 160)}")
        if len(found) >= limit:
            break
    return tuple(found)


def _original(stack: Stack, following: list[Stack]) -> Stack:
    """The traceback that says where an exception was raised: a loader worker's own (the next traceback, of the same
    rank) for an exception the DataLoader re-raised, else the stack itself."""
    if stack.exception and _LOADER_RERAISE.search(stack.exception):
        end = stack.frame_lines[0] if stack.frame_lines else stack.line
        for later in following:
            same = later.rank == stack.rank or later.rank_nearby or stack.rank_nearby
            if later.kind == "traceback" and same and later.frames and later.line - end <= 6:
                return later
    return stack


def failure_exception(stack: Stack) -> bool:
    """A traceback that ends in an error of its own (not an interrupt, nor a distributed timeout or abort,
    which are what waiting looks like when it is cut short, nor a launcher's report that a worker failed)."""
    return (
        stack.kind == "traceback"
        and bool(stack.exception)
        and not any(w in stack.exception for w in _EFFECT_WORDS)
        and not any(_LAUNCHER_FRAMES.search(frame) for frame in stack.frames[:4])
    )


def _root_cause(scanner: TextScanner, lines: LineLocator, source: str | None) -> Failure | None:
    """torchrun's error summary: the "Root Cause (first observed failure)" entry, unless another entry of the
    same table ("Failures:") shows a process killed by a signal. On PyTorch up to 2.1 the surviving rank that
    saw its peer vanish ("Connection closed by peer", exit code 1) can be listed as the root cause while the
    rank the kernel killed (-9) sits under Failures: the kill came first."""
    span = next(iter(scanner.lines_with(_ROOT_CAUSE)), None)
    if span is None:
        return None
    text = scanner.text
    table_start = text.rfind("Failures:", max(0, span[0] - 20_000), span[0])
    entries = _table_entries(text, table_start if table_start != -1 else span[0], span[0])
    root = _table_entries(text, span[1] + 1, None, limit=1)
    killed = [e for e in entries + root if e["exitcode"] in _SIGNALS and e["exitcode"] != -6]
    chosen = min(killed, key=lambda e: (e.get("time") or "", e["exitcode"] != -9)) if killed else (root[0] if root else None)
    if chosen is None:
        return None
    exitcode = chosen["exitcode"]
    # SIGABRT is how ProcessGroupNCCL's watchdog takes a process down after a timeout, SIGTERM and SIGINT how the agent
    # and a user stop workers: the table saying so names no cause of its own, only that the rank ended ("exit")
    kind = _SIGNALS.get(exitcode, "exit" if exitcode > 0 or exitcode in (-6, -15, -2) else "signal")
    return Failure(
        kind,
        lines.line_number(chosen["offset"]),
        f"exitcode {exitcode}: {chosen.get('traceback', '')}"[:300],
        chosen.get("rank"),
        chosen.get("time"),
        source,
        start_line=lines.line_number(span[0]),
    )


def launcher_ranks(scanner: TextScanner, start: int = 0, limit: int | None = None) -> list[int]:
    """The ranks torchrun's failure table lists (under "Failures:" and "Root Cause"), for tables whose "Root Cause"
    line lies in [start, limit): each is a process of the job, whether it failed, timed out or was stopped (-15)."""
    text = scanner.text
    ranks: set[int] = set()
    for span in scanner.lines_with(_ROOT_CAUSE):
        if not start <= span[0] < (len(text) if limit is None else limit):
            continue
        table_start = text.rfind("Failures:", max(0, span[0] - 20_000), span[0])
        entries = _table_entries(text, table_start if table_start != -1 else span[0], span[0])
        entries += _table_entries(text, span[1] + 1, None, limit=1)
        ranks |= {e["rank"] for e in entries if e.get("rank") is not None}
    return sorted(ranks)


def _table_entries(text: str, start: int, end: int | None, limit: int = 16) -> list[dict]:
    """Entries (`[N]:` then `time`, `rank`, `exitcode`, `traceback` fields) of a torchrun failure table."""
    entries: list[dict] = []
    current: dict | None = None
    pos = start
    stop = len(text) if end is None else end
    for _ in range(limit * 10):
        if pos >= stop:
            break
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end == -1 else line_end
        match = _TABLE_FIELD.match(text, pos, min(line_end, pos + 400))
        if match:
            if current is None or match.group(1) in current:
                if len(entries) >= limit:
                    break
                current = {"offset": pos}
                entries.append(current)
            value = match.group(2).strip()
            if match.group(1) == "exitcode":
                code = _EXITCODE.match(value)
                current["exitcode"] = int(code.group(1)) if code else 0
            elif match.group(1) == "rank":
                rank = re.match(r"(\d+)", value)
                current["rank"] = int(rank.group(1)) if rank else None
            else:
                current[match.group(1)] = value
        elif current is not None and text.startswith(("=====", "-----"), pos) and end is None:
            break
        pos = line_end + 1
    return [e for e in entries if "exitcode" in e]


def _rank_in(line: str) -> int | None:
    match = _RANK_NEAR.search(line)
    return int(next(g for g in match.groups() if g is not None)) if match else None


def _time_in(line: str) -> str | None:
    match = _TIME.search(line)
    return next(g for g in match.groups() if g is not None) if match else None


class EventsReader:
    """The first failure of a file (a signal, an exception, a CUDA error, the OOM killer, torchrun's root cause)."""

    name = "events"
    literals = frozenset((literal, False) for literal in LITERALS)

    def read(self, window: Window, part: FileReading) -> None:
        failure = first_failure(window.scanner, window.lines, part.stacks, window.label)
        if failure is not None and failure.kind == "exception" and _LOADER_RERAISE.search(failure.text):
            # the worker's own traceback may start past this window's part, in its look-ahead
            ahead = [s for s in stacks_extract(window.scanner, window.lines) if s.offset >= window.start]
            failure = first_failure(window.scanner, window.lines, ahead, window.label)
        if failure is not None and not window.whole:
            first_own = window.lines.line_number(window.start)
            last_own = window.lines.line_number(max(window.start, window.limit - 1))
            if not first_own <= (failure.start_line or failure.line) <= last_own:
                failure = None  # it starts in the look-behind or look-ahead: another window's
        part.failure = failure
        listed = launcher_ranks(window.scanner, window.start, window.limit)
        if listed:
            part.parts["launcher_ranks"] = listed

    def merge(self, into: FileReading, later: FileReading) -> None:
        into.failure = into.failure or later.failure
        listed = sorted(set(into.parts.get("launcher_ranks", [])) | set(later.parts.get("launcher_ranks", [])))
        if listed:
            into.parts["launcher_ranks"] = listed

    def shift(self, part: FileReading, by: int) -> None:
        if part.failure is not None:
            start_line = part.failure.start_line
            frame_line = part.failure.frame_line
            part.failure = dataclasses.replace(
                part.failure,
                line=part.failure.line + by,
                start_line=None if start_line is None else start_line + by,
                frame_line=None if frame_line is None else frame_line + by,
            )

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        if reading.failure:
            job.failures.append(reading.failure)
        job.parts.setdefault("launcher_ranks", set()).update(reading.parts.get("launcher_ranks", []))


READER = EventsReader()
