"""The multi-rank verdict: from what each rank's watchdog said, which ranks hold the job up.

Its findings are also facts (silent_ranks, behind_ranks, ranks_disagree, first_collective) that case
conditions score, so the verdict changes which case wins, not only what the page says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from diagnosis.readers.events import Failure
from diagnosis.readers.facts import RankState
from diagnosis.readers.stacks import Stack
from diagnosis.text import text_clipped


# Rows of the per-rank table kept, and groups shown by the page and the JSON: a crafted 1 MB paste of 4,000 ranks,
# each at its own SeqNum, must not come back as megabytes (the aggregates are still computed over every rank).
TABLE_ROWS = 256
MAX_GROUPS = 24


@dataclass(frozen=True)
class RankVerdict:
    summary: str
    behind: list[int]
    silent: list[int]
    disagree: bool
    table: list[dict]  # one row per reporting rank, the first TABLE_ROWS of them by rank
    groups: list[dict] = field(default_factory=list)
    first_collective: bool = False
    object_collective: bool = False
    table_total: int = 0  # ranks that reported, all of them


def rank_verdict(
    ranks: dict[int, RankState],
    world_size: int | None,
    failure: Failure | None = None,
    *,
    counters_apart: str = "",
    listed: frozenset[int] | set[int] = frozenset(),
) -> RankVerdict | None:
    """Say which ranks are behind (lowest progress), which never reported, and whether ranks disagree on
    the collective at the same or adjacent sequence number. None when no rank reported a watchdog timeout.
    `counters_apart` (from `seqnum_counters_apart`) says why the ranks' SeqNums may count different sequences; then
    only timeouts whose lines name the same group are compared. `listed`: ranks a launcher's failure table names (they
    are processes of the job, silent when they printed no timeout)."""
    reporting = {r: s for r, s in ranks.items() if s.op or s.last_completed is not None}
    if not reporting:
        return None
    table = [dict(vars(reporting[r])) for r in sorted(reporting)[:TABLE_ROWS]]
    progress = {r: _progress(s) for r, s in reporting.items()}
    lowest = min(progress.values())
    behind = sorted(r for r, p in progress.items() if p == lowest) if len(set(progress.values())) > 1 else []
    mismatch = _size_mismatch(reporting, counters_apart)
    ran_past = _ran_past(reporting, counters_apart)
    disagree = _disagree(reporting, counters_apart) or bool(mismatch) or bool(ran_past)
    silent = _silent(reporting, world_size)
    if listed:  # a launcher's table closes the whole job: every rank up to the highest it or a timeout names exists
        silent = sorted(set(silent) | (set(range(max(set(listed) | set(reporting)) + 1)) - set(reporting)))
    seqs = [s.seq for s in reporting.values() if s.seq is not None]
    first = bool(seqs) and max(seqs) <= 1 and len({s.pg for s in reporting.values()}) == 1
    size = max(world_size or 0, max(reporting) + 1, max(listed, default=-1) + 1)
    objects = any(_size_exchange(s) for s in reporting.values())

    parts = [f"{ranks_text(sorted(reporting))} timed out"]
    ops = sorted({s.op for s in reporting.values() if s.op})
    if ops and seqs:
        parts[0] += f" in {'/'.join(ops[:6])}{' and more' if len(ops) > 6 else ''} (SeqNum {_numbers_text(sorted(set(seqs)))})"
    if first:
        parts.append(
            "every one of them was in its first collective: the ranks never completed a single "
            "collective together, which points at the platform (network, GPUs, a rank still starting), not the model"
        )
    if objects and not first:
        parts.append(
            "the collective is the size exchange of all_gather_object or gather_object (one number per rank), "
            "which torch.distributed.checkpoint's save steps begin with"
        )
    if behind:
        parts.append(
            f"{ranks_text(behind)} had made the least progress and {'is' if len(behind) == 1 else 'are'} behind the others"
        )
    if mismatch:
        parts.append(mismatch)
    elif ran_past:
        parts.append(ran_past)
    elif disagree:
        parts.append(
            "ranks were in different collectives at the same or adjacent SeqNum: the code paths differ between ranks (a desync)"
        )
    if silent:
        parts.append(
            f"{ranks_text(silent)} of {size if world_size else f'at least {size}'} never reported a timeout: "
            f"{'it is' if len(silent) == 1 else 'they are'} most likely where the job is stuck"
        )
    if failure is not None:
        parts.insert(0, failure_text(failure) + f"; the {len(reporting)} timeout(s) that follow are its effect")
    summary = "; ".join(parts) + "."
    return RankVerdict(
        summary=summary[0].upper() + summary[1:],
        behind=behind,
        silent=silent,
        disagree=disagree,
        table=table,
        table_total=len(reporting),
        groups=_groups(reporting, silent, behind),
        first_collective=first,
        object_collective=objects,
    )


def failure_text(failure: Failure) -> str:
    who = f"rank {failure.rank}" if failure.rank is not None else "a process"
    what = {
        "sigkill": "was killed with SIGKILL (the kernel's out-of-memory killer or the scheduler)",
        "oom-kill": "was killed by the kernel's out-of-memory killer",
        "signal": "crashed on a signal",
        "cuda-error": "hit a CUDA error",
        "ecc-error": "hit an uncorrectable GPU memory (ECC) error",
        "exception": f"raised an exception ({text_clipped(failure.text, 120)})",
        "exit": f"exited with an error ({text_clipped(failure.text, 120)})",
    }.get(failure.kind, "failed")
    when = f" at {failure.time}" if failure.time else ""
    where = f"; its innermost frame: {failure.frame} (line {failure.frame_line})" if failure.frame and failure.frame_line else ""
    effects = ""
    if failure.effects:
        many = len(failure.effects) > 1
        effects = f"; the error{'s' if many else ''} that followed ({'; '.join(failure.effects[:3])}) {'are' if many else 'is'} its effect"
    return f"{who} {what}{when} (line {failure.line}){where}{effects}"


def verdict_facts(verdict: RankVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {}
    return {
        "silent_ranks": verdict.silent,
        "behind_ranks": verdict.behind,
        "ranks_disagree": verdict.disagree,
        "first_collective": verdict.first_collective,
        "object_collective": verdict.object_collective,
    }


def _size_exchange(state: RankState) -> bool:
    """all_gather_object and gather_object (torch/distributed/distributed_c10d.py) first all-gather each rank's
    pickled size as a one-element int64 tensor into a list: OpType=ALLGATHER, NumelIn=1, NumelOut=group size."""
    return state.op == "ALLGATHER" and state.numel_in == 1 and (state.numel_out or 0) >= 2


# Point-to-point works: before 2.4 they advance the group's SeqNum on the two ranks that exchange only; from 2.4 they
# count on a SeqNum of their own (seqP2P_), apart from the collectives'.
P2P_OPS = frozenset({"SEND", "RECV", "RECVANYSOURCE"})


def seqnum_counters_apart(ranks: dict[int, RankState], facts: dict[str, Any], world_size: int | None) -> str:
    """Why the SeqNums in different ranks' timeout lines may count different sequences, or "" when the log shows
    nothing of the kind. A SeqNum counts the works of one process group, and the timeout line never names its group
    (facts.py, above WATCHDOG_RE): comparing a tensor-parallel group's SeqNum with a data-parallel group's would make a
    desync of every Megatron-LM hang. So the ranks' timeouts are lined up only where the job evidently has one group
    (or the lines name theirs), and this says when it has not:
    - the log names two process groups ("[PG ...]" prefixes), or the timed-out works are in two;
    - a framework or layout that puts each rank in several groups (Megatron-LM; tensor, pipeline, context or expert
      parallelism; HSDP; a DeviceMesh);
    - a timeout line's "[Rank N]" (the rank in the work's group) is not its "[rankM]:" prefix (the global rank), or
      one rank number is printed with two different works (two processes share a group rank; or two runs);
    - an all-gather or reduce-scatter whose NumelOut/NumelIn says it ran over fewer ranks than the job has;
    - a point-to-point work timed out (pipeline stages: before 2.4 it shifts the SeqNums of the two ranks only).
    A log that names one group only is read as that group's, with the rest of its lines, even when that group is not
    the default one: the group that runs the training's collectives is the one whose timeouts a paste shows, and a
    framework may run them on a copy of the world group (DeepSpeed's data-parallel group without model parallelism is
    dist.new_group(ranks=range(world_size)), deepspeed/utils/groups.py _clone_world_group: "[PG 1 Rank r]" in 2.4).
    What stays open: a second group whose lines the paste cut off."""
    numbered = sorted(set(facts.get("process_groups") or []))
    named = sorted({s.group for s in ranks.values() if s.group is not None})
    if len(numbered) > 1 or len(named) > 1:
        return f"the log names process groups {', '.join(numbered if len(numbered) > 1 else named)}"
    if "megatron-lm" in (facts.get("frameworks") or []):
        return "Megatron-LM puts every rank in tensor-, pipeline- and data-parallel groups"
    if facts.get("parallelism"):
        return f"the log names {', '.join(facts['parallelism'])} parallelism, which gives every rank several groups"
    size = max(world_size or 0, max(facts.get("ranks") or [-1]) + 1, max(ranks, default=-1) + 1)
    for state in sorted(ranks.values(), key=lambda s: s.rank):
        if state.clash:
            return f"two timeout lines say rank {state.rank} of different works (a rank within a smaller group, or two runs)"
        if state.line_rank is not None and state.line_rank != state.rank:
            return f"rank {state.line_rank}'s timeout line calls it rank {state.rank}: its rank in a smaller group"
        if state.op in P2P_OPS:
            return f"rank {state.rank} timed out in {state.op}: point-to-point works advance the SeqNum of two ranks only"
        members = _group_size(state)
        if members and members < size:
            return f"rank {state.rank}'s {state.op} ran over {members} of the job's {size} ranks: a smaller group"
    return ""


def _group_size(state: RankState) -> int | None:
    """The ranks an all-gather or reduce-scatter ran over: its output is its input times the group size, or the
    other way round."""
    small, large = {
        "ALLGATHER": (state.numel_in, state.numel_out),
        "_ALLGATHER_BASE": (state.numel_in, state.numel_out),
        "REDUCE_SCATTER": (state.numel_out, state.numel_in),
        "_REDUCE_SCATTER_BASE": (state.numel_out, state.numel_in),
    }.get(state.op or "", (None, None))
    if small and large and small > 0 and large % small == 0:
        return large // small
    return None


def _group_of(state: RankState, counters_apart: str) -> str | None:
    """The group a rank's timeout is lined up with others in: the job's one group, or, when its SeqNums may count
    apart, the group its lines name; None (with no other) when they name none. Point-to-point works are never."""
    if state.op in P2P_OPS:
        return None
    return state.group if counters_apart else ""


def _disagree(reporting: dict[int, RankState], counters_apart: str = "") -> bool:
    """Different ops at the same or adjacent SeqNum of one process group: ranks issued different code paths."""
    by_pg: dict[Any, dict[int, set[str]]] = {}
    for state in reporting.values():
        group = _group_of(state, counters_apart)
        if state.seq is not None and state.op and group is not None:
            by_pg.setdefault(group, {}).setdefault(state.seq, set()).add(state.op)
    for by_seq in by_pg.values():
        for seq, ops in by_seq.items():
            if len(ops) > 1:
                return True
            nxt = by_seq.get(seq + 1)
            if nxt and nxt != ops:
                return True
    return False


# Collectives whose input must have the same number of elements on every rank (NCCL does not check; a mismatch
# hangs or corrupts). The list forms of all_gather and reduce_scatter are left out: PyTorch runs unequal sizes
# there through another path, and all-to-all and point-to-point sizes differ by design.
SIZE_MATCHED_OPS = frozenset({"ALLREDUCE", "BROADCAST", "REDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE"})


def _size_mismatch(reporting: dict[int, RankState], counters_apart: str = "") -> str:
    """Ranks of one process group at the same SeqNum of the same collective with different input sizes: they
    passed different tensors (a bucket or a parameter one rank does not have), so the collective cannot match."""
    places: dict[tuple, dict[int, list[int]]] = {}
    for rank, state in reporting.items():
        group = _group_of(state, counters_apart)
        if state.op in SIZE_MATCHED_OPS and state.seq is not None and state.numel_in is not None and state.numel_in >= 0:
            if group is not None:
                places.setdefault((group, state.op, state.seq), {}).setdefault(state.numel_in, []).append(rank)
    for (_, op, seq), by_size in sorted(places.items(), key=lambda item: (item[0][2], item[0][1])):
        if len(by_size) > 1:
            sizes = sorted(by_size.items(), key=lambda item: (-len(item[1]), item[0]))[:4]
            said = " and ".join(f"{ranks_text(sorted(ranks))} on {numel} elements" for numel, ranks in sizes)
            return f"ranks ran {op} #{seq} with different input sizes ({said}): the tensors differ between ranks (a desync)"
    return ""


# Collectives in which every rank's result needs every other rank's input: no rank can finish one before all ranks
# of its group have sent it their part. Broadcast, reduce, gather, scatter and point-to-point are left out: their root
# (or sender) can finish while a receiver has not even started (a small message fits NCCL's buffers).
ALL_INPUTS_OPS = frozenset(
    {
        "ALLREDUCE",
        "ALLGATHER",
        "_ALLGATHER_BASE",
        "REDUCE_SCATTER",
        "_REDUCE_SCATTER_BASE",
        "ALLTOALL",
        "ALLTOALL_BASE",
        "BARRIER",
    }
)
# How far past the other rank's SeqNum the rank ahead may be. A rank runs ahead only while its calls finish against
# what the stuck rank sent (a few small collectives); the limit also keeps two groups' counters that happen to be
# close from lining up in a job whose lines show nothing of a second group.
MAX_SEQ_GAP = 3


def _ran_past(reporting: dict[int, RankState], counters_apart: str = "") -> str:
    """A rank that timed out at SeqNum S+k (k <= MAX_SEQ_GAP) of a group, while another rank of that group timed out
    in collective S, had finished S, and S is a collective no rank finishes before every rank has sent its part
    (ALL_INPUTS_OPS): so the rank behind sent its part of whatever the rank ahead ran at S, and still waits. Either the
    two called different collectives at S (a smaller call can finish against the start of a larger one, which then
    waits for the rest: a desync), or a fault cut the rank behind off inside S (two or more apart, the collectives
    between must then have finished without it too). Only when the rank ahead is in a different collective (op or
    NumelIn) than the one the rank behind waits in is it read as a desync: the same collective again (a run of equal
    buckets, FSDP's equal all-gathers, a per-step loss all-reduce) fits two ranks running one sequence with the rank
    behind failing inside S as well, and the lines do not tell those apart."""
    at: dict[tuple[str, int], list[RankState]] = {}
    for state in reporting.values():
        group = _group_of(state, counters_apart)
        if group is not None and state.op and state.seq is not None:
            at.setdefault((group, state.seq), []).append(state)
    for (group, seq), states in sorted(at.items(), key=lambda item: item[0][1]):
        waiting = [s for s in states if s.op in ALL_INPUTS_OPS and (s.last_completed is None or s.last_completed < seq)]
        for gap in range(1, MAX_SEQ_GAP + 1):
            ahead = [s for s in at.get((group, seq + gap), []) if s.last_completed is None or s.last_completed >= seq]
            pair = _differing_pair(waiting, ahead)
            if pair:
                stuck, past = pair
                stuck_ranks = sorted(s.rank for s in waiting if _work(s) == _work(stuck))
                past_ranks = sorted(s.rank for s in ahead if _work(s) == _work(past))
                return (
                    f"{ranks_text(past_ranks)} had finished #{seq}, where {ranks_text(stuck_ranks)} timed out in "
                    f"{_work_text(stuck)}, and timed out in {_work_text(past)} #{past.seq}: the ranks did not call "
                    "the same collectives (a desync)"
                )
    return ""


def _differing_pair(waiting: list[RankState], ahead: list[RankState]) -> tuple[RankState, RankState] | None:
    """A (rank behind, rank ahead) pair whose works differ, the lowest ranks first; linear in the ranks (of two
    distinct works among those ahead, one differs from any work behind)."""
    stuck: dict[tuple, RankState] = {}
    past: dict[tuple, RankState] = {}
    for into, states in ((stuck, waiting), (past, ahead)):
        for state in sorted(states, key=lambda s: s.rank):
            into.setdefault(_work(state), state)
    for work_b, b in stuck.items():
        for work_a, a in past.items():
            if work_a != work_b:
                return b, a
    return None


def _work(state: RankState) -> tuple[str | None, int | None]:
    return state.op, state.numel_in


def _work_text(state: RankState) -> str:
    if state.numel_in is None:
        return f"{state.op}"
    return f"{state.op} on {state.numel_in} element{'' if state.numel_in == 1 else 's'}"


def _silent(reporting: dict[int, RankState], world_size: int | None) -> list[int]:
    """Ranks of the world that printed no timeout. Without a world size, once at least two ranks reported (one
    pasted line says nothing about the others): the gaps between the lowest and the highest rank that reported, and
    the ranks below the lowest when there are no more of them than ranks that reported (ranks 1-7 without rank 0 is
    a silent rank 0; ranks 64-67 alone are an excerpt of a larger job, which says nothing of ranks 0-63)."""
    if world_size:
        return sorted(set(range(max(world_size, max(reporting) + 1))) - set(reporting))
    if len(reporting) < 2:
        return []
    lowest = min(reporting) if min(reporting) > len(reporting) else 0
    return sorted(set(range(lowest, max(reporting) + 1)) - set(reporting))


def _groups(reporting: dict[int, RankState], silent: list[int], behind: list[int]) -> list[dict]:
    """Ranks grouped by where they are (collective, SeqNum, last completed), largest group first; the
    silent ranks and the ranks behind are the odd ones out."""
    by_state: dict[_Place, list[int]] = {}
    for rank, state in reporting.items():
        place = _Place(state.pg, state.op, state.seq, state.last_completed, _not_issued_next(state))
        by_state.setdefault(place, []).append(rank)
    by_state = _partial_states_merged(by_state)
    behind_set = set(behind)  # membership asked once per rank: a list made it quadratic in the ranks behind
    groups = []
    for (pg, op, seq, completed, not_issued), members in by_state.items():
        where = f"{op or 'a collective'}" + (f" #{seq}" if seq is not None else "")
        if completed is not None:
            where += f", last completed {completed}"
        if not_issued:
            where += f", never issued {completed + 1}"
        if pg is not None:
            where += f" (process group {pg})"
        groups.append({"ranks": sorted(members), "where": where, "state": "timed out", "odd": not behind_set.isdisjoint(members)})
    if silent:
        groups.append({"ranks": silent, "where": "no timeout line", "state": "silent", "odd": True})
    groups.sort(key=lambda g: (g["odd"], -len(g["ranks"]), g["ranks"][0]))
    # Among the ranks that reported, a group smaller than the largest is where the others are not. The silent ranks
    # are not measured against: one rank's timeout beside fifteen that printed none is no odd one out of its own.
    reported = [g for g in groups if g["state"] == "timed out"]
    if len(reported) > 1:
        largest = max(len(g["ranks"]) for g in reported)
        for g in reported:
            g["odd"] = g["odd"] or len(g["ranks"]) < largest
    for g in groups:
        g["label"] = ranks_text(g["ranks"])
    return groups


class _Place(NamedTuple):
    """Where a rank's watchdog and progress lines put it."""

    pg: str | None
    op: str | None
    seq: int | None
    completed: int | None
    not_issued: bool

    def known(self) -> tuple:
        return self.pg, self.op, self.seq, self.completed


# Places at one SeqNum that a partial place is compared with, at most: the merge stays linear in the ranks (a crafted
# 45 MB upload of 200,000 ranks, each at its own place, took minutes when every place was compared with every other).
MERGE_CANDIDATES = 64


def _partial_states_merged(by_state: dict[_Place, list[int]]) -> dict[_Place, list[int]]:
    """A rank seen only in part (a watchdog line without the process group, a progress line without the op) joins
    the one fuller place it agrees with at the same SeqNum: PyTorch 2.3-2.5 print the two halves on two lines, and
    a paste often keeps one of them for some ranks. A place that could join two is left apart."""
    merged = dict(by_state)
    at_seq: dict[tuple, list[_Place]] = {}  # only places at the same SeqNum can agree: each looks among those alone
    for place in by_state:
        at_seq.setdefault((place.seq, place.not_issued), []).append(place)
    for place in sorted(by_state, key=lambda p: sum(part is None for part in p.known()), reverse=True):
        if place not in merged or place.seq is None or None not in place.known():
            continue
        candidates = at_seq[(place.seq, place.not_issued)]
        if len(candidates) > MERGE_CANDIDATES:
            continue  # that many places at one SeqNum are not a paste that kept half of some ranks' lines
        fuller = [
            other
            for other in candidates
            if other != place
            and other in merged
            and all(mine is None or mine == theirs for mine, theirs in zip(place.known(), other.known()))
        ]
        if len(fuller) == 1:
            merged[fuller[0]] = sorted(merged[fuller[0]] + merged.pop(place))
    return merged


def stack_groups(stacks: list[tuple[Stack, str | None]]) -> list[dict]:
    """Pasted stacks grouped by where they are (their innermost frames), largest group first: with py-spy
    dumps of every rank, the odd group out is usually the rank the others wait for. Only the main
    thread of each process counts when the dump names it (helper threads sit in the same waits everywhere)."""
    chosen = [(s, src) for s, src in stacks if not s.thread or "MainThread" in s.thread or s.kind != "py-spy"]
    by_place: dict[tuple[str, ...], list[tuple[Stack, str | None]]] = {}
    for stack, source in chosen:
        by_place.setdefault(tuple(stack.frames[:3]), []).append((stack, source))
    groups = []
    for place, members in by_place.items():
        # a traceback's rank is its "[rankN]:" prefix: a rank named on a line above an unprefixed one is as often
        # another rank's output (PyTorch <= 2.1 interleaves them)
        ranks = sorted({s.rank for s, _ in members if s.rank is not None and not (s.kind == "traceback" and s.rank_nearby)})
        who = ranks_text(ranks) if ranks else f"{len(members)} stack{'s' if len(members) > 1 else ''}"
        groups.append(
            {
                "label": who,
                "ranks": ranks,
                "count": len(members),
                "where": place[0],
                "frames": list(place),
                "line": members[0][0].frame_lines[0] if members[0][0].frame_lines else None,
                "file": members[0][1],
            }
        )
    groups.sort(key=lambda g: (-g["count"], g["where"]))
    largest = groups[0]["count"] if groups else 0
    for g in groups:
        g["odd"] = len(groups) > 1 and g["count"] < largest
    return groups


def _progress(state: RankState) -> tuple[int, int]:
    """(collectives completed, 1 if the rank issued the next one, else 0). Ranks may issue several collectives
    ahead of the one that hangs, so only whether a rank issued the one after its last completed tells it apart:
    one that did not never finished issuing the collective the others wait in. A watchdog line says the rank
    issued its SeqNum."""
    completed = state.last_completed if state.last_completed is not None else (state.seq or 0) - 1
    return completed, 0 if _not_issued_next(state) else 1


def _not_issued_next(state: RankState) -> bool:
    return state.last_enqueued is not None and state.last_completed is not None and state.last_enqueued <= state.last_completed


def _numbers_text(numbers: list[int]) -> str:
    """A few numbers listed; many, as their range and count."""
    if len(numbers) <= 6:
        return ", ".join(map(str, numbers))
    return f"{numbers[0]}–{numbers[-1]}, {len(numbers)} different"


def ranks_text(ranks: list[int]) -> str:
    """[0, 1, 2, 5] -> "ranks 0–2, 5"; one rank -> "rank 3"."""
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
