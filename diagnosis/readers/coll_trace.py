"""NCCL's collective trace (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL): one INFO line per collective each process
enqueues, '<Coll>: opCount <hex> ... comm <ptr> [nranks=N] ...' (src/enqueue.cc, NCCL 2.3 to 2.30: the message
catalogue's nccl.enqueue.opcount_sendbuff_recvbuff_count_datatype). Every process of a communicator counts its
collectives the same way, so two processes of one job that enqueued different collectives at the same opCount of
communicators of the same size are out of step: a desync, seen without a watchdog line or a Flight Recorder dump.

Kept per communicator of each process (host:pid, the communicator's size and address): its last LAST_KEPT opCounts and
what each was, so the reading merges across windows, files and processes in any order. A process with two
communicators of one size cannot be lined up with the others by opCount, so that size is left alone.
"""

from __future__ import annotations

import re
from typing import Any

from diagnosis.readers.base import FileReading, JobParts, Window

NAME = "coll_trace"
LINE_RE = re.compile(
    r"(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[\d+\] NCCL INFO (?P<op>[A-Z][A-Za-z]+): opCount (?P<count>[0-9a-f]+) "
    r"sendbuff \S+ recvbuff \S+ count \d+ datatype \d+ op \d+ root \d+ comm (?P<comm>0x[0-9a-f]+|\(nil\)) "
    r"\[nranks=(?P<nranks>\d+)\]"
)
LITERAL = ": opCount "
LAST_KEPT = 16  # opCounts kept per process: a desync shows within the last few collectives before the hang
MAX_PROCESSES = 4096


class CollTraceReader:
    name = NAME
    literals = frozenset({(LITERAL, False)})

    def read(self, window: Window, part: FileReading) -> None:
        seen: dict[str, dict[int, tuple[str, int]]] = {}
        for start, end in window.scanner.lines_with(LITERAL):
            if not window.start <= start < window.limit:
                continue
            match = LINE_RE.search(window.scanner.text, start, end)
            if match is None:
                continue
            process = f"{match['host']}:{match['pid']}/{match['nranks']}/{match['comm']}"
            if process not in seen and len(seen) >= MAX_PROCESSES:
                continue
            ops = seen.setdefault(process, {})
            ops[int(match["count"], 16)] = (match["op"], window.lines.line_number(start))
            _trim(ops)
        if seen:
            part.parts[NAME] = seen

    def merge(self, into: FileReading, later: FileReading) -> None:
        if NAME in later.parts:
            into.parts[NAME] = _merged(into.parts.get(NAME, {}), later.parts[NAME])

    def shift(self, part: FileReading, by: int) -> None:
        for ops in part.parts.get(NAME, {}).values():
            for count, (op, line) in ops.items():
                ops[count] = (op, line + by)

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        if NAME in reading.parts:
            job.parts[NAME] = _merged(job.parts.get(NAME, {}), reading.parts[NAME])

    def finish(self, job: JobParts, messages: Any) -> None:
        """The first opCount at which processes of communicators of one size enqueued different collectives."""
        by_size: dict[str, dict[int, dict[str, str]]] = {}
        comms: dict[tuple[str, str], set[str]] = {}
        for key, ops in job.parts.get(NAME, {}).items():
            process, size, comm = key.split("/")
            comms.setdefault((process, size), set()).add(comm)
            for count, (op, _) in ops.items():
                by_size.setdefault(size, {}).setdefault(count, {})[process] = op
        # a process with two communicators of one size counts each on its own: their opCounts cannot be lined up
        shared = {size for (_, size), found in comms.items() if len(found) > 1}
        for size, counts in sorted(by_size.items()):
            if size in shared:
                continue
            for count in sorted(counts):
                ops = counts[count]
                if len(set(ops.values())) > 1:
                    job.facts["coll_trace_mismatch"] = f"opCount {count:x} of {size}-rank communicators: " + ", ".join(
                        f"{op} on {process}" for process, op in sorted(ops.items())[:4]
                    )
                    return


def _trim(ops: dict[int, tuple[str, int]]) -> None:
    for count in sorted(ops)[:-LAST_KEPT]:
        del ops[count]


def _merged(into: dict[str, dict[int, tuple[str, int]]], later: dict[str, dict[int, tuple[str, int]]]) -> dict:
    for process, ops in later.items():
        if process not in into and len(into) >= MAX_PROCESSES:
            continue
        kept = into.setdefault(process, {})
        kept.update(ops)
        _trim(kept)
    return into


READER = CollTraceReader()
