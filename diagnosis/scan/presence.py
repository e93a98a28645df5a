"""The one pass over a text's bytes that tells which literals occur and in which chunks: chunked, in a thread per
core when the process has idle cores beside it, begun beside the decode for a large input, and planned for a run's
later windows (ScanPlan). Also the parallel-worker switch a command-line worker reads under (parallel_worker).

Hyperscan is read through literals.py (`scan_literals.hyperscan`), where its import is made.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from diagnosis.scan import literals as scan_literals  # hyperscan and the database, read there at call time
from diagnosis.scan.literals import Literal

CHUNK_BYTES = 1024 * 1024  # granularity of the presence map: a literal's lines are searched only in chunks holding it
# Below 8 chunks a second scanning thread costs more than it saves. Even on 16 it costs CPU (a console window: 8.6-9.5
# ms in two threads, 7.4-7.8 in one) for little time (7.1-7.6 ms against 7.4-7.9): only a process with idle cores
# beside it takes one.
MIN_CHUNKS_A_THREAD = 8
# Below this the pass is too short to be worth running beside the decode. From it on, the pass also counts each chunk's
# line breaks, so the caller need not count them after its decode (LineLocator).
BACKGROUND_SCAN_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ScanPlan:
    """How the pass looks at a run's later windows (see scan_plan). Both parts only send searches to chunks that may
    not hold a literal, and a search finds only what is there, so the answers stay exact.

    `assumed`: literals not looked for, taken to be in every chunk (a rank prefix on every line).
    `prefixes`: literals looked for by a prefix of theirs, where the log is full of the literal's last bytes and not of
    the prefix's ('validation loss at ite' for 'validation loss at iteration ' among Megatron's progress lines, which
    say 'iteration' twice): Hyperscan stops to check every place a literal's last bytes occur."""

    assumed: frozenset[Literal] = frozenset()
    prefixes: frozenset[tuple[Literal, str]] = frozenset()


NO_PLAN = ScanPlan()  # every literal looked for by its whole text


@dataclass
class Presence:
    """Which literals occur, and in which chunks of CHUNK_BYTES bytes (by where an occurrence ends); for a large
    input, also how many line breaks each chunk holds (see LineLocator)."""

    first_end: dict[Literal, int]
    chunks: dict[Literal, list[int]]
    newlines: list[int] | None = None
    # Literals the pass did not look for, taken to be in every chunk (ScanPlan.assumed).
    assumed: frozenset[Literal] = frozenset()
    chunk_count: int = 0
    # Literals the pass looked for by a prefix (ScanPlan.prefixes): for them, first_end and chunks tell where the prefix
    # ends, so they may be absent where they are listed (never the other way round).
    prefixed: frozenset[Literal] = frozenset()

    def __contains__(self, literal: Literal) -> bool:
        return literal in self.first_end or literal in self.assumed

    def saturated(self) -> frozenset[Literal]:
        """The literals in every chunk."""
        return frozenset(literal for literal, chunks in self.chunks.items() if len(set(chunks)) == self.chunk_count)


