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
import dataclasses
import io
import mmap
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Union

from diagnosis import tools
from diagnosis.debug_dumps import debug_dumps_read
from diagnosis.events import Failure, first_failure
from diagnosis.facts import (
    FRAMEWORKS,
    MAX_FACT_LINES,
    PARALLELISM,
    SRUN_HEAD_CHARS,
    STAGES_DONE,
    RankState,
    facts_extract,
    rank_state_merge,
    rule_values_extend,
    rule_values_read,
    srun_labelled,
)
from diagnosis.heap import freed_memory_kept
from diagnosis.rules import Rules
from diagnosis.scanning import NO_PLAN, Presence, ScanPlan, TextScanner, presence_started, scan_plan
from diagnosis.signatures import MAX_COUNTED_LINES, signature_hits
from diagnosis.stacks import Stack, stacks_extract
from diagnosis.timeouts import TimeoutSeen, timeouts_extract, timeouts_merge
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


@dataclass
class Evidence:
    line: int
    text: str
    signal: str
    source: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    span: tuple[int, int] = (0, 0)  # the matched part, as offsets into `text`


@dataclass
class Harmless:
    line: int
    text: str
    id: str
    title: str
    why: str
    source: str | None = None


@dataclass
class FileReading:
    """What one file yields."""

    per_case: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug -> {"signals": {...}, "evidence": [...]}
    facts: dict[str, Any] = field(default_factory=dict)
    # What the set and max fact rules captured, in line order (facts.rule_values_read); job_diagnose makes them facts.
    rule_values: dict[int, list[str]] = field(default_factory=dict)
    srun_labelled: bool | None = None  # told by the file's start (facts.srun_labelled), for every window of it
    ranks: dict[int, RankState] = field(default_factory=dict)
    stacks: list[Stack] = field(default_factory=list)
    timeouts: list[TimeoutSeen] = field(default_factory=list)
    dump_groups: list[dict[str, Any]] = field(default_factory=list)  # ranks placed by the debug server's dumps
    failure: Failure | None = None
    harmless: list[Harmless] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    partial: bool = False
    label: str | None = None  # the file's name when the job has several files


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
    for entry in reading.per_case.values():
        for evidence in entry["evidence"]:
            evidence.line += by
    for harmless in reading.harmless:
        harmless.line += by
    for stack in reading.stacks:
        stack.line += by
        stack.frame_lines = [line + by for line in stack.frame_lines]
    for state in reading.ranks.values():
        if state.line is not None:
            state.line += by
    reading.timeouts = [dataclasses.replace(seen, line=seen.line + by) for seen in reading.timeouts]
    if reading.failure is not None:
        start_line = reading.failure.start_line
        reading.failure = dataclasses.replace(
            reading.failure, line=reading.failure.line + by, start_line=None if start_line is None else start_line + by
        )


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
    (scanning.scan_plan). Returns the plan it used."""
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
    window = FileReading(label=label)
    skip = _harmless_lines(scanner, lines, rules, label, window.harmless, start, limit)
    for sig, hits, count in signature_hits(
        scanner, rules.signatures, per_signature=EVIDENCE_PER_SIGNAL + len(skip), start=start, end=limit
    ):
        if deadline is not None and time.perf_counter() > deadline:
            window.partial = True
            break
        kept = [hit for hit in hits if lines.line_start(hit.offset) not in skip][:EVIDENCE_PER_SIGNAL]
        if skip and not kept:
            continue  # the signature matched harmless lines only
        entry = window.per_case.setdefault(sig.case, {"signals": {}, "evidence": []})
        entry["signals"][sig.id] = {
            "id": sig.id,
            "description": sig.description,
            "weight": sig.weight,
            "anchor": sig.anchor,
            "count": min(count, MAX_COUNTED_LINES),
            "kind": "line",
        }
        entry["evidence"] += [_evidence(lines, hit, sig.id, label) for hit in kept]
    if reading.srun_labelled is None:  # the file's first window
        reading.srun_labelled = srun_labelled(text)
    window.facts, window.ranks = facts_extract(scanner, lines, reading.srun_labelled)
    left = {index: MAX_FACT_LINES - len(values) for index, values in reading.rule_values.items()}
    window.rule_values = rule_values_read(scanner, start, limit, left)
    window.facts.update(tools.tool_facts(scanner))
    stacks = [s for s in stacks_extract(scanner, lines) if start <= s.offset < limit]
    dumped = debug_dumps_read(scanner, stacks, start, limit)
    window.stacks, window.dump_groups = dumped.stacks, dumped.groups
    facts_merge(window.facts, dumped.facts)
    window.failure = first_failure(scanner, lines, window.stacks, label)
    if window.failure is not None and core_end is not None:
        first_own = lines.line_number(start)
        last_own = lines.line_number(max(start, limit - 1))
        if not first_own <= (window.failure.start_line or window.failure.line) <= last_own:
            window.failure = None
    timeouts_merge(window.timeouts, timeouts_extract(scanner, lines, start, limit), None)
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
    per_case_merge(reading.per_case, later.per_case)
    _facts_merge_window(reading.facts, later.facts)
    rule_values_extend(reading.rule_values, later.rule_values)
    for state in later.ranks.values():
        known = rank_state_merge(reading.ranks, state)
        if known is not state and state.fp_seq is not None:
            known.fp_seq, known.fp_op = state.fp_seq, state.fp_op  # a later window's last fingerprint wins
    reading.stacks += later.stacks
    timeouts_merge(reading.timeouts, later.timeouts, None)
    reading.dump_groups += later.dump_groups
    reading.failure = reading.failure or later.failure
    for harmless in later.harmless:
        if len(reading.harmless) < MAX_HARMLESS and not any(h.id == harmless.id for h in reading.harmless):
            reading.harmless.append(harmless)
    reading.lines += later.lines
    reading.bytes += later.bytes
    reading.partial = reading.partial or later.partial


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


def _facts_merge_window(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Facts of a later window of the same file: the last stage reached is the later one."""
    stage = new.get("stage")
    facts_merge(into, new)
    if stage:
        into["stage"] = stage


