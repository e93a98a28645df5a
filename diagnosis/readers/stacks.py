"""Read pasted stacks into frames a case can match: py-spy dumps, Python tracebacks (KeyboardInterrupt
included), faulthandler dumps and gdb backtraces.

A frame is written `path/to/file.py:function` (gdb: `file.cc:function`, or `library:function`, or the
function alone), and every stack is kept innermost frame first, whatever order its format prints.
Only the regions that start with a stack header are walked, so a large log without stacks costs a few
substring searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator, rank_prefix_split

from diagnosis.readers.base import FileReading, JobParts, Window

MAX_STACKS = 256
MAX_FRAMES = 200
MAX_LINE = 2000  # longer lines are not frames; the regexes never see more than this
INTERLEAVED_LINES = 4  # other processes' lines a traceback may hold between a frame and its source line

# Where a stack starts, by format. Each header is also a scanner literal, so absent formats cost nothing.
TRACEBACK = "Traceback (most recent call last):"
FAULTHANDLER = "(most recent call first):"
PYSPY_THREAD = re.compile(r"Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:active|idle|active\+gil|gil)\)(?:: \"[^\"\n]{0,200}\")?\s*$")
GDB_FIRST = "#0  "
# faulthandler.dump_traceback_later (pytest's faulthandler_timeout, a training script's own watchdog) writes this line
# before the threads it dumps; a paste that keeps the frames but not the "Thread 0x... (most recent call first):" line
# under it still starts its stack here.
FAULT_TIMEOUT = "Timeout ("
_FAULT_TIMEOUT_LINE = re.compile(r"\s*Timeout \(\d{1,6}:\d\d:\d\d(?:\.\d{1,6})?\)!\s*$")
HEADER_LITERALS = (TRACEBACK, FAULTHANDLER, "Thread ", GDB_FIRST, FAULT_TIMEOUT)

_TRACEBACK_FRAME = re.compile(r'File "([^"\n]{1,500})", line \d+, in ([^\s]{1,200})')
_FAULT_FRAME = re.compile(r'File "([^"\n]{1,500})", line \d+ in ([^\s]{1,200})')
_PYSPY_FRAME = re.compile(r"^\s{2,}(\S{1,200}) \(([^()\s]{1,500}?)(?::\d+)?\)\s*$")
_GDB_FRAME = re.compile(r"#(\d{1,4})\s+(?:0x[0-9a-fA-F]+ in )?([\w:~<>.@]{1,300}) \(")
_GDB_WHERE = re.compile(r"\) (?:at ([^\s:]{1,300}):\d+|from (\S{1,300}))\s*$")
# py-spy's own lines above a dump's first thread, and every header a stack dump starts a thread with: a reader
# that walks back to a rank's heading, or forward to where a dump ends, steps over these.
PYSPY_PREAMBLE = r"Process \d{1,10}: |Python v\d"
STACK_HEAD = rf"(?:Current thread|Thread) 0x[0-9A-Fa-f]{{1,20}} |Thread \d{{1,10}} \(|{PYSPY_PREAMBLE}"
_PREAMBLE_OR_BLANK = re.compile(rf"{PYSPY_PREAMBLE}|\s*$")
_RANK_MENTION = re.compile(r"\brank[ _:=#]?(\d{1,5})\b", re.IGNORECASE)


@dataclass
class Stack:
    """One thread's stack, innermost frame first, with the log line of each frame."""

    kind: str  # traceback | faulthandler | py-spy | gdb
    line: int
    frames: list[str] = field(default_factory=list)
    frame_lines: list[int] = field(default_factory=list)
    rank: int | None = None
    thread: str | None = None
    exception: str | None = None  # the last line of a traceback
    offset: int = 0  # where the stack starts in the text
    rank_nearby: bool = False  # `rank` comes from a line above the stack (a heading), not from its own prefix


def frame_name(path: str, function: str) -> str:
    """`/opt/venv/lib/python3.10/site-packages/torch/utils/file_baton.py`, `wait` → the path from the
    package root on (`torch/utils/file_baton.py:wait`), so frames compare across installs."""
    cut = max(path.rfind("site-packages/"), path.rfind("dist-packages/"))
    if cut != -1:
        path = path[path.index("/", cut) + 1 :]
    return f"{path}:{function}"