def literals_present(
    text: str,
    literals: Iterable[Literal],
    *,
    use_hyperscan: bool = True,
    encoded: bytes | None = None,
    plan: ScanPlan = NO_PLAN,
) -> Presence | None:
    """Which of `literals` occur in `text`, each with the byte offset where its first occurrence ends and the
    chunks it occurs in, in one pass; None when no fast engine is available. `plan`: literals not looked for, or
    looked for by a prefix (ScanPlan).

    The text is scanned chunk by chunk, each chunk with a look-behind of the longest literal, so an
    occurrence is reported in the chunk where it ends. A literal printed once at start-up then costs one
    chunk's search afterwards, not a sweep to the end of a 50 MB log. Hyperscan lets go of the GIL while it
    scans, so a large text is cut into one run of chunks per core, each scanned in a thread of its own (not in a
    parallel read's worker, whose siblings fill the other cores)."""
    literals = frozenset(literals)
    assumed = plan.assumed & literals
    if assumed == literals:  # nothing left to look for: look for everything
        assumed = frozenset()
    looked_for = literals - assumed
    prefixes = frozenset((literal, prefix) for literal, prefix in plan.prefixes if literal in looked_for)
    compiled = scan_literals.literal_database(looked_for, prefixes) if use_hyperscan else None
    if compiled is None:
        return None
    database, ordered, overlap = compiled
    data = memoryview(encoded if encoded is not None else text.encode("utf-8", errors="replace"))
    counter = _newline_counter() if len(data) >= BACKGROUND_SCAN_BYTES else None
    count = (len(data) + CHUNK_BYTES - 1) // CHUNK_BYTES or 1
    parts = 1 if _in_parallel_worker else max(1, min(os.cpu_count() or 1, count // MIN_CHUNKS_A_THREAD))
    bounds = [count * part // parts for part in range(parts + 1)]
    runs = [(bounds[part], bounds[part + 1]) for part in range(parts)]
    if parts == 1:
        found = [_chunks_scan(database, ordered, overlap, data, runs[0], None, counter)]
    else:
        scratches = [scan_literals.hyperscan.Scratch(database) for _ in runs]
        with ThreadPoolExecutor(max_workers=parts) as pool:
            found = list(
                pool.map(
                    lambda run, scratch: _chunks_scan(database, ordered, overlap, data, run, scratch, counter),
                    runs,
                    scratches,
                )
            )
    first_end: dict[Literal, int] = {}
    chunks: dict[Literal, list[int]] = {literal: list(range(count)) for literal in assumed}
    for part_first, part_chunks, _ in found:  # in text order: a literal's first occurrence is in its first run
        for literal, end in part_first.items():
            first_end.setdefault(literal, end)
        for literal, indexes in part_chunks.items():
            chunks.setdefault(literal, []).extend(indexes)
    newlines = [count for _, _, part_newlines in found for count in part_newlines] if counter is not None else None
    return Presence(first_end, chunks, newlines, assumed, count, frozenset(literal for literal, _ in prefixes))


# A plan pays when the checks it saves over the windows still to read cost more than compiling its database. Measured
# on the development machine: a 16 MB window of the bench's Megatron log took 22.3 ms with its 75 literals found in
# every chunk (64 rank prefixes, 'iteration', ' | consumed samples:', NCCL channel lines: about 650,000 occurrences)
# and 15.0 ms without them, about 11 ns an occurrence; compiling the 1,700 other literals took 25-27 ms. The places
# where a literal's last bytes occur cost about as much: 'validation loss at iteration ' and 'saving checkpoint at
# iteration' took about 2 ms each of that window, whose lines say 'iteration' twice (175,000 times); looking for ten
# such literals by prefixes took the pass from 8.7 to 6.7 ms (two threads).
CONFIRM_SECONDS = 11e-9
COMPILE_SECONDS = 0.027
SAMPLE_BYTES = 64 * 1024  # the stretch of a window whose occurrences are counted to estimate the window's
# A literal's last TAIL_BYTES bytes are common when they occur in the first TAIL_SAMPLE_BYTES of the sample: rarer
# ones cost under 11 ns x 1,000 a window. Building the set of a sample's 5-byte strings takes 3 ms on 16 KB.
TAIL_BYTES = 5
TAIL_SAMPLE_BYTES = 16 * 1024
PREFIX_MIN_BYTES = 8  # a prefix shorter than this could be anywhere: every search for the literal would go everywhere


def scan_plan(
    presence: Presence | None, data: bytes | bytearray | memoryview, windows_left: int, literals: Iterable[Literal]
) -> ScanPlan:
    """How the pass can look at a run's later windows, from what it found in this one, when the checks saved
    outweigh the compile (ScanPlan): the literals found in every chunk (a rank prefix on every line, a progress
    line's words) taken as present in every chunk of the next windows, and literals whose last bytes are common in
    this window but not a prefix's looked for by that prefix. The ranks a window shows may include a prefix it
    lacks, which an earlier window of the same run showed (TextScanner.present_among)."""
    if presence is None or windows_left < 1 or len(data) == 0:
        return NO_PLAN
    middle = max(0, len(data) // 2 - SAMPLE_BYTES // 2)
    sample = bytes(data[middle : middle + SAMPLE_BYTES])
    scale = len(data) / len(sample) * CONFIRM_SECONDS * windows_left
    saturated = presence.saturated()
    lowered = sample.lower() if any(ignorecase for _, ignorecase in saturated) else sample
    saved = sum((lowered if ignorecase else sample).count(text.encode()) for text, ignorecase in saturated) * scale
    prefixes, prefix_saved = _prefixes(frozenset(literals) - saturated, sample)
    if saved + prefix_saved * scale <= COMPILE_SECONDS:
        return NO_PLAN
    return ScanPlan(saturated, prefixes)


def _prefixes(literals: frozenset[Literal], sample: bytes) -> tuple[frozenset[tuple[Literal, str]], int]:
    """The literals of the pass whose last TAIL_BYTES bytes are common in the sample, each with its longest prefix
    that is absent from the sample and ends in bytes that are not common; and how many checks of the sample the
    prefixes save. Case-blind literals keep their whole text."""
    head = sample[:TAIL_SAMPLE_BYTES]
    common = {head[i : i + TAIL_BYTES] for i in range(len(head) - TAIL_BYTES + 1)}
    chosen: list[tuple[Literal, str]] = []
    tails: set[bytes] = set()  # Hyperscan checks a place once for all the literals ending there
    for literal in literals:
        text, ignorecase = literal
        encoded = text.encode()
        if ignorecase or len(encoded) <= PREFIX_MIN_BYTES or encoded[-TAIL_BYTES:] not in common:
            continue
        for end in range(len(encoded) - 1, PREFIX_MIN_BYTES - 1, -1):
            prefix = encoded[:end]
            if prefix[-TAIL_BYTES:] not in common and prefix not in sample:
                try:
                    chosen.append((literal, prefix.decode()))
                except UnicodeDecodeError:  # cut inside a character: a shorter prefix will do
                    continue
                tails.add(encoded[-TAIL_BYTES:])
                break
    return frozenset(chosen), sum(sample.count(tail) for tail in tails)


def _chunks_scan(
    database,
    ordered: list[Literal],
    overlap: int,
    data: memoryview,
    run: tuple[int, int],
    scratch,
    counter: Callable[[memoryview], int] | None,
) -> tuple[dict[Literal, int], dict[Literal, list[int]], list[int]]:
    """The chunks first..last-1 of `data`: each literal's first end offset and the chunks it ends in, and (with a
    `counter`) each chunk's line breaks."""
    first_end: dict[Literal, int] = {}
    chunks: dict[Literal, list[int]] = {}
    newlines: list[int] = []
    for chunk in range(*run):
        if counter is not None:
            newlines.append(counter(data[chunk * CHUNK_BYTES : (chunk + 1) * CHUNK_BYTES]))
        begin = max(0, chunk * CHUNK_BYTES - overlap)

        def on_match(index: int, start: int, end: int, flags: int, context: object) -> None:
            literal = ordered[index]
            first_end.setdefault(literal, begin + end)
            chunks.setdefault(literal, []).append(chunk)

        database.scan(data[begin : (chunk + 1) * CHUNK_BYTES], match_event_handler=on_match, scratch=scratch)
    return first_end, chunks, newlines


_in_parallel_worker = False


@contextlib.contextmanager
def parallel_worker() -> Iterator[None]:
    """The calling process reads as one of a parallel read's workers meanwhile, one reader a core: its pass takes no
    second thread (see literals_present) and counts line breaks without numpy (see _newline_counter); as before
    afterwards. The setting is the process's: another of its threads reading meanwhile reads the same way."""
    global _in_parallel_worker
    before = _in_parallel_worker
    _in_parallel_worker = True
    try:
        yield
    finally:
        _in_parallel_worker = before


def _newline_counter() -> Callable[[memoryview], int]:
    """How the pass counts a chunk's line breaks. A process reading on its own (the site, a log the command line
    does not split) counts with numpy, which lets go of the GIL, so the caller decodes meanwhile (50 MB: 66 ms
    against 74-88). The command line's workers fill every core anyway: there the cheapest count wins and numpy's
    import (40-80 ms of start-up, before any worker reads) is never made."""
    return (None if _in_parallel_worker else _numpy_counter()) or newlines_count


@functools.lru_cache(maxsize=1)
def _numpy_counter() -> Callable[[memoryview], int] | None:
    try:
        import numpy
    except ImportError:  # pragma: no cover - newlines_count then counts
        return None
    newline = numpy.uint8(ord("\n"))
    return lambda view: int(numpy.count_nonzero(numpy.frombuffer(view, numpy.uint8) == newline))


def newlines_count(view: memoryview) -> int:
    """The line breaks in a buffer, holding the GIL. Taking them out finds each with memchr, where bytes.count looks
    at every byte: 1.9 ms on 16 MB against 4.8."""
    data = bytes(view)
    return len(data) - len(data.replace(b"\n", b""))


def scanning_prepare(literals: Iterable[Literal]) -> None:
    """Compile (or load) the literal pass now: processes forked after this inherit it instead of each making its own."""
    scan_literals.literal_database(frozenset(literals))


def presence_started(
    encoded: bytes | bytearray | memoryview, literals: Iterable[Literal], plan: ScanPlan = NO_PLAN
) -> Future[Presence | None]:
    """`literals_present` over `encoded` (as `plan` says), begun now in a thread of its own
    when the input is large, so that the caller's decoding and line counting (which hold the GIL) run while Hyperscan
    scans (which does not). A parallel read's worker, whose siblings fill the other cores, scans before it decodes:
    the thread only cost it CPU (600 MB Megatron log: 1.08 -> 1.02-1.03 s in all).

    A thread per call, not a pool kept by the module: the engine forks worker processes for a job's files, and a
    pool inherited through a fork believes it still has its idle thread, so work given to it in the child waits
    forever."""
    done: Future[Presence | None] = Future()
    if len(encoded) < BACKGROUND_SCAN_BYTES or scan_literals.hyperscan is None or _in_parallel_worker:
        done.set_result(literals_present("", literals, encoded=encoded, plan=plan))
        return done

    def scan() -> None:
        try:
            done.set_result(literals_present("", literals, encoded=encoded, plan=plan))
        except BaseException as err:  # handed to whoever waits on the result
            done.set_exception(err)

    threading.Thread(target=scan, name="presence", daemon=True).start()
    return done


def bytes_among(data: bytes | bytearray | memoryview, needles: tuple[str, ...]) -> set[str]:
    """Which of `needles` occur in `data`, in one pass without the GIL when Hyperscan is installed. CPython searches
    one needle a pass, and a two-byte needle such as CRLF crawls through a log full of progress-bar carriage returns
    (40 ms on 50 MB, against 10 for the pass)."""
    database = _needles_database(needles) if scan_literals.hyperscan is not None else None
    if database is None:
        return {needle for needle in needles if needle.encode() in data}
    found: set[str] = set()
    database.scan(
        data,
        match_event_handler=lambda index, *_: found.add(needles[index]),
        scratch=scan_literals.hyperscan.Scratch(database),  # a microsecond; callers in several threads each get their own
    )
    return found


@functools.lru_cache(maxsize=8)
def _needles_database(needles: tuple[str, ...]):
    try:
        database = scan_literals.hyperscan.Database(mode=scan_literals.hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=["".join(f"\\x{byte:02x}" for byte in needle.encode()).encode() for needle in needles],
            ids=list(range(len(needles))),
            elements=len(needles),
            flags=[scan_literals.hyperscan.HS_FLAG_SINGLEMATCH] * len(needles),
        )
    except Exception:  # an engine that cannot compile is an optimisation lost, not an error
        return None
    return database
