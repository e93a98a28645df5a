"""Read the text dumps of PyTorch's debug server into per-rank evidence: each rank's stack, the ranks that
did not answer, and the Flight Recorder analyzer's tables as the facts and rank groups a binary dump gives.

What PyTorch writes (read in the torch 2.10.0-2.15.0 wheels, torch/distributed/debug/_frontend.py and
_debug_handlers.py): `torch.distributed.debug.start_debug_server` exists from 2.10; its `dump_dir` and
`dump_interval` (default 60 s) from 2.11. Then rank 0's frontend writes every interval one file per enabled dump,
`<kind>_<YYYYmmdd_HHMMSS>.txt`, each a whole snapshot of every rank. The kinds enabled by default are `stacks` and
`fr_trace` (2.11-2.12), plus `torchcomms_health_check` (2.13-2.14), plus `c10d_health_check` (2.15).

- `stacks` (also `pyspy_dump`, `wait_counters` and the health checks): one section per rank of the world, in
  rank order, headed `=== Rank <r>: <that rank's worker URL>/handler/<endpoint>? ===`, then the rank's answer:
  for `stacks` (endpoint dump_traceback) faulthandler's dump of every thread, for `pyspy_dump` py-spy's. A rank
  whose answer is an error gets `Error: <HTTP status>` instead (from 2.12 a fetch that times out is a 408), and
  from 2.12 such a file starts with `PARTIAL DATA: <answered>/<world> workers responded` and one
  `  Rank <r>: <why>` line per rank that did not answer.
- `fr_trace`: `=== FR Trace ===` (Gloo and other CPU work) and `=== FR Trace NCCL ===`, each followed by the
  Flight Recorder analyzer's tables in tabulate's "plain" layout under `--- Groups ---`, `--- Memberships ---`,
  `--- Collectives ---` and `--- NCCL Calls ---` (torchcomms_fr_trace: `=== TorchComms FR Trace ===`). A
  Collectives row is one collective as matched across ranks: `missing_ranks` names the ranks that never issued
  it, and a row whose `pass_check` is False lists in `mismatch_collectives` what the culprit ranks issued instead.
  On Gloo this dump fails in 2.13.0 and 2.15.0 (the analyzer finds no process group for Gloo's entries), so
  the files seen in practice come from NCCL jobs; tests/fixtures/generators/README.md says how ours were made.

Every reader here starts from a scanner literal, so a log without these dumps costs a few substring searches.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from diagnosis.scan.scanner import TextScanner
from diagnosis.readers.stacks import FAULTHANDLER, STACK_HEAD, Stack
from diagnosis.readers.base import FileReading, JobParts, Window
from diagnosis.readers.facts import facts_merge

RANK_HEADER = "=== Rank "
FR_HEADER = "FR Trace ==="  # "=== FR Trace ===", "=== FR Trace NCCL ===", "=== TorchComms FR Trace ==="
PARTIAL = "PARTIAL DATA: "
LITERALS = (RANK_HEADER, FR_HEADER, PARTIAL)

# The dump kinds the frontend names its files after (DebugHandler.dump_filename; `tcpstore`, plain `key: value`
# lines with no header, is read as any log), and the endpoints whose answers are stacks, by their format.
DUMP_KINDS = frozenset(
    {"stacks", "fr_trace", "pyspy_dump", "wait_counters", "torchcomms_fr_trace", "torchcomms_health_check", "c10d_health_check"}
)
STACK_ENDPOINTS = {"dump_traceback": "faulthandler", "pyspy_dump": "py-spy"}
# The statuses the frontend (2.12+) gives a fetch that failed: timed out, could not connect, any other error. Other
# statuses are the worker's own answer (404: no such handler, as torchcomms_health_check without torchcomms).
NO_ANSWER = frozenset({"408", "503", "502"})

MAX_SECTIONS = 100_000  # rank sections read per text: a job of that many ranks, or a hostile paste
MAX_SECTION_BYTES = 4 * 1024 * 1024  # one rank's answer; a section with no end is cut here
MAX_TABLES = 16  # FR sections read per text
MAX_ROWS = 20_000  # rows of one table: the recorder keeps 2000 entries per rank by default
MAX_ROW = 64 * 1024  # one row's characters; longer rows are cut (a crafted line must not be scanned whole)

_RANK_HEADER_RE = re.compile(r"=== Rank (\d{1,7}): (\S{1,2000}) ===[ \t\r]*$")
_ENDPOINT_RE = re.compile(r"/handler/(\w{1,64})\?")
_ERROR_RE = re.compile(r"Error: (\d{3})[ \t\r]*$")
_PARTIAL_RE = re.compile(r"PARTIAL DATA: (\d{1,7})/(\d{1,7}) workers responded")
_PARTIAL_RANK_RE = re.compile(r"  Rank (\d{1,7}): ")
# Where an answer ends: the next line at the margin that is not itself a stack's header.
_STACK_HEAD_RE = re.compile(STACK_HEAD)
_DUMP_NAME_RE = re.compile(r"(?:^|/)([a-z][a-z0-9_]{0,40})_(\d{8}_\d{6})\.txt$")
_NUMBER_RE = re.compile(r"\d{1,7}")
_INNER_RE = re.compile(
    r"(\d{1,7}): Collective\(id=\d{1,9}, group_id='[^'\n]{0,200}', pass_check=\w{1,5}, collective_seq_id=\d{1,12}, "
    r"p2p_seq_id=\d{1,12}, record_id=\d{1,12}, pg_desc='[^'\n]{0,300}', collective_name='([^'\n]{0,200})', "
    r"input_sizes=(\[[^=\n]{0,2000}?\]), output_sizes=(\[[^=\n]{0,2000}?\]), expected_ranks=[^=\n]{0,20000}?, "
    r"collective_state='(\w{1,20})'"
)


@dataclass
class DebugDumpReading:
    """What the debug server's dumps in one text say, in the shapes the engine already uses."""

    stacks: list[Stack]  # the text's stacks, with the rank of the section they sit in
    facts: dict[str, Any] = field(default_factory=dict)  # world_size, debug_unanswered_ranks, fr_* facts
    groups: list[dict[str, Any]] = field(default_factory=list)  # ranks placed by the FR tables and by silence


