"""Where is every rank (diagnosis/rank_groups.py): groups from stacks, Flight Recorder and watchdog lines,
largest first, odd ones flagged, quiet and missing ranks listed, each linked to the step its evidence supports."""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnosis.readers.facts import RankState
from diagnosis.rank_groups import rank_groups_build
from diagnosis.readers.base import Evidence
from diagnosis.rules import Step
from diagnosis.verdict import rank_verdict


def watchdog(ranks: dict[int, tuple[str, int, int]]) -> dict[int, RankState]:
    return {r: RankState(rank=r, op=op, seq=seq, last_completed=done) for r, (op, seq, done) in ranks.items()}


def fr_group(ranks: list[int], where: str, state: str, odd: bool = False) -> dict:
    return {"ranks": ranks, "where": where, "state": state, "odd": odd, "frames": []}


@dataclass
class Match:
    slug: str
    signals: list[dict]
    evidence: list[Evidence] = field(default_factory=list)
    fix_step: str | None = None
    steps_not_for_versions: list[str] = field(default_factory=list)


def build(**kwargs):
    defaults = {"verdict": None, "stack_groups": [], "recorder_groups": [], "file_ranks": {}, "world_size": None}
    return rank_groups_build(**{**defaults, **kwargs})


def test_the_largest_group_comes_first():
    groups = build(
        recorder_groups=[
            fr_group([5, 6, 7], "all_reduce #1041 in process group 0", "completed", odd=True),
            fr_group(list(range(5)) + list(range(8, 64)), "all_reduce #1042 in process group 0", "started"),
        ]
    )["groups"]
    assert [g["count"] for g in groups] == [61, 3]
    assert groups[0]["text"] == "61 ranks in all_reduce #1042 in process group 0 (started)"


def test_a_smaller_group_is_flagged_odd_and_the_largest_is_not():
    groups = build(
        verdict=rank_verdict(
            watchdog({0: ("ALLREDUCE", 88, 87), 1: ("ALLREDUCE", 88, 87), 2: ("ALLREDUCE", 88, 87), 3: ("ALLREDUCE", 86, 85)}), 4
        )
    )["groups"]
    assert [(g["label"], g["odd"]) for g in groups] == [("ranks 0–2", False), ("rank 3", True)]


def test_one_rank_s_timeout_beside_ranks_that_printed_none_is_not_an_odd_one_out():
    """A paste of one rank's watchdog line from a 16-rank job: the fifteen silent ranks are where to look, and the
    rank that reported is not odd merely for being outnumbered by them (the page flagged both)."""
    verdict = rank_verdict(watchdog({4: ("ALLREDUCE", 91885, 91884)}), 16)
    assert [(g["where"], g["odd"]) for g in verdict.groups] == [
        ("ALLREDUCE #91885, last completed 91884", False),
        ("no timeout line", True),
    ]
    groups = build(verdict=verdict, world_size=16)["groups"]
    assert [(g["label"], g["odd"]) for g in groups] == [("ranks 0–3, 5–15", True), ("rank 4", False)]


def test_among_the_ranks_that_reported_the_smaller_group_is_still_odd_beside_silent_ranks():
    verdict = rank_verdict(watchdog({1: ("_ALLGATHER_BASE", 50, 49), 5: ("_ALLGATHER_BASE", 50, 49), 0: ("REDUCE", 50, 49)}), 6)
    odd = {g["where"].split(" ")[0]: g["odd"] for g in verdict.groups}
    assert odd == {"_ALLGATHER_BASE": False, "REDUCE": True, "no": True}


def test_a_rank_whose_files_are_empty_is_listed_as_no_output():
    verdict = rank_verdict(watchdog({0: ("ALLREDUCE", 1, None), 1: ("ALLREDUCE", 1, None), 2: ("ALLREDUCE", 1, None)}), None)
    where = build(verdict=verdict, file_ranks={0: 900, 1: 900, 2: 900, 3: 0})
    assert where["groups"][-1]["text"] == "rank 3: no output" and where["groups"][-1]["odd"]
    assert where["silent"] == [3]


def test_a_rank_the_world_size_names_but_no_file_comes_from_is_missing():
    verdict = rank_verdict(watchdog({r: ("BROADCAST", 4, 3) for r in (0, 1, 2)}), 4)
    where = build(verdict=verdict, file_ranks={0: 10, 1: 10, 2: 10}, world_size=4)
    assert where["missing"] == [3]
    assert where["groups"][-1]["text"] == "rank 3: no log file"


def test_a_stack_places_a_rank_before_its_watchdog_line():
    verdict = rank_verdict(watchdog({r: ("ALLREDUCE", 9, 8) for r in range(4)}), 4)
    stacks = [
        {
            "ranks": [0, 1, 2],
            "frames": ["torch/distributed/distributed_c10d.py:all_reduce"],
            "count": 3,
            "where": "torch/distributed/distributed_c10d.py:all_reduce",
            "odd": False,
        },
        {
            "ranks": [3],
            "frames": ["torch/utils/data/dataloader.py:_next_data"],
            "count": 1,
            "where": "torch/utils/data/dataloader.py:_next_data",
            "odd": True,
        },
    ]
    groups = build(verdict=verdict, stack_groups=stacks)["groups"]
    assert [g["text"] for g in groups] == [
        "3 ranks in torch/distributed/distributed_c10d.py:all_reduce",
        "rank 3 in torch/utils/data/dataloader.py:_next_data",
    ]


def test_one_known_rank_gives_no_groups():
    assert build(verdict=rank_verdict(watchdog({3: ("ALLREDUCE", 2, 1)}), None)) is None


def test_the_silent_group_links_to_the_step_its_condition_supports():
    verdict = rank_verdict(watchdog({r: ("ALLREDUCE", 1, None) for r in (1, 2, 3)}), 4)
    match = Match(
        slug="rank0-long-preprocessing-barrier-timeout",
        fix_step="fix-5",
        signals=[
            {"id": "rank0-silent", "weight": 3, "kind": "condition", "fact": "silent_ranks", "description": "rank 0 silent"},
            {"id": "barrier-allreduce-timeout", "weight": 3, "kind": "line", "description": "barrier timeout"},
        ],
        evidence=[
            Evidence(
                line=1,
                text="[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught ...",
                signal="barrier-allreduce-timeout",
                source="attempt_0/1/stderr.log",
            )
        ],
    )
    steps = {match.slug: [Step("fix-1", {}, ("rank0-silent",)), Step("fix-5", {}, ("barrier-allreduce-timeout",))]}
    groups = build(verdict=verdict, file_ranks={r: 100 for r in range(4)}, matches=[match], steps=steps)["groups"]
    by_label = {g["label"]: g for g in groups}
    assert (by_label["rank 0"]["case"], by_label["rank 0"]["fix_step"]) == (match.slug, "fix-1")
    assert by_label["ranks 1–3"]["fix_step"] == "fix-5"


def test_a_group_no_evidence_supports_has_no_link():
    verdict = rank_verdict(watchdog({r: ("ALLREDUCE", 1, None) for r in (0, 1)}), 2)
    match = Match(
        slug="gpu-hardware-fault",
        signals=[{"id": "xid-79", "weight": 5, "kind": "line", "description": "x"}],
        evidence=[Evidence(line=9, text="NVRM: Xid (PCI:0000:3b:00): 79", signal="xid-79")],
    )
    assert all(g["case"] is None for g in build(verdict=verdict, matches=[match])["groups"])
