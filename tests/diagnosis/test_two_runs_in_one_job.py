"""Two runs of a job in one archive (two attempts' logs, a reused log folder) both claim ranks 0 and 1: merged, their
ranks seem to disagree. The engine says the files look like two runs and does not answer 'desync' (issue 33)."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnosis.engine import log_diagnose
from tools.corpus import content_rules

ROOT = Path(__file__).resolve().parents[2]
WATCHDOG = (
    "[rank{r}]:[E1104 02:53:16.482140337 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for 600041 "
    "milliseconds before timing out.\n"
)


def run(op: str, seq: int, numel: int) -> bytes:
    return "".join(WATCHDOG.format(r=r, seq=seq, op=op, n=numel) for r in (0, 1)).encode()


@pytest.fixture(scope="module")
def rules():
    return content_rules(ROOT / "content")


def test_two_files_with_the_same_ranks_in_different_collectives_are_two_runs(rules):
    diagnosis = log_diagnose(
        [("attempt_0/rank0.log", run("ALLREDUCE", 812, 262144)), ("attempt_1/rank0.log", run("BROADCAST", 2, 1024))], rules
    )
    assert diagnosis.facts["runs_mixed"].startswith("attempt_0/rank0.log and attempt_1/rank0.log both show ranks 0, 1")
    assert not any(m.slug == "collective-mismatch-desync" and m.confidence >= 0.5 for m in diagnosis.matches)


def test_one_run_split_over_two_files_is_not_two_runs(rules):
    diagnosis = log_diagnose(
        [("console.log", run("ALLREDUCE", 812, 262144)), ("node0/rank0.log", run("ALLREDUCE", 812, 262144))], rules
    )
    assert "runs_mixed" not in diagnosis.facts


def test_one_rank_in_two_files_is_not_enough_to_call_two_runs(rules):
    one = WATCHDOG.format(r=3, seq=5, op="ALLREDUCE", n=8).encode()
    other = WATCHDOG.format(r=3, seq=9, op="ALLGATHER", n=8).encode()
    assert "runs_mixed" not in log_diagnose([("a.log", one), ("b.log", other)], rules).facts