@dataclass
class _Section:
    rank: int
    endpoint: str
    start: int  # where the rank's answer starts (after its header line)
    end: int


def debug_dumps_read(scanner: TextScanner, stacks: list[Stack], start: int = 0, end: int | None = None) -> DebugDumpReading:
    """Give each stack inside a rank's section of a `stacks` or `pyspy_dump` dump that rank, keep only the main
    thread of a faulthandler dump, and read the `fr_trace` tables. Groups and facts come from the dumps whose
    headers lie in [start, end) (a window's own part); sections are looked for in the whole text, so a stack in
    the window whose heading lies in its look-behind still gets its rank, and an FR header's tables are read as
    far as the text goes (a window's look-ahead)."""
    if not any(next(iter(scanner.lines_with(literal)), None) for literal in LITERALS):
        return DebugDumpReading(stacks)
    text = scanner.text
    end = len(text) if end is None else end
    sections = _sections(scanner)
    reading = DebugDumpReading(_stacks_ranked(text, sections, stacks))
    own = [s for s in sections if start <= s.start < end]
    silent = {
        s.rank for s in own for m in [_ERROR_RE.match(text, s.start, min(s.end, s.start + 80))] if m and m.group(1) in NO_ANSWER
    }
    silent |= _partial_silent(scanner, start, end)
    world = _world_size(sections, scanner)  # every section the text holds: a window may hold part of a dump
    if world:
        reading.facts["world_size"] = world
    if silent:
        reading.facts["debug_unanswered_ranks"] = sorted(silent)
        reading.groups.append(
            {
                "ranks": sorted(silent),
                "where": "no answer to the debug server",
                "state": "no answer",
                "odd": True,
                "frames": [],
                "basis": "debug-server",
            }
        )
    for table_start in islice((s for s, _ in scanner.lines_with(FR_HEADER) if start <= s < end), MAX_TABLES):
        facts, groups = _recorder_tables(text, table_start)
        _facts_join(reading.facts, facts)
        reading.groups += groups
    return reading


def debug_dump_rounds(names: list[str], heads: dict[str, bytes]) -> dict[str, str]:
    """Older rounds of the periodic dumps: file name -> the newer file of the same kind in the same folder
    that supersedes it. Each round is a whole snapshot of every rank (its stacks, or the recorder's whole
    ring buffer), so the newest says where the ranks are now. `heads`: the first bytes of each file, which
    must open the way the debug server's dumps do (a file merely named like one is kept)."""
    rounds: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name in names:
        match = _DUMP_NAME_RE.search(name)
        if not match or match.group(1) not in DUMP_KINDS or not _dump_head(heads.get(name, b"")):
            continue
        folder = name[: match.start()]
        rounds.setdefault((folder, match.group(1)), []).append((match.group(2), name))
    superseded: dict[str, str] = {}
    for files in rounds.values():
        newest = max(files)[1]
        superseded.update({name: newest for _, name in files if name != newest})
    return superseded


