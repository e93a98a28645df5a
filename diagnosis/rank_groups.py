"""Where is every rank: the ranks of a job grouped by where they are, largest group first, the odd groups
flagged, each group linked to the case and fix step its evidence supports.

Built only from what the job model already holds, in order of how precisely it places a rank: a stack dump
(the innermost Python frames), a Flight Recorder dump or the debug server's fr_trace tables (the collective and
its state), the debug server's list of ranks that did not answer it, the watchdog line
(collective, SeqNum, last completed), and for ranks that said none of these, their files (printed output
but no timeout, printed nothing) or their absence (the world size names a rank no file or line comes from).
Plain data in, plain data out: the page, the JSON and the command line render the same groups.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from diagnosis.readers.base import Evidence
from diagnosis.rules import Step
from diagnosis.text import line_rank
from diagnosis.verdict import RankVerdict, ranks_text

# What a rank with no position of its own is doing, in words.
QUIET_STATES = {
    "silent": "no timeout line",
    "output": "printed output, but no timeout line",
    "no-output": "no output",
    "no-log": "no log file",
}
MAX_GROUPS = 24  # groups listed (largest first); the rest are counted in groups_total
SUMMARY_GROUPS = 8  # groups named in the one-line summary
# The job facts a group is itself evidence of: a case condition on one of these supports the group.
_QUIET_FACTS = frozenset({"silent_ranks", "fr_missing_ranks"})


class MatchLike(Protocol):
    slug: str
    signals: list[dict[str, Any]]
    evidence: list[Evidence]
    fix_step: str | None
    steps_not_for_versions: list[str]


def rank_groups_build(
    *,
    verdict: RankVerdict | None,
    stack_groups: list[dict],
    recorder_groups: list[dict],
    file_ranks: dict[int, int],
    world_size: int | None,
    matches: Iterable[MatchLike] = (),
    steps: dict[str, list[Step]] | None = None,
    source_ranks: dict[str, int] | None = None,
) -> dict[str, Any] | None:
    """The groups, largest first, with `summary` (one line), `silent` (ranks with no timeout and no position)
    and `missing` (ranks with no file and no line); the watchdog verdict's own findings (a rank behind, ranks
    in a different collective) are labels on their groups. None when fewer than two ranks are known: one rank has no
    "others" to be grouped against.

    `recorder_groups`: ranks placed by a dump, binary Flight Recorder dumps first; a group with `basis`
    "debug-server" holds the ranks that did not answer the debug server. `file_ranks`: rank -> bytes of that
    rank's files (from their paths); `matches`: the confident matches,
    best first, whose evidence may support a group; `source_ranks`: file name -> rank, for evidence lines
    that do not name their rank."""
    placed: dict[int, tuple] = {}
    info: dict[tuple, dict[str, Any]] = {}

    def place(rank: int, key: tuple, **fields: Any) -> None:
        if rank in placed:
            return
        placed[rank] = key
        info.setdefault(key, {"odd": False, "frames": [], "facts": set(), "labels": [], **fields})

    for group in stack_groups:
        key = ("stack", tuple(group["frames"]))
        for rank in group["ranks"]:
            place(rank, key, basis="stack", where=group["where"], state="stack", frames=list(group["frames"]))
        if key in info:
            info[key]["odd"] |= bool(group.get("odd"))
            info[key]["facts"] |= {"stack_frames", "stack_collectives"}
    for group in recorder_groups:
        basis = group.get("basis", "flight-recorder")
        key = (basis, group["where"], group["state"])
        for rank in group["ranks"]:
            place(
                rank,
                key,
                basis=basis,
                where=group["where"],
                state=group["state"],
                frames=list(group.get("frames") or []),
            )
        if key in info:
            info[key]["odd"] |= bool(group.get("odd"))
            info[key]["facts"] |= (
                {"debug_unanswered_ranks"}
                if basis == "debug-server"
                else {"fr_missing_ranks"}
                if group["state"] == "missing"
                else {"fr_mismatch"}
                if group.get("odd")
                else {"fr_all_started_first"}
            )
    if verdict is not None:
        for group in verdict.groups:
            if group["state"] == "silent":
                continue
            key = ("watchdog", group["where"])
            for rank in group["ranks"]:
                place(rank, key, basis="watchdog", where=group["where"], state="timed out")
            if key in info:
                info[key]["odd"] |= bool(group.get("odd"))
                behind = set(group["ranks"]) & set(verdict.behind)
                if behind:
                    info[key]["labels"].append("behind")
                elif verdict.disagree and group.get("odd"):
                    info[key]["labels"].append("different collective")
                info[key]["facts"] |= (
                    ({"behind_ranks"} if behind else set())
                    | ({"ranks_disagree"} if verdict.disagree and group.get("odd") else set())
                    | ({"first_collective"} if verdict.first_collective else set())
                )

    known = set(placed) | set(file_ranks) | set(verdict.silent if verdict else [])
    if world_size:
        known |= set(range(world_size))
    for rank in sorted(known - set(placed)):
        if rank in file_ranks:
            state = "output" if file_ranks[rank] else "no-output"
        else:
            state = "no-log" if file_ranks else "silent"
        place(rank, ("quiet", state), basis="quiet", where="", state=state)
        info[("quiet", state)].update(odd=True, facts=set(_QUIET_FACTS))
    if len(placed) < 2:
        return None

    members: dict[tuple, list[int]] = {}
    for rank, key in placed.items():
        members.setdefault(key, []).append(rank)
    # A group is measured against the largest group of ranks that said where they are: the quiet ranks are odd
    # already, and fifteen of them beside one rank's timeout do not make that rank an odd one out.
    largest = max((len(ranks) for key, ranks in members.items() if info[key]["basis"] != "quiet"), default=0)
    groups = []
    for key, ranks in members.items():
        ranks.sort()
        data = info[key]
        odd = data["odd"] or (data["basis"] != "quiet" and len(ranks) < largest)
        group = {
            "ranks": ranks,
            "count": len(ranks),
            "label": ranks_text(ranks),
            "basis": data["basis"],
            "where": data["where"],
            "state": data["state"],
            "odd": odd,
            "labels": data["labels"],  # what makes an odd group odd, in a word or two ("behind")
            "frames": data["frames"][:8],
        }
        group["place"] = _group_place(group)
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"{len(ranks)} ranks"
        group["text"] = f"{who}{':' if group['basis'] == 'quiet' else ''} {group['place']}"
        group["_facts"] = data["facts"]
        groups.append(group)
    groups.sort(key=lambda g: (-g["count"], g["odd"], g["ranks"][0]))
    quiet = [r for g in groups if g["basis"] == "quiet" for r in g["ranks"]]
    missing = sorted(r for g in groups if g["state"] == "no-log" for r in g["ranks"])
    shown = groups[:MAX_GROUPS]  # a crafted paste can hold thousands of one-rank groups
    listed = matches if isinstance(matches, list) else list(matches)
    for group in shown:
        group.update(_link(group, group.pop("_facts"), listed, steps or {}, source_ranks or {}))
    summary = " · ".join(g["text"] for g in shown[:SUMMARY_GROUPS])
    if len(groups) > SUMMARY_GROUPS:
        summary += f" · and {len(groups) - SUMMARY_GROUPS} more groups"
    return {
        "summary": summary,
        "groups": shown,
        "groups_total": len(groups),
        "silent": sorted(quiet),
        "missing": missing,
        "ranks_known": len(placed),
    }


def _group_place(group: dict[str, Any]) -> str:
    """Where the group is, after "60 ranks": "in all_reduce #1042 (started)", or for a quiet rank "no output"."""
    if group["basis"] == "quiet":
        return QUIET_STATES[group["state"]]
    if group["basis"] == "stack":
        return f"in {group['where']}"
    if group["basis"] == "debug-server":
        return group["where"]
    return f"in {group['where']} ({group['state']})"


def _link(
    group: dict[str, Any], facts: set[str], matches: list[MatchLike], steps: dict[str, list[Step]], source_ranks: dict[str, int]
) -> dict[str, Any]:
    """The match whose signals this group is evidence of (a condition on a fact the group embodies, a frame
    in its stacks, a line from one of its ranks), strongest support first, and the fix step those signals
    point at."""
    best: tuple[float, MatchLike, dict[str, float]] | None = None
    ranks = set(group["ranks"])
    for match in matches:
        weights = {s["id"]: s["weight"] for s in match.signals if s["weight"] > 0}
        support: dict[str, float] = {}
        for signal in match.signals:
            if signal["id"] in weights and signal.get("kind") == "condition" and signal.get("fact") in facts:
                support[signal["id"]] = weights[signal["id"]]
        for evidence in match.evidence:
            if evidence.signal not in weights or evidence.signal in support:
                continue
            if _evidence_rank(evidence, source_ranks) in ranks or any(evidence.text.endswith(f) for f in group["frames"]):
                support[evidence.signal] = weights[evidence.signal]
        total = sum(support.values())
        if support and (best is None or total > best[0]):
            best = (total, match, support)
    if best is None:
        return {"case": None, "fix_step": None, "because": None}
    _, match, support = best
    chosen, chosen_weight = match.fix_step, 0.0
    for step in steps.get(match.slug, []):
        if step.anchor in match.steps_not_for_versions:
            continue
        weight = sum(support.get(ref, 0) for ref in step.evidence)
        if weight > chosen_weight:
            chosen, chosen_weight = step.anchor, weight
    strongest = max(support, key=lambda sid: (support[sid], sid))
    because = next((s["description"] for s in match.signals if s["id"] == strongest), None)
    return {"case": match.slug, "fix_step": chosen, "because": because}


def _evidence_rank(evidence: Evidence, source_ranks: dict[str, int]) -> int | None:
    found = line_rank(evidence.text)
    if found is not None:
        return found
    return source_ranks.get(evidence.source) if evidence.source else None
