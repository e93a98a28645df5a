"""A job's files read on all cores (the command line): the command and the workers it forks claim the job's units
(whole files, and the windows of a file that holds a large share of the job's bytes) in blocks as they go, workers
from the front and the command from the back. A reader whose core is slowed by other work (another user's job on a
login node, a noisy neighbour on a VM) claims less, and the others read on, where equal shares fixed in advance
waited for the slowest core. Each reader reads consecutive windows of one file as one run, and the runs are joined
in file order (readings_join): the same reading as one pass over every file."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import pickle
import signal
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from diagnosis.reading import FileReading, FileSpans, file_spans, readings_join, source_read, spans_read
from diagnosis.rules import Rules
from diagnosis.scan.presence import ScanPlan, parallel_worker, scanning_prepare

Run = tuple[int, int, FileReading]  # the units first..stop-1 of a job, read as one reading


class Claims:
    """The units of a job not yet claimed, shared by the command and the workers it forks: a worker takes a block
    from the front, the command from the back, each a share of what is left that shrinks as the job runs out, so
    the last blocks are single units and no reader waits long for another.

    The two counters sit in a temporary file and a claim holds a POSIX record lock on it while it reads and moves
    them: the kernel lets go of a lock whose process dies holding it (the OOM killer), where a semaphore would stay
    taken and leave the others waiting for ever."""

    def __init__(self, count: int, readers: int) -> None:
        import tempfile  # only for a parallel read: random, shutil and their codecs are 3 ms of every start otherwise

        self._file = tempfile.TemporaryFile()
        self._readers = readers
        os.pwrite(self._file.fileno(), struct.pack("=qq", 0, count), 0)

    def take(self, from_back: bool) -> range | None:
        """The next block of unit indices, or None once every unit is claimed."""
        fd = self._file.fileno()
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            front, back = struct.unpack("=qq", os.pread(fd, 16, 0))
            left = back - front
            if left <= 0:
                return None
            size = max(1, left // (2 * self._readers))
            if from_back:
                block, back = range(back - size, back), back - size
            else:
                block, front = range(front, front + size), front + size
            os.pwrite(fd, struct.pack("=qq", front, back), 0)
            return block
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class Job:
    """What every reader needs, made once by the command and inherited by its workers through the fork."""

    rules: Rules
    paths: list[Path]
    labels: list[str | None]
    units: list[tuple[int, int | None]]  # (file, window) in the job's order; no window: the whole file
    cuts: dict[int, FileSpans]  # the windows of each file read as windows
    deadline: float | None
    readers: int


def paths_read(
    rules: Rules, paths: list[Path], labels: list[str | None], deadline: float | None, workers: int
) -> list[FileReading]:
    """One reading per file of `paths`, read by up to `workers` processes, the calling one among them: it claims
    and reads too rather than wait, and goes on once it has every reading, while the workers exit."""
    sizes = [path.stat().st_size for path in paths]
    total = sum(sizes) or 1
    with contextlib.ExitStack() as opened:
        units: list[tuple[int, int | None]] = []
        cuts: dict[int, FileSpans] = {}
        for index, (path, size) in enumerate(zip(paths, sizes)):
            # A file is cut into windows when it holds enough of the job's bytes to keep two readers busy.
            cut = file_spans(opened.enter_context(path.open("rb"))) if round(workers * size / total) >= 2 else None
            if cut is None:
                units.append((index, None))
            else:
                cuts[index] = cut
                units += [(index, window) for window in range(len(cut.spans))]
        if len(units) < 2:
            return _read_here(rules, paths, labels, deadline)
        job = Job(rules, paths, labels, units, cuts, deadline, min(workers, len(units)))
        scanning_prepare(rules.literals)  # compiled once here, inherited through the fork instead of made in each
        try:
            claims = opened.enter_context(contextlib.closing(Claims(len(units), job.readers)))
        except OSError:  # no temporary file to share (a full or read-only temp dir): one process reads it all
            return _read_here(rules, paths, labels, deadline)
        started: list[tuple[int, int]] = []
        try:
            for _ in range(job.readers - 1):
                try:
                    started.append(_worker_fork(job, claims))
                except OSError:  # the process limit or memory reached: the readers there are claim the rest
                    break
            with parallel_worker():
                runs = _claims_read(job, lambda: claims.take(from_back=True), forward=False)
                while started:
                    runs += _worker_runs(*started.pop(0))
                if not _past(deadline):  # what a killed worker had claimed
                    runs += _claims_read(job, _once(_unread(runs, len(units))), forward=False)
        finally:
            for pid, results in started:  # the command failed first: a closed pipe ends each worker's sending
                os.close(results)
                _reaped(pid)
    return _joined(job, runs)


def _read_here(rules: Rules, paths: list[Path], labels: list[str | None], deadline: float | None) -> list[FileReading]:
    """Every file read by the calling process alone."""
    return [source_read(path, rules, label=label, deadline=deadline) for path, label in zip(paths, labels)]


def _worker_fork(job: Job, claims: Claims) -> tuple[int, int]:
    """A worker forked from the command, which inherits the job, the open files and the claims: it reads blocks
    claimed from the front and sends its runs back through a pipe. Its pid and the pipe's end to read."""
    results, sent = os.pipe()
    command = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(results)
        os.close(sent)
        raise
    if pid == 0:
        code = 1
        try:
            os.close(results)
            _ends_with(command)
            with parallel_worker():
                runs = _claims_read(job, lambda: claims.take(from_back=False), forward=True)
            with open(sent, "wb") as pipe:
                pickle.dump(runs, pipe, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:  # never back into the command's code: no exit handlers, no buffers flushed twice
            os._exit(code)
    os.close(sent)
    return pid, results


_PR_SET_PDEATHSIG = 1  # Linux's prctl option: a signal for this process when its parent ends


def _ends_with(command: int) -> None:
    """This worker is killed when the command ends (Linux): a command killed by hand, by `timeout` or by a job's
    time limit otherwise leaves its workers reading the rest of the job on a shared login node, for no one."""
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):  # not Linux: the worker ends when its pipe breaks, after its claims
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != command:  # the command ended before the call: no signal will come
        os._exit(1)