def _dump_head(head: bytes) -> bool:
    return head.startswith((RANK_HEADER.encode(), PARTIAL.encode(), b"=== FR Trace", b"=== TorchComms FR Trace"))


# ---- rank sections ---------------------------------------------------------------------------------


def _sections(scanner: TextScanner) -> list[_Section]:
    """Every `=== Rank <r>: <url> ===` section, its answer ending at the next such header or at the first line
    at the margin that does not belong to a stack dump (the dump pasted into a longer log)."""
    text = scanner.text
    headers: list[tuple[int, int, int, str]] = []
    for line_start, line_end in islice(scanner.lines_with(RANK_HEADER), MAX_SECTIONS):
        match = _RANK_HEADER_RE.match(text, line_start, min(line_end, line_start + 2100))
        if match:
            endpoint = _ENDPOINT_RE.search(match.group(2))
            headers.append((line_start, line_end, int(match.group(1)), endpoint.group(1) if endpoint else ""))
    sections = []
    for index, (_, line_end, rank, endpoint) in enumerate(headers):
        limit = headers[index + 1][0] if index + 1 < len(headers) else len(text)
        body = min(line_end + 1, len(text))
        sections.append(_Section(rank, endpoint, body, _answer_end(text, body, min(limit, body + MAX_SECTION_BYTES))))
    return sections


def _answer_end(text: str, start: int, limit: int) -> int:
    """Where a rank's answer ends: at its first line (after the first) that starts at the margin and is not a
    thread's or process's header; stack lines are indented or blank."""
    pos = start
    first = True
    while pos < limit:
        line_end = text.find("\n", pos, limit)
        line_end = limit if line_end == -1 else line_end
        line = text[pos : min(line_end, pos + 200)]
        if line.strip() and not line[:1].isspace() and not first and not _STACK_HEAD_RE.match(line):
            return pos
        first = False
        pos = line_end + 1
    return limit


def _stacks_ranked(text: str, sections: list[_Section], stacks: list[Stack]) -> list[Stack]:
    """Stacks inside a stack section take its rank. faulthandler lists the interpreter's threads newest first,
    so the main thread, whose place is the rank's place, is the section's last thread; the others (the
    worker server's own thread, helpers) are dropped so that each rank is placed once."""
    if not sections or not stacks:
        return stacks
    stack_sections = [s for s in sections if s.endpoint in STACK_ENDPOINTS]
    starts = [s.start for s in stack_sections]
    kept: list[Stack] = []
    for stack in stacks:
        index = bisect.bisect_right(starts, stack.offset) - 1
        section = stack_sections[index] if index >= 0 else None
        if section is None or not section.start <= stack.offset < section.end:
            kept.append(stack)
            continue
        if stack.kind != STACK_ENDPOINTS[section.endpoint]:
            kept.append(stack)
            continue
        header_end = text.find("\n", stack.offset, section.end)
        if stack.kind == "faulthandler" and header_end != -1 and text.find(FAULTHANDLER, header_end, section.end) != -1:
            continue  # a later thread's header follows in the same answer: not the main thread
        stack.rank = section.rank
        kept.append(stack)
    return kept


def _partial_silent(scanner: TextScanner, start: int, end: int) -> set[int]:
    """Ranks listed under a `PARTIAL DATA:` line that heads an fr_trace dump: workers whose Flight Recorder, which
    every worker serves, gave no answer. Above rank sections the same ranks have their `Error:` section, read there."""
    text = scanner.text
    silent: set[int] = set()
    for line_start, line_end in islice(scanner.lines_with(PARTIAL), MAX_TABLES):
        if not start <= line_start < end or not _PARTIAL_RE.match(text, line_start, line_end):
            continue
        listed: set[int] = set()
        pos = line_end + 1
        for _ in range(MAX_SECTIONS):
            rank = _PARTIAL_RANK_RE.match(text, pos, pos + 20)
            next_line = text.find("\n", pos)
            if not rank or next_line == -1:
                break
            listed.add(int(rank.group(1)))
            pos = next_line + 1
        while text.startswith("\n", pos):
            pos += 1
        if not text.startswith(RANK_HEADER, pos):
            silent |= listed
    return silent


