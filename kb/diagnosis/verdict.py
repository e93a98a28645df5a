"""The multi-rank verdict: from what each rank's watchdog said, which ranks hold the job up."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from kb.diagnosis.facts import RankState


@dataclass(frozen=True)
class RankVerdict:
    summary: str
    behind: list[int]
    silent: list[int]
    disagree: bool
    table: list[dict]


def rank_verdict(ranks: dict[int, RankState], world_size: int | None) -> RankVerdict | None:
    """Say which ranks are behind (lowest progress), which never reported, and whether ranks disagree on
    the collective at the same sequence number. None when no rank reported a watchdog timeout."""
    reporting = {r: s for r, s in ranks.items() if s.op or s.last_completed is not None}
    if not reporting:
        return None
    table = [asdict(reporting[r]) for r in sorted(reporting)]
    progress = {r: _progress(s) for r, s in reporting.items()}
    lowest = min(progress.values())
    behind = sorted(r for r, p in progress.items() if p == lowest) if len(set(progress.values())) > 1 else []
    by_seq: dict[int, set[str]] = {}
    for state in reporting.values():
        if state.seq is not None and state.op:
            by_seq.setdefault(state.seq, set()).add(state.op)
    disagree = any(len(ops) > 1 for ops in by_seq.values())
    size = max(world_size or 0, max(reporting) + 1)
    silent = sorted(set(range(size)) - set(reporting)) if world_size else []

    parts = [f"{_ranks_text(sorted(reporting))} timed out"]
    ops = sorted({s.op for s in reporting.values() if s.op})
    seqs = sorted({s.seq for s in reporting.values() if s.seq is not None})
    if ops and seqs:
        parts[0] += f" in {'/'.join(ops)} (SeqNum {', '.join(map(str, seqs))})"
    if behind:
        parts.append(f"{_ranks_text(behind)} had made the least progress and {'is' if len(behind) == 1 else 'are'} behind the others")
    if disagree:
        parts.append("ranks disagree on the collective at the same SeqNum: the code paths differ between ranks (a desync)")
    if silent:
        parts.append(f"{_ranks_text(silent)} of {size} never reported a timeout: "
                     f"{'it is' if len(silent) == 1 else 'they are'} most likely where the job is stuck")
    summary = "; ".join(parts) + "."
    return RankVerdict(summary=summary[0].upper() + summary[1:], behind=behind, silent=silent,
                       disagree=disagree, table=table)


def _progress(state: RankState) -> int:
    if state.last_completed is not None:
        return state.last_completed
    return (state.seq or 0) - 1


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    runs: list[str] = []
    start = prev = ranks[0]
    for r in ranks[1:] + [None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        runs.append(f"{start}" if start == prev else f"{start}–{prev}")
        if r is not None:
            start = prev = r
    return "ranks " + ", ".join(runs)