def stacks_extract(scanner: TextScanner, lines: LineLocator) -> list[Stack]:
    """Every stack in the text, in text order."""
    text = scanner.text
    starts: set[int] = set()
    for literal in (TRACEBACK, FAULTHANDLER, GDB_FIRST):
        for start, _ in scanner.lines_with(literal):
            starts.add(start)
    for start, end in scanner.lines_with("Thread "):
        if PYSPY_THREAD.search(text, start, min(end, start + MAX_LINE)):
            starts.add(start)
    for start, end in scanner.lines_with(FAULT_TIMEOUT):
        if _FAULT_TIMEOUT_LINE.match(rank_prefix_split(text[start : min(end, start + MAX_LINE)])[0]):
            starts.add(start)
    stacks: list[Stack] = []
    for start in sorted(starts):
        if len(stacks) >= MAX_STACKS:
            break
        stack = _stack_at(text, start, lines)
        if stack is not None and stack.frames:
            stacks.append(stack)
    return stacks


def _lines_from(text: str, start: int):
    """(offset, line) from `start` on, lazily, each cut to MAX_LINE."""
    pos = start
    size = len(text)
    while pos < size:
        end = text.find("\n", pos)
        if end == -1:
            end = size
        yield pos, text[pos : min(end, pos + MAX_LINE)]
        pos = end + 1


def _stack_at(text: str, start: int, lines: LineLocator) -> Stack | None:
    walker = _lines_from(text, start)
    offset, header = next(walker)
    header, rank = rank_prefix_split(header)
    nearby = rank is None
    if rank is None:
        rank = _rank_nearby(text, start)
    line_no = lines.line_number(offset)
    stack = _stack_read(text, start, header, walker, rank, line_no, lines)
    if stack is not None:
        stack.offset = start
        stack.rank_nearby = nearby and rank is not None
    return stack


def _stack_read(text, start, header, walker, rank, line_no, lines) -> Stack | None:
    offset = start
    if TRACEBACK in header:
        return _traceback(walker, Stack("traceback", line_no, rank=rank), lines)
    if FAULTHANDLER in header:
        return _frames(
            walker, Stack("faulthandler", line_no, rank=rank, thread=header.split(" (")[0].strip()), _FAULT_FRAME, lines
        )
    if GDB_FIRST in header:
        return _gdb(offset, header, walker, Stack("gdb", line_no, rank=rank), lines)
    if _FAULT_TIMEOUT_LINE.match(header):  # frames right under it; a thread header there is a stack of its own
        return _frames(walker, Stack("faulthandler", line_no, rank=rank), _FAULT_FRAME, lines)
    if PYSPY_THREAD.search(header):
        return _pyspy(walker, Stack("py-spy", line_no, rank=rank, thread=header.strip()), lines)
    return None


def _traceback(walker, stack: Stack, lines: LineLocator) -> Stack:
    """Python prints the outermost frame first; the exception line ends the block."""
    frames: list[tuple[str, int]] = []
    after_frame = False  # the line before was a frame's `File "...", line N, in f`
    pending: list = []
    while True:
        item = pending.pop(0) if pending else next(walker, None)
        if item is None:
            break
        offset, raw = item
        line, _ = rank_prefix_split(raw)
        match = _TRACEBACK_FRAME.search(line)
        if match:
            frames.append((frame_name(match.group(1), match.group(2)), offset))
            after_frame = True
        elif line.startswith(("    ", "\t")) or not line.strip() or line.strip().startswith(("^", "~")):
            after_frame = False
            continue  # the source line under a frame, or the caret line of 3.11+
        else:
            if after_frame and not pending:
                # Lines of other processes written between a frame and its source line (ranks' and the agent's
                # unprefixed output interleave, PyTorch <= 2.3): the traceback goes on under them
                resumed = _traceback_resumes(walker)
                if resumed is not None:
                    pending = [resumed]
                    after_frame = False
                    continue
            stack.exception = line.strip()[:300]
            break
        if len(frames) >= MAX_FRAMES:
            break
    for name, offset in reversed(frames):
        stack.frames.append(name)
        stack.frame_lines.append(lines.line_number(offset))
    return stack


def _traceback_resumes(walker):
    """The next line of a traceback (a source line or a frame) within the next INTERLEAVED_LINES lines, or None."""
    for _ in range(INTERLEAVED_LINES):
        ahead = next(walker, None)
        if ahead is None:
            return None
        following = rank_prefix_split(ahead[1])[0]
        if following.startswith("    ") or _TRACEBACK_FRAME.search(following):
            return ahead
    return None


