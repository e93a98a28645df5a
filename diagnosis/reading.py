"""Read one file of a job into a summary that merges with other files' summaries in any order: signal
counts and evidence per case, facts, per-rank watchdog states, stacks, the first failure, harmless lines.

A file is read in windows of whole lines, so memory follows the window size, not the file size. Each
window is read with a look-ahead of the lines after it, so a stack or a table that starts near its end is
read whole; everything that counts or is kept (signal counts, evidence, stacks, failures) is taken only
from the window's own lines, so the summary is the same whatever the window size. A paste small enough to
have come from a terminal or a web page is read whole and repaired first (see text.paste_repair).
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Union

from diagnosis.heap import freed_memory_kept
from diagnosis.readers import READERS
from diagnosis.readers.base import FileReading, Window
from diagnosis.readers.facts import SRUN_HEAD_CHARS, srun_labelled
from diagnosis.rules import Rules
from diagnosis.scan.presence import NO_PLAN, Presence, ScanPlan, presence_started, scan_plan
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import REPAIR_LIMIT, LineLocator, bytes_clean, cleaned_decode, log_clean, paste_repair

EVIDENCE_PER_SIGNAL = 3
MAX_HARMLESS = 20
WINDOW_BYTES = 32 * 1024 * 1024
# A run of windows read in a worker process: each process holds about four copies of its window (the bytes, the
# cleaned bytes, the text, the lowered text), so two workers on 16 MB windows stay in the memory one process holds
# on 32 MB ones (a 600 MB log: 312-326 MB in all, against 503-533 MB on 32 MB windows).
PART_WINDOW_BYTES = 16 * 1024 * 1024
WHOLE_READ_LIMIT = 64 * 1024 * 1024  # a file up to this size is read in one piece (no window copies)
LOOKAHEAD_BYTES = 256 * 1024
# A file written to within this many seconds may be a live log: it is read, not mapped, since a mapped file
# that another process truncates (logrotate's copytruncate) kills the reader with SIGBUS.
LIVE_SECONDS = 10
LOOKBEHIND_BYTES = 4096  # lines before a window: a stack's heading ("=== rank 3 ===") may be just before it

Source = Union[bytes, str, Path, BinaryIO]
Span = tuple[int, int, int, int]  # a window: where its look-behind starts, its own part starts and ends, its look-ahead ends


def source_read(
    data: Source,
    rules: Rules,
    *,
    label: str | None,
    deadline: float | None = None,
    window_bytes: int = WINDOW_BYTES,
    lookahead_bytes: int = LOOKAHEAD_BYTES,
    repair: bool = True,
) -> FileReading:
    """Read one source (bytes, text, a path or a binary file object) window by window."""
    freed_memory_kept()
    reading = FileReading(label=label)
    if isinstance(data, Path):
        status = data.stat()
        whole = _read_whole(status.st_size, window_bytes)
        if _mappable(status):
            with data.open("rb") as handle, _mapped(handle, populate=whole) as mapped:  # the page cache: no copy
                return _bytes_read(mapped, rules, reading, deadline, window_bytes, lookahead_bytes, file=handle)
        if whole:
            data = data.read_bytes()
    if isinstance(data, (bytes, bytearray)) and len(data) > REPAIR_LIMIT:
        return _bytes_read(data, rules, reading, deadline, window_bytes, lookahead_bytes)
    if isinstance(data, str) or (isinstance(data, (bytes, bytearray)) and (len(data) <= REPAIR_LIMIT and repair)):
        _window_read(data, rules, reading, label, base_line=0, core_start=0, core_end=None, deadline=deadline, repair=repair)
        reading.bytes = len(data)
        return reading
    stream = _stream(data)
    try:
        _windows_read(_windows(stream, window_bytes, lookahead_bytes), rules, reading, deadline, repair)
    finally:
        if not isinstance(data, (bytes, bytearray)) and not hasattr(data, "read"):
            stream.close()
    return reading


def _read_whole(size: int, window_bytes: int) -> bool:
    """A file this size is read in one piece: up to the whole-read limit, and no more than two windows."""
    return size <= min(WHOLE_READ_LIMIT, window_bytes * 2)


def _mappable(status: os.stat_result) -> bool:
    """A file too big to be a paste that nobody is writing to: read from its mapping."""
    return status.st_size > REPAIR_LIMIT and time.time() - status.st_mtime > LIVE_SECONDS


@dataclass(frozen=True)
class FileSpans:
    """A large file's windows, cut once, and the open file they are read from with pread. Readers forked after the
    cut share the open file, so every window comes from the file that was cut, even if a log rotation puts another
    file at its path meanwhile; any run of consecutive windows can be read on its own and joined in order by
    `readings_join`, giving what one pass over the file gives."""

    file: BinaryIO
    spans: tuple[Span, ...]
    srun_labelled: bool  # told once by the file's start, for every run of it (facts.srun_labelled)


def file_spans(
    file: BinaryIO, *, window_bytes: int = PART_WINDOW_BYTES, lookahead_bytes: int = LOOKAHEAD_BYTES
) -> FileSpans | None:
    """An open file's windows; None when the file is small enough to read in one piece, or is read rather than
    mapped (see source_read)."""
    status = os.fstat(file.fileno())
    if not _mappable(status) or _read_whole(status.st_size, window_bytes):
        return None
    with _mapped(file) as mapped:
        spans = window_spans(mapped, window_bytes, lookahead_bytes)
        # The cleaned text the file starts with, as its first window reads it: enough bytes for SRUN_HEAD_CHARS
        # characters of any encoding, and a few more for a colour code cut at the end.
        labelled = srun_labelled(log_clean(mapped[: 4 * SRUN_HEAD_CHARS + 64])[0])
    return FileSpans(file, tuple(spans), labelled)


def spans_read(
    cut: FileSpans,
    windows: Iterable[int],
    rules: Rules,
    *,
    label: str | None,
    deadline: float | None = None,
    windows_hint: int | None = None,
    plan: ScanPlan | None = None,
) -> tuple[FileReading, ScanPlan]:
    """A run of consecutive windows (their indices, which may be handed out while the run is read), its lines
    numbered from the run's first line (readings_join moves them); and the scan plan it used. `plan`: one an earlier
    run of the same file made, else the run makes one from its first window, if `windows_hint` more repay it."""
    freed_memory_kept()
    reading = FileReading(label=label, srun_labelled=cut.srun_labelled)
    spans = (cut.spans[index] for index in windows)
    plan = _windows_read(_file_windows(cut.file, spans), rules, reading, deadline, False, windows_hint, plan)
    return reading, plan


def readings_join(parts: list[FileReading]) -> FileReading:
    """The readings of a file's parts, in file order, as one reading of the file: each part's line numbers move
    down by the lines of the parts before it. As in one pass, nothing is read past a part cut short by the deadline."""
    joined = parts[0]
    for later in parts[1:]:
        if joined.partial:
            break
        _lines_shift(later, joined.lines)
        reading_extend(joined, later)
    return joined


def _lines_shift(reading: FileReading, by: int) -> None:
    """Every line number a reading holds, `by` lines further down."""
    for reader in READERS:
        reader.shift(reading, by)


def _bytes_read(
    data: bytes | bytearray | mmap.mmap,
    rules: Rules,
    reading: FileReading,
    deadline: float | None,
    window_bytes: int,
    lookahead_bytes: int,
    file: BinaryIO | None = None,
) -> FileReading:
    """A program-written log in memory or mapped: in one piece up to the whole-read limit, else in windows cut where
    it shows line breaks, sliced out of it, or read with pread from the open file a mapping is of (`file`: the same
    file, even if its path is given to another meanwhile). Too big to be a paste, so never repaired."""
    if _read_whole(len(data), window_bytes):
        _window_read(
            data, rules, reading, reading.label, base_line=0, core_start=0, core_end=None, deadline=deadline, repair=False
        )
        reading.bytes = len(data)
        return reading
    spans = window_spans(data, window_bytes, lookahead_bytes)
    windows = _file_windows(file, spans) if file is not None else _windows_sliced(data, spans)
    _windows_read(windows, rules, reading, deadline, False, len(spans))
    return reading


def _windows_read(
    windows: Iterable[tuple[bytes, int, int, int]],
    rules: Rules,
    reading: FileReading,
    deadline: float | None,
    repair: bool,
    count: int | None = None,
    plan: ScanPlan | None = None,
) -> ScanPlan:
    """Read windows one after another. The literal pass looks at them as `plan` says; without one, and with their
    `count` known (cut in advance), it may look at the later ones as the first one showed it pays
    (scan.presence.scan_plan). Returns the plan it used."""
    base_line = 0
    for window, core_start, core, size in windows:
        if reading.bytes == 0 and size <= REPAIR_LIMIT and core == len(window) and repair:
            _window_read(
                window, rules, reading, reading.label, base_line=0, core_start=0, core_end=None, deadline=deadline, repair=True
            )
        else:
            base_line, presence = _window_read(
                window,
                rules,
                reading,
                reading.label,
                base_line=base_line,
                core_start=core_start,
                core_end=core,
                deadline=deadline,
                repair=False,
                plan=plan or NO_PLAN,
            )
            if plan is None and count is not None:
                plan = scan_plan(presence, window, count - 1, rules.literals)
        reading.bytes += core - core_start
        if reading.partial:
            break
    return plan or NO_PLAN


def reading_rank_set(reading: FileReading, rank: int | None) -> None:
    """A file whose path names its rank (torchrun's --log-dir folders, rank3.log): stacks that did not say
    their rank are that rank's, and the rank is one the job shows."""
    if rank is None:
        return
    for stack in reading.stacks:
        if stack.rank is None:
            stack.rank = rank
    seen = set(reading.facts.get("ranks") or [])
    reading.facts["ranks"] = sorted(seen | {rank})


@contextlib.contextmanager
def _mapped(file: BinaryIO, *, populate: bool = False) -> Iterator[mmap.mmap | bytes]:
    """An open file's bytes mapped read-only; an empty file as b"". `populate`: map every page in one call (a file
    read whole); otherwise only the pages looked at are read (where windows are cut: see window_spans)."""
    if os.fstat(file.fileno()).st_size == 0:
        yield b""
        return
    flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
    mapped = mmap.mmap(file.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
    if not populate and hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_RANDOM)
    try:
        yield mapped
    finally:
        try:
            mapped.close()
        except BufferError:  # a view of it is still alive somewhere: the collector unmaps it with the view
            pass


def _stream(data: Source) -> BinaryIO:
    if isinstance(data, (bytes, bytearray)):
        return io.BytesIO(data)
    if isinstance(data, Path):
        return data.open("rb")
    return data


def _windows(stream: BinaryIO, window_bytes: int, lookahead_bytes: int) -> Iterator[tuple[bytes, int, int, int]]:
    """(window with look-behind and look-ahead, where its own part starts and ends, bytes read so far): whole
    lines only."""
    pending = b""
    behind = b""
    total = 0
    eof = False
    while True:
        want = window_bytes + lookahead_bytes - len(pending)
        if want > 0 and not eof:
            more = _read_full(stream, want)
            eof = len(more) < want
            pending += more
            total += len(more)
        if not pending:
            return
        if eof and len(pending) <= window_bytes:
            yield behind + pending, len(behind), len(behind) + len(pending), total
            return
        cut = pending.rfind(b"\n", 0, window_bytes) + 1
        if cut == 0:  # one line longer than a window: cut it at the window (regexes see 4 KB of a line anyway)
            cut = min(window_bytes, len(pending))
        yield behind + pending, len(behind), len(behind) + cut, total
        tail = pending[max(0, cut - LOOKBEHIND_BYTES) : cut]
        behind = tail[tail.find(b"\n") + 1 :] if b"\n" in tail[:-1] else b""  # whole lines only
        pending = pending[cut:]


def window_spans(data: bytes | bytearray | mmap.mmap, window_bytes: int, lookahead_bytes: int) -> list[Span]:
    """The windows `_windows` gives for a stream, as offsets into bytes already in memory or mapped (a search for
    a line break at each window's end: no pass over the bytes)."""
    size = len(data)
    spans: list[Span] = []
    start = behind = 0  # where the window's own part starts; where its look-behind starts
    while start < size:
        if size - start <= window_bytes:
            spans.append((behind, start, size, size))
            break
        cut = data.rfind(b"\n", start, start + window_bytes) + 1
        if cut == 0:  # one line longer than a window: cut it at the window
            cut = start + window_bytes
        spans.append((behind, start, cut, min(size, start + window_bytes + lookahead_bytes)))
        newline = data.find(b"\n", max(start, cut - LOOKBEHIND_BYTES), cut - 1)
        behind = newline + 1 if newline != -1 else cut  # whole lines only
        start = cut
    return spans


def _windows_sliced(data: bytes | bytearray, spans: list[Span]) -> Iterator[tuple[bytes, int, int, int]]:
    """The windows of `spans` cut out of bytes in memory: one copy a window and no concatenation."""
    for behind, start, cut, end in spans:
        yield bytes(data[behind:end]), start - behind, cut - behind, end


def _file_windows(file: BinaryIO, spans: Iterable[Span]) -> Iterator[tuple[bytes, int, int, int]]:
    """The windows of `spans` read from an open file with pread: one copy a window out of the page cache, with none
    of a mapping's page faults (3.0 against 2.1 ms a 16 MB window) and no mapped pages to give back as the read moves
    on. A file cut short meanwhile ends the read at what is left, where a mapping would end the process (SIGBUS)."""
    for behind, start, cut, end in spans:
        window = os.pread(file.fileno(), end - behind, behind)
        if len(window) < end - behind:  # truncated under the reader: what is left of the window's own part
            if len(window) > start - behind:
                yield window, start - behind, min(cut - behind, len(window)), behind + len(window)
            return
        yield window, start - behind, cut - behind, end


def _read_full(stream: BinaryIO, size: int) -> bytes:
    """Read `size` bytes, or fewer only at the end (a pipe may return less than asked before its end)."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        block = stream.read(size - got)
        if not block:
            break
        parts.append(block)
        got += len(block)
    return b"".join(parts)


def _window_read(
    data: bytes | str,
    rules: Rules,
    reading: FileReading,
    label: str | None,
    *,
    base_line: int,
    core_start: int,
    core_end: int | None,
    deadline: float | None,
    repair: bool,
    plan: ScanPlan = NO_PLAN,
) -> tuple[int, Presence | None]:
    """Read one window into `reading`; returns the line number its own part ends at, and what the literal pass
    found. Only what starts in the window's own part counts; the look-behind and look-ahead are context.
    `plan`: how the literal pass looks at it (see _windows_read)."""
    presence = None
    if isinstance(data, str) or repair:
        text, encoded = log_clean(data)
    else:
        # A program-written log: Hyperscan's pass over the cleaned bytes runs while they are decoded and their
        # lines counted. Invalid UTF-8 decodes to U+FFFD without touching the characters around it, so every
        # literal is in the bytes exactly when it is in the text; byte offsets are used only for ASCII text.
        cleaned = bytes_clean(data)
        presence = presence_started(cleaned, rules.literals, plan)
        text, encoded = cleaned_decode(cleaned)
    if core_end is not None:
        start, limit = _boundaries(data, text, core_start, core_end)
    else:
        start, limit = 0, None
    joins: list[int] = []
    if repair:
        repaired = paste_repair(text)
        if repaired.text is not text:
            text, encoded = repaired.text, None
        joins = repaired.joins
        reading.repairs += repaired.notes
    limit = len(text) if limit is None else limit
    behind_lines = text.count("\n", 0, start)
    scanner = TextScanner(text, rules.literals, encoded=encoded, presence=presence)
    lines = LineLocator(text, joins, base_line=base_line - behind_lines, chunk_newlines=scanner.chunk_newlines)
    if reading.srun_labelled is None:  # the file's first window
        reading.srun_labelled = srun_labelled(text)
    window = FileReading(label=label)
    seen = Window(scanner, lines, rules, label, start, limit, whole=core_end is None, file=reading, deadline=deadline)
    for reader in READERS:
        reader.read(seen, window)
    if core_end is None:
        window.lines = lines.line_count()
    else:
        # Newlines of the window's own part: the window's count (known) less the short look-behind and look-ahead.
        own_newlines = lines.newlines - behind_lines - text.count("\n", limit)
        window.lines = own_newlines + (1 if limit == len(text) and limit > start and not text.endswith("\n") else 0)
    reading_extend(reading, window)
    return base_line + window.lines, scanner.presence


def reading_extend(reading: FileReading, later: FileReading) -> None:
    """Add what a later stretch of the same file gave (a window, or a run of windows read in another process,
    its line numbers already counted from the file's start) to what the stretches before it gave."""
    for reader in READERS:
        reader.merge(reading, later)
    reading.lines += later.lines
    reading.bytes += later.bytes
    reading.partial = reading.partial or later.partial


def _boundaries(data: bytes, text: str, core_start: int, core_end: int) -> tuple[int, int]:
    """Where the window's own part starts and ends in the cleaned text. Both boundaries follow a line break,
    and cleaning never crosses one, so the short look-behind and look-ahead are cleaned apart to measure them
    (a few kilobytes, not the window). A text as long as its bytes kept every offset: each character is
    decoded from one byte or more, and cleaning only drops bytes or swaps one for one, so each byte stayed one
    character in its place."""
    if len(text) == len(data):
        return core_start, core_end
    start = len(log_clean(data[:core_start])[0]) if core_start else 0
    limit = len(text) - len(log_clean(data[core_end:])[0]) if core_end < len(data) else len(text)
    return start, limit