def _world_size(sections: list[_Section], scanner: TextScanner) -> int | None:
    """The world size a dump shows: the frontend asks every rank from 0 up, so one dump's sections numbered
    0, 1, ..., n-1 are the whole world; `PARTIAL DATA: a/n` says n outright."""
    text = scanner.text
    sizes = [
        int(m.group(2)) for s, e in islice(scanner.lines_with(PARTIAL), MAX_TABLES) for m in [_PARTIAL_RE.match(text, s, e)] if m
    ]
    run: list[int] = []
    for section in sections:
        if section.rank == 0:
            run = [0]
        elif run and section.rank == run[-1] + 1:
            run.append(section.rank)
        if len(run) >= 2:
            sizes.append(len(run))
    return max(sizes) if sizes else None


# ---- Flight Recorder tables ------------------------------------------------------------------------


def _recorder_tables(text: str, header_start: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Facts and rank groups from the tables after one `... FR Trace ... ===` header."""
    tables = _tables_after(text, header_start)
    facts: dict[str, Any] = {}
    groups_rows = tables.get("Groups")
    if groups_rows and groups_rows[1]:
        facts["fr_pg_count"] = len(groups_rows[1])
    collectives = tables.get("Collectives")
    if not collectives:
        return facts, []
    columns, rows = collectives
    by_group: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        cells = dict(zip(columns, row))
        name = cells.get("collective_name", "")
        if not name or " " in name or name.rsplit(":", 1)[-1] in ("send", "recv"):
            continue  # point-to-point work has no collective sequence number to line up
        by_group.setdefault(cells.get("group_id", ""), []).append(cells)
    groups: list[dict[str, Any]] = []
    missing: set[int] = set()
    for pg, cells_list in by_group.items():
        found = _divergence(pg, cells_list)
        if found is None:
            continue
        group_missing, mismatched, pg_groups = found
        missing |= group_missing
        if mismatched:
            facts["fr_mismatch"] = True
        groups += pg_groups
    if missing:
        facts["fr_missing_ranks"] = sorted(missing)
    return facts, groups


def _divergence(pg: str, rows: list[dict[str, str]]) -> tuple[set[int], bool, list[dict[str, Any]]] | None:
    """The first collective of one process group that some rank never issued or issued differently, as the
    groups flight_recorder.py makes from the dumps themselves."""
    ordered = sorted(rows, key=lambda r: _int(r.get("collective_seq_id")))
    for index, row in enumerate(ordered):
        missing = set(_numbers(row.get("missing_ranks", "")))
        others = _inner_collectives(row.get("mismatch_collectives", ""))
        op, sizes = _op(row.get("collective_name", "")), (row.get("input_sizes"), row.get("output_sizes"))
        mismatched = {rank: inner for rank, inner in others.items() if inner[0] != op or inner[1:3] != sizes}
        if not missing and not mismatched:
            continue
        seq = _int(row.get("collective_seq_id"))
        pg_name, _, desc = row.get("pg_desc", pg).partition(":")
        where_pg = f"in process group {pg_name or pg}" + (f" ({desc})" if desc and desc != pg_name else "")
        expected = set(_numbers(row.get("expected_ranks", "")))
        buckets: dict[tuple[str, str, bool], list[int]] = {}
        for rank in sorted(expected - missing - set(mismatched)):
            state = others[rank][3] if rank in others else row.get("collective_state") or "scheduled"
            buckets.setdefault((f"{op} #{seq} {where_pg}", state, False), []).append(rank)
        for rank, (inner_op, _, _, state) in sorted(mismatched.items()):
            buckets.setdefault((f"{inner_op} #{seq} {where_pg}", state, True), []).append(rank)
        for rank in sorted(missing):
            buckets.setdefault(
                (f"never issued #{seq} {where_pg} ({_last_issued(ordered[:index], rank)})", "missing", True), []
            ).append(rank)
        groups = [
            {"ranks": ranks, "where": where, "state": state, "odd": odd, "frames": []}
            for (where, state, odd), ranks in buckets.items()
        ]
        groups.sort(key=lambda g: (-len(g["ranks"]), g["odd"], g["ranks"][0]))
        return missing, bool(mismatched), groups
    return None


def _last_issued(before: list[dict[str, str]], rank: int) -> str:
    for row in reversed(before):
        if rank not in _numbers(row.get("missing_ranks", "")):
            return f"last issued {_op(row.get('collective_name', ''))} #{_int(row.get('collective_seq_id'))}"
    return "issued none"


def _inner_collectives(cell: str) -> dict[int, tuple[str, str, str, str]]:
    """rank -> (op, input sizes, output sizes, state) of what the culprit ranks issued, from the
    `mismatch_collectives` cell (a dict of the analyzer's Collective tuples, as Python prints them)."""
    if not cell.startswith("{"):
        return {}
    return {
        int(m.group(1)): (_op(m.group(2)), m.group(3), m.group(4), m.group(5)) for m in islice(_INNER_RE.finditer(cell), 1000)
    }


def _tables_after(text: str, header_start: int) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The Groups and Collectives tables after an FR header: title -> (column names, rows of cell texts). A
    table runs from its `--- Title ---` line to the next such line, a `===` line or a blank line; the others
    (Memberships, NCCL Calls: one row per rank and call) are stepped over with one search each."""
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    pos = text.find("\n", header_start) + 1
    while 0 < pos < len(text) and text.startswith("--- ", pos):
        title_end = text.find("\n", pos)
        if title_end == -1:
            break
        title = text[pos + 4 : min(title_end, pos + 200)].rstrip("\r").removesuffix(" ---").strip()
        body = title_end + 1
        ends = [
            e for e in (text.find("\n--- ", title_end), text.find("\n===", title_end), text.find("\n\n", title_end)) if e != -1
        ]
        table_end = min(ends) if ends else len(text)
        if title in ("Groups", "Collectives") and title not in tables:
            lines = text[body:table_end].split("\n", MAX_ROWS + 1)[: MAX_ROWS + 1]
            tables[title] = _columns([line[:MAX_ROW].rstrip("\r") for line in lines if line.strip()])
        if table_end >= len(text) or not text.startswith("\n--- ", table_end):
            break
        pos = table_end + 1
    return tables


def _columns(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """tabulate's plain layout pads every column to its widest cell and puts two spaces between columns, so
    a column ends where a run of two or more spaces that every row shares begins, between two headers."""
    if not lines:
        return [], []
    header, rows = lines[0], lines[1:]
    tokens = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", header)]
    if not tokens:
        return [], []
    cuts = []
    for (_, left_end, _), (right_start, _, _) in zip(tokens, tokens[1:]):
        cuts.append(_gap(rows, left_end, right_start))
    bounds = [0] + cuts
    table = []
    for row in rows:
        edges = bounds + [max(len(row), bounds[-1])]
        table.append([row[edges[i] : edges[i + 1]].strip() for i in range(len(tokens))])
    return [name for _, _, name in tokens], table


def _gap(rows: list[str], left: int, right: int) -> int:
    """Where one column ends and the next begins, between the end of one header and the start of the next:
    the middle of the first run of two or more positions that are blank in every row. A damaged table with
    no such run is cut where the next header starts."""
    run_start = None
    for position in range(left, right + 1):
        blank = position < right and all(position >= len(row) or row[position] == " " for row in rows)
        if blank and run_start is None:
            run_start = position
        elif not blank and run_start is not None:
            if position - run_start >= 2:
                return position
            run_start = None
    return right


def _facts_join(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, list):
            into[key] = sorted(set(into.get(key, [])) | set(value))
        elif isinstance(value, bool):
            into[key] = into.get(key, False) or value
        else:
            into[key] = max(into.get(key, 0), value)


def _op(name: str) -> str:
    """`gloo:all_reduce`, `nccl:all_reduce` -> all_reduce (the recorder's profiling name)."""
    return name.split(":", 1)[-1].split(" ", 1)[0] or "?"


def _numbers(cell: str) -> list[int]:
    return [int(n) for n in islice(_NUMBER_RE.findall(cell[:200_000]), 100_000)]


def _int(cell: str | None) -> int:
    return int(cell) if cell and cell.isdigit() else 0


class DebugDumpsReader:
    """The debug server's dumps pasted as text: the stacks reader's stacks given their ranks, ranks placed in their
    collectives, and facts."""

    name = "debug_dumps"
    literals = frozenset((literal, False) for literal in LITERALS)

    def read(self, window: Window, part: FileReading) -> None:
        dumped = debug_dumps_read(window.scanner, part.stacks, window.start, window.limit)
        part.stacks, part.dump_groups = dumped.stacks, dumped.groups
        facts_merge(part.facts, dumped.facts)

    def merge(self, into: FileReading, later: FileReading) -> None:
        into.dump_groups += later.dump_groups

    def shift(self, part: FileReading, by: int) -> None:
        """Its groups hold no line numbers."""

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        job.dump_groups += reading.dump_groups


READER = DebugDumpsReader()
