"""Facts from NCCL's RAS client (`ncclras`, NCCL >= 2.24) pasted as evidence: which ranks stopped answering,
which processes it declared dead, which ranks are behind in their communicator, and, from two JSON snapshots,
whether the operation counts still move (slow) or are frozen (hung).

Wording read from NVIDIA/nccl src/ras/client_support.cc at v2.24.3-1, v2.25.1-1, v2.26.2-1, v2.28.7-1 and
v2.30.7-1: up to 2.25 an incomplete communicator lists "The missing ranks: 3,5"; from 2.26 one line per rank,
"Rank 21 -- GPU 5 managed by process ... on node ...". The JSON form (`ncclras -f json`) starts in 2.28.7.
"""

from __future__ import annotations

import json
import re
from itertools import islice
from typing import Any

from diagnosis.scan.scanner import TextScanner

INCOMPLETE = "Missing communicator data from "
DEAD = "considered dead (unreachable via the RAS network)"
COUNTS = "operation counts"  # "Communicator ranks have different [AllReduce ]operation counts"
JSON_REPORT = '"nccl_version"'  # the first key of an `ncclras -f json` report
LITERALS = (INCOMPLETE, DEAD, COUNTS, JSON_REPORT)

_MISSING_LIST = re.compile(r"^\s{0,8}The missing ranks?: ([\d,]{1,4000})\s*$")
_MISSING_RANK = re.compile(r"\s{0,8}Rank (\d{1,7}) --")  # 2.26+: one line per rank of an incomplete communicator
_COUNT_RANK = re.compile(r"\s{0,8}Rank (\d{1,7})(?: has (?:launched up to operation (\d{1,20})|not launched any operations))? --")
_GROUP_LINE = re.compile(r"^\s{0,8}\d{1,7} ranks have (?:launched up to operation (\d{1,20})|not launched any operations)")
_DEAD_COUNT = re.compile(r"\s{0,8}(\d{1,7}) job process(?:es are| is) " + re.escape(DEAD))
_REPORT_START = re.compile(r'\{\s{0,40}"nccl_version"')
_BLOCK_LINES = 4000  # a report block is never longer; a flood of lines is cut here
_BLOCK_BYTES = 512 * 1024
_REPORT_BYTES = 4 * 1024 * 1024  # one JSON report of a large job's communicators
MAX_BLOCKS = 64  # report blocks read per kind: a paste holds a few reports, not thousands


def ras_facts(scanner: TextScanner) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    text = scanner.text
    missing = set()
    for start, _ in islice(scanner.lines_with(INCOMPLETE), MAX_BLOCKS):
        for line in _block_after(text, start):
            listed = _MISSING_LIST.match(line)
            if listed:
                missing |= {int(r) for r in listed.group(1).split(",") if r}
            rank = _MISSING_RANK.match(line)
            if rank:
                missing.add(int(rank.group(1)))
    for start, end in islice(scanner.lines_with(DEAD), MAX_BLOCKS):
        dead = _DEAD_COUNT.match(text, start, end)
        if dead:
            facts["ras_dead_processes"] = max(int(dead.group(1)), facts.get("ras_dead_processes", 0))
    behind = set()
    for start, _ in islice(scanner.lines_with(COUNTS), MAX_BLOCKS):
        behind |= _behind_in_block(_block_after(text, start))
    json_missing, frozen = _json_reports(scanner)
    missing |= json_missing
    if missing:
        facts["ras_missing_ranks"] = sorted(missing)
    if behind:
        facts["ras_behind_ranks"] = sorted(behind)
    if frozen is not None:
        facts["ras_counts_frozen"] = frozen
    return facts


def _block_after(text: str, start: int) -> list[str]:
    """The lines after a heading line, up to the blank line that ends the RAS report block (at most
    _BLOCK_BYTES of it: a hostile paste with no blank line costs one bounded slice per block)."""
    end = text.find("\n\n", start, start + _BLOCK_BYTES)
    return text[start : end if end != -1 else start + _BLOCK_BYTES].split("\n")[1:_BLOCK_LINES]


def _behind_in_block(lines: list[str]) -> set[int]:
    """Ranks listed at the lowest operation count of a communicator whose ranks disagree on the count. RAS lists
    only the outlier group's ranks; when the outliers are ahead, the ranks behind are not named."""
    at: dict[int, int] = {}
    counts: set[int] = set()
    current: int | None = None
    for line in lines:
        group = _GROUP_LINE.match(line)
        if group:
            current = int(group.group(1) or 0)
            counts.add(current)
            continue
        rank = _COUNT_RANK.match(line)
        if rank:
            count = int(rank.group(2)) if rank.group(2) else (0 if "not launched" in line else current)
            if count is not None:
                at[int(rank.group(1))] = count
                counts.add(count)
    if len(counts) < 2 or not at:
        return set()
    lowest = min(counts)
    return {r for r, c in at.items() if c == lowest}


def _json_reports(scanner: TextScanner) -> tuple[set[int], bool | None]:
    """Missing ranks from `ncclras -f json` reports, and, with two or more reports of the same communicators,
    whether every rank's collective counts stayed the same between them."""
    text = scanner.text
    present = scanner.present_among((JSON_REPORT,))
    if not (JSON_REPORT in text if present is None else present):
        return set(), None
    decoder = json.JSONDecoder()
    reports: list[dict] = []
    for start in islice(_REPORT_START.finditer(text), MAX_BLOCKS):
        if len(reports) >= 16:
            break
        try:  # a bounded slice: a decode error counts the lines before it, which must not be the whole paste
            report, _ = decoder.raw_decode(text[start.start() : start.start() + _REPORT_BYTES])
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("communicators"), list):
            reports.append(report)
    missing: set[int] = set()
    snapshots: list[dict[tuple, Any]] = []
    for report in reports:
        counts: dict[tuple, Any] = {}
        for comm in report["communicators"]:
            if not isinstance(comm, dict):
                continue
            for rank in comm.get("missing_ranks") or []:
                if isinstance(rank, dict) and isinstance(rank.get("rank"), int):
                    missing.add(rank["rank"])
            for rank in comm.get("ranks") or []:
                if isinstance(rank, dict) and isinstance(rank.get("collective_counts"), dict):
                    counts[(comm.get("hash"), rank.get("rank"))] = rank["collective_counts"]
        snapshots.append(counts)
    frozen = None
    if len(snapshots) >= 2 and snapshots[0] and snapshots[0].keys() == snapshots[-1].keys():
        frozen = snapshots[0] == snapshots[-1]
    return missing, frozen