def _worker_runs(pid: int, results: int) -> list[Run]:
    """A worker's runs, or none when it died before sending them all (killed by the OOM killer or a signal, or an
    error): the units it had claimed are then read by the command (_unread)."""
    with open(results, "rb") as pipe:
        sent = pipe.read()
    _reaped(pid)
    try:
        return pickle.loads(sent)
    except Exception:  # cut short: EOFError, UnpicklingError, or whatever a truncated stream decodes to
        return []


def _reaped(pid: int) -> None:
    """The worker's exit collected in a thread of its own: the command need not wait for the kernel to take down the
    worker's memory (4-6 ms), and leaves no zombie behind in a long-lived process."""
    threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True, name="worker-reaper").start()


def _joined(job: Job, runs: list[Run]) -> list[FileReading]:
    """Each file's runs joined in order. Where a unit of a file was left unread (the deadline passed before anyone
    claimed it), its reading stops there and is partial, as one pass stops at the deadline."""
    files: dict[int, list[Run]] = {index: [] for index in range(len(job.paths))}
    for run in sorted(runs, key=lambda run: run[0]):
        files[job.units[run[0]][0]].append(run)
    starts = {index: unit for unit, (index, _) in reversed(list(enumerate(job.units)))}
    ends = {index: unit + 1 for unit, (index, _) in enumerate(job.units)}
    readings = []
    for index, file_runs in files.items():
        parts: list[FileReading] = []
        at = starts[index]
        for first, stop, reading in file_runs:
            if first != at:
                break
            parts.append(reading)
            at = stop
        joined = readings_join(parts) if parts else FileReading(label=job.labels[index])
        joined.partial = joined.partial or at != ends[index]
        readings.append(joined)
    return readings


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


def _claims_read(job: Job, take: Callable[[], Iterable[int] | None], *, forward: bool) -> list[Run]:
    """Read what `take` hands out until it hands out nothing. Consecutive windows of one file are one run; a reader
    taking from the front (`forward`) goes on claiming as its run reaches the end of its block, so its run grows
    for as long as nobody else claims in between (on two cores, one run for the worker)."""
    runs: list[Run] = []
    pending: deque[int] = deque()
    plans: dict[int, ScanPlan] = {}  # one plan per file, made by the reader's first run of it

    def claimed() -> bool:
        if not pending:
            block = take()
            if block is None:
                return False
            pending.extend(block)
        return True

    while claimed():
        first = pending.popleft()
        index, window = job.units[first]
        label = job.labels[index]
        if window is None:
            reading = source_read(job.paths[index], job.rules, label=label, deadline=job.deadline)
            runs.append((first, first + 1, reading))
            if reading.partial:
                break
            continue
        stop = first + 1

        def run_windows() -> Iterator[int]:
            nonlocal stop
            yield window
            while (pending or (forward and claimed())) and pending[0] == stop and job.units[stop][0] == index:
                pending.popleft()
                stop += 1
                yield job.units[stop - 1][1]

        cut = job.cuts[index]
        reading, plans[index] = spans_read(
            cut,
            run_windows(),
            job.rules,
            label=label,
            deadline=job.deadline,
            windows_hint=len(cut.spans) // job.readers,
            plan=plans.get(index),
        )
        runs.append((first, stop, reading))
        if reading.partial:  # the deadline passed: what is left stays unread (see _joined)
            break
    return runs


def _unread(runs: list[Run], count: int) -> list[int]:
    """The units no run covers: those a killed worker had claimed."""
    covered = set()
    for first, stop, _ in runs:
        covered.update(range(first, stop))
    return [unit for unit in range(count) if unit not in covered]


def _once(units: list[int]) -> Callable[[], Iterable[int] | None]:
    """A `take` that hands out `units` in one block, then nothing."""
    given = [units] if units else []
    return lambda: given.pop() if given else None
