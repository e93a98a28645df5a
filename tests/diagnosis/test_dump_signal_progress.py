"""Which rank is behind, read from what each rank says of its own progress: the watchdog's progress line
(PyTorch 2.3-2.5) and, from 2.5, the line a rank prints when it learns of a timeout ("Received a dump signal
... Last enqueued NCCL work: E, last completed NCCL work: C")."""

from __future__ import annotations

import pytest

from diagnosis.engine import log_diagnose
from diagnosis.rules import rules_compile

HEAD = "[rank{r}]:[E703 15:37:17.178360488 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
SIGNAL = (
    HEAD + "Received a dump signal due to a collective timeout from {origin} and we will try our best to dump the debug "
    "info. Last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.This is most likely caused by "
    "incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all "
    "ranks or the scheduled collective, for some reason, didn't run.\n"
)
WATCHDOG = (
    "[rank{r}]:[E703 15:37:07.100000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, "
    "Timeout(ms)=600000) ran for 600037 milliseconds before timing out.\n"
)
PROGRESS_2_4 = (
    "[rank{r}]:[E1121 04:10:00.100000 ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Timeout at NCCL work: {seq}, last "
    "enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.\n"
)


@pytest.fixture(scope="module")
def rules():
    return rules_compile([])


def verdict(rules, text: str):
    return log_diagnose([("job.log", text.encode())], rules).verdict


def test_the_rank_that_never_issued_the_collective_is_behind_though_all_completed_as_many(rules):
    """Rank 7 timed out first and signalled the others; rank 3 reports it never enqueued 56119."""
    lines = WATCHDOG.format(r=7, seq=56119) + "".join(
        SIGNAL.format(r=r, origin=" rank 7", enqueued=56118 if r == 3 else 56119, completed=56118) for r in range(7)
    )
    found = verdict(rules, lines)
    assert found.behind == [3]
    assert any(g["ranks"] == [3] and "never issued 56119" in g["where"] for g in found.groups)


def test_a_rank_that_detected_the_timeout_itself_reports_its_progress_too(rules):
    lines = SIGNAL.format(r=0, origin="this local rank", enqueued=20589, completed=20584)
    lines += SIGNAL.format(r=1, origin=" rank 0", enqueued=20584, completed=20584)
    assert verdict(rules, lines).behind == [1]


def test_ranks_that_issued_collectives_ahead_of_the_hung_one_are_not_behind(rules):
    """Both ranks issued 20585, the one that hangs; rank 0 also queued four more. Neither is behind."""
    lines = PROGRESS_2_4.format(r=0, seq=20585, enqueued=20589, completed=20584)
    lines += PROGRESS_2_4.format(r=1, seq=20585, enqueued=20585, completed=20584)
    found = verdict(rules, lines)
    assert [(row["rank"], row["last_enqueued"]) for row in found.table] == [(0, 20589), (1, 20585)]
    assert found.behind == []


def test_ranks_seen_only_in_part_join_the_state_they_agree_with(rules):
    """PyTorch 2.4 prints the watchdog line (op, no process group) and the progress line (no op) apart; a paste
    kept one or the other for some ranks. All three ranks are in one place, ALLREDUCE #1580."""
    watchdog = (
        "[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
        "ran for 600060 milliseconds before timing out.\n"
    )
    progress = (
        "[rank{r}]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank {r}] Exception (either an error or "
        "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n"
    )
    lines = watchdog.format(r=0) + watchdog.format(r=2) + progress.format(r=0) + progress.format(r=1)
    groups = verdict(rules, lines).groups
    assert [(g["ranks"], g["where"]) for g in groups] == [([0, 1, 2], "ALLREDUCE #1580, last completed 1579")]


def test_a_partial_state_that_could_join_two_places_stays_apart(rules):
    watchdog = (
        "[rank{r}]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1580, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600060 milliseconds "
        "before timing out.\n"
    )
    progress = (
        "[rank2]:[E321 02:07:08.5 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 2] Exception (either an error or timeout) "
        "detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n"
    )
    lines = watchdog.format(r=0, op="ALLREDUCE") + watchdog.format(r=1, op="BROADCAST") + progress
    assert len(verdict(rules, lines).groups) == 3


def test_merging_ranks_seen_in_part_compares_each_only_with_places_at_its_seqnum(monkeypatch):
    """The crafted upload of `make loadtest` (a watchdog line for each of 200,000 ranks, each at its own SeqNum) spent
    minutes comparing every place with every other. Counted, not timed: each place is compared with its own SeqNum's."""
    from diagnosis import verdict as verdict_module
    from diagnosis.readers.facts import RankState

    ranks = {
        r: RankState(rank=r, op="ALLREDUCE" if r % 2 else None, seq=r, last_completed=r - 1, pg=None if r % 2 else "0")
        for r in range(1, 2001)
    }
    calls = []
    monkeypatch.setattr(verdict_module._Place, "seq", property(lambda place: calls.append(1) or tuple.__getitem__(place, 2)))
    verdict_module.rank_verdict(ranks, world_size=None)
    assert len(calls) < 20 * len(ranks)


def test_more_places_at_one_seqnum_than_a_paste_holds_are_left_apart():
    """Past MERGE_CANDIDATES places at one SeqNum the halves are not merged (nor compared); each place is its own."""
    from diagnosis.readers.facts import RankState
    from diagnosis.verdict import MERGE_CANDIDATES, rank_verdict

    ranks = {r: RankState(rank=r, op="ALLREDUCE", seq=7, last_completed=r, pg="1") for r in range(MERGE_CANDIDATES + 1)}
    ranks[999] = RankState(rank=999, op=None, seq=7, last_completed=3, pg="1")  # would join rank 3's place
    found = rank_verdict(ranks, world_size=None)
    assert not any(999 in g["ranks"] and 3 in g["ranks"] for g in found.groups)