def _frames(walker, stack: Stack, pattern: re.Pattern, lines: LineLocator) -> Stack:
    """faulthandler prints the innermost frame first, one `File "...", line N in f` per line."""
    for offset, raw in walker:
        line, _ = rank_prefix_split(raw)
        match = pattern.search(line)
        if not match:
            break
        stack.frames.append(frame_name(match.group(1), match.group(2)))
        stack.frame_lines.append(lines.line_number(offset))
        if len(stack.frames) >= MAX_FRAMES:
            break
    return stack


def _pyspy(walker, stack: Stack, lines: LineLocator) -> Stack:
    """py-spy prints `    function (path:line)` innermost first; --locals adds indented name = value lines."""
    for offset, raw in walker:
        line, _ = rank_prefix_split(raw)
        match = _PYSPY_FRAME.match(line)
        if match:
            stack.frames.append(frame_name(match.group(2), match.group(1)))
            stack.frame_lines.append(lines.line_number(offset))
        elif line.startswith("        ") or line.strip() == "Arguments:" or line.strip() == "Locals:":
            continue
        else:
            break
        if len(stack.frames) >= MAX_FRAMES:
            break
    return stack


def _gdb(offset: int, header: str, walker, stack: Stack, lines: LineLocator) -> Stack:
    """gdb's `bt`: `#N  0xADDR in function (args) at file.cc:LINE` or `... from /lib/x.so`, innermost first."""

    def rows():
        yield offset, header
        for line_offset, raw in walker:
            yield line_offset, rank_prefix_split(raw)[0]

    for line_offset, line in rows():
        match = _GDB_FRAME.search(line)
        if not match:
            if line.startswith((" ", "\t")) and stack.frames:
                continue  # gdb wraps long argument lists onto indented lines
            break
        where = _GDB_WHERE.search(line)
        place = (where.group(1) or where.group(2) or "").rsplit("/", 1)[-1] if where else ""
        function = match.group(2).split("@@")[0]
        stack.frames.append(f"{place}:{function}" if place else function)
        stack.frame_lines.append(lines.line_number(line_offset))
        if len(stack.frames) >= MAX_FRAMES:
            break
    return stack


def _rank_nearby(text: str, start: int) -> int | None:
    """A stack pasted under a heading such as '=== rank 3 ===' or 'py-spy dump of rank3': the heading's rank.

    The heading is one of the two lines above the stack, not counting py-spy's own preamble ('Process N: ...',
    'Python v3.x (...)' and the blank line after them), which sits between a heading and the first thread."""
    window_end = start
    end = start - 1 if start else 0
    counted = skipped = 0
    while counted < 2 and end > 0:
        line_start = text.rfind("\n", 0, end) + 1
        line = text[line_start:end]
        if counted == 0 and skipped < 3 and _PREAMBLE_OR_BLANK.match(line):
            skipped += 1
            window_end = line_start
        else:
            counted += 1
        end = line_start - 1 if line_start else 0
    window = text[max(0, end) : window_end][-300:]
    mentions = _RANK_MENTION.findall(window)
    return int(mentions[-1]) if mentions else None


_C10D_FRAME = re.compile(r"(?:^|/)torch/distributed/distributed_c10d\.py:(\w+)$")
# The collectives a process can wait in; wrappers that call another of the same kind count as the one they wrap.
_COLLECTIVES = {
    "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "broadcast": "broadcast",
    "broadcast_object_list": "broadcast",
    "all_gather": "all_gather",
    "all_gather_object": "all_gather",
    "all_gather_into_tensor": "all_gather_into_tensor",
    "_all_gather_base": "all_gather_into_tensor",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "_reduce_scatter_base": "reduce_scatter_tensor",
    "reduce": "reduce",
    "gather": "gather",
    "gather_object": "gather",
    "scatter": "scatter",
    "scatter_object_list": "scatter",
    "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all_single",
    "barrier": "barrier",
    "monitored_barrier": "monitored_barrier",
    "send": "send",
    "recv": "recv",
    "isend": "send",
    "irecv": "recv",
    "batch_isend_irecv": "batch_isend_irecv",
}