def facts_merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge another file's (or a later window's) facts: sets are joined, the world size is the largest,
    ordered lists keep their order (launchers by first appearance, frameworks and stages by table)."""
    for key, value in new.items():
        if key not in into:
            into[key] = value
        elif key in ORDERED_FACTS:
            into[key] = ORDERED_FACTS[key](into[key], value)
        elif isinstance(value, list) and isinstance(into[key], list):
            into[key] = sorted(set(into[key]) | set(value), key=_order)
        elif key == "world_size":
            into[key] = max(into[key], value)


def _table_order(table) -> Any:
    names = [p.name for p in table]
    return lambda old, new: sorted(set(old) | set(new), key=names.index)


ORDERED_FACTS = {
    "launchers": lambda old, new: old + [n for n in new if n not in old],
    "frameworks": _table_order(FRAMEWORKS),
    "parallelism": _table_order(PARALLELISM),
    "stages_done": _table_order(STAGES_DONE),
}


def _order(value: Any) -> tuple:
    """Numbers in numeric order, then text."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def _harmless_lines(
    scanner: TextScanner, lines: LineLocator, rules: Rules, label: str | None, found: list[Harmless], start: int, limit: int
) -> set[int]:
    """Start offsets of lines that only a known-harmless message explains; they are never evidence."""
    skip: set[int] = set()
    for rule in rules.harmless:
        for _, hits, _ in signature_hits(scanner, [rule.signature], per_signature=MAX_HARMLESS, start=start, end=limit):
            for hit in hits:
                skip.add(lines.line_start(hit.offset))
                if len(found) < MAX_HARMLESS and not any(h.id == rule.id and h.source == label for h in found):
                    found.append(
                        Harmless(
                            line=lines.line_number(hit.offset),
                            text=lines.line_text(hit.offset),
                            id=rule.id,
                            title=rule.title,
                            why=rule.why,
                            source=label,
                        )
                    )
    return skip


def _evidence(lines: LineLocator, hit, signal: str, label: str | None) -> Evidence:
    text, line_start = lines.line_text(hit.offset), lines.line_start(hit.offset)
    start = min(hit.offset - line_start, len(text))
    end = min(hit.end - line_start, len(text))
    return Evidence(
        line=lines.line_number(hit.offset), text=text, signal=signal, source=label, groups=hit.groups, span=(start, end)
    )