def stack_collectives(stacks: list[Stack]) -> list[str]:
    """The torch.distributed collectives the given stacks sit in. One process waits in one collective, so two
    different ones among a job's waiting stacks mean the ranks took different code paths (a desync), even
    when older releases interleave the ranks' tracebacks line by line."""
    found: set[str] = set()
    for stack in stacks:
        found |= {
            _COLLECTIVES[m.group(1)]
            for frame in stack.frames
            for m in [_C10D_FRAME.search(frame)]
            if m and m.group(1) in _COLLECTIVES
        }
    return sorted(found)


class StacksReader:
    """Stacks that start in the window's own part: py-spy, faulthandler, gdb and Python tracebacks."""

    name = "stacks"
    literals = frozenset((literal, False) for literal in HEADER_LITERALS)

    def read(self, window: Window, part: FileReading) -> None:
        part.stacks = [s for s in stacks_extract(window.scanner, window.lines) if window.start <= s.offset < window.limit]

    def merge(self, into: FileReading, later: FileReading) -> None:
        into.stacks += later.stacks

    def shift(self, part: FileReading, by: int) -> None:
        for stack in part.stacks:
            stack.line += by
            stack.frame_lines = [line + by for line in stack.frame_lines]

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        job.stacks += [(stack, reading.label) for stack in reading.stacks]


READER = StacksReader()


# What ProcessGroupGloo raises when a collective waits too long (the message is the same in PyTorch 1.13.1, 2.1.2,
# 2.5.1, 2.13.0 and 2.14.1; libtorch_cpu's strings): gloo's transport ("[.../gloo/transport/tcp/unbound_buffer.cc:N]
# Timed out waiting 10000ms for recv operation to complete", or "send"), and monitored_barrier's own errors on rank 0
# ("[Rank 0]: Rank 1 failed to pass monitoredBarrier in 10000 ms") and on the others ("Rank 1 successfully reached
# monitoredBarrier, but received errors while waiting for send/recv from rank 0. ...").
_GLOO_WAIT = re.compile(
    r"Timed out waiting (?P<ms>\d+)ms for (?:recv|send) operation to complete"
    r"|failed to pass monitoredBarrier in (?P<mb_ms>\d+) ms|successfully reached monitoredBarrier, but received errors"
)
# torch.distributed's names as ProcessGroupNCCL's OpType prints them, so a gloo timeout reads like a watchdog's
_OP_TYPES = {
    "all_reduce": "ALLREDUCE",
    "broadcast": "BROADCAST",
    "all_gather": "ALLGATHER",
    "all_gather_into_tensor": "_ALLGATHER_BASE",
    "reduce_scatter": "REDUCE_SCATTER",
    "reduce_scatter_tensor": "_REDUCE_SCATTER_BASE",
    "reduce": "REDUCE",
    "gather": "GATHER",
    "scatter": "SCATTER",
    "all_to_all": "ALLTOALL",
    "all_to_all_single": "ALLTOALL_BASE",
    "barrier": "BARRIER",
    "monitored_barrier": "BARRIER",
    "send": "SEND",
    "recv": "RECV",
}


@dataclass(frozen=True)
class GlooWait:
    """A rank whose collective ended in a gloo timeout: where its traceback says it waited."""

    rank: int | None  # None: no "[rankN]:" prefix on the traceback (PyTorch <= 2.1 prints none; a rank mentioned on a
    # line above a traceback is output of the other ranks as often as a heading)
    op: str | None
    timeout_ms: int | None
    line: int
    collective: str | None  # torch.distributed's name (barrier, monitored_barrier, all_reduce, ...)


def gloo_waits(stacks: list[Stack]) -> list[GlooWait]:
    """The ranks whose traceback ends in a gloo timeout (or a monitored_barrier error), with the collective of the
    innermost torch.distributed frame."""
    found: list[GlooWait] = []
    for stack in stacks:
        if stack.kind != "traceback" or not stack.exception:
            continue
        match = _GLOO_WAIT.search(stack.exception)
        if match is None:
            continue
        collective = next(
            (
                _COLLECTIVES[m.group(1)] if m.group(1) != "monitored_barrier" else "monitored_barrier"
                for frame in stack.frames
                for m in [_C10D_FRAME.search(frame)]
                if m and m.group(1) in _COLLECTIVES
            ),
            None,
        )
        ms = match.group("ms") or match.group("mb_ms")
        found.append(
            GlooWait(
                None if stack.rank_nearby else stack.rank,
                _OP_TYPES.get(collective or ""),
                int(ms) if ms else None,
                stack.line,
                collective,
            )
        )
    return found
