"""Gloo timeouts and monitored_barrier errors read like the watchdog's: the rank whose traceback ends in one timed out
in that collective, so silent ranks, the op and the limit are known, and a barrier rank 0 never reached is the
rank-0-busy case.

The logs are real output of torchrun --nproc_per_node=2 on CPU with gloo (tests/fixtures/generators/
train_gloo_faults.py, scenario h) on PyTorch 2.1.2, 2.13.0 and 2.14.1; see tests/fixtures/logs/generated/expected.yaml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from diagnosis.engine import log_diagnose
from diagnosis.readers.stacks import gloo_waits, stacks_extract
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator

from tests.diagnosis.generated_runs import GENERATED, RELEASES, confident, run
from tools.corpus import content_rules

RANK0 = "rank0-long-preprocessing-barrier-timeout"


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def stacks(path: Path):
    text = path.read_text()
    return stacks_extract(TextScanner(text, [("Traceback (most recent call last):", False)]), LineLocator(text))


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("scenario", ["rank0-busy-barrier-gloo-timeout", "monitored-barrier-rank0-busy"])
def test_a_gloo_barrier_that_rank_0_never_reached_is_the_rank_0_case(rules, scenario, release):
    diagnosis = run(rules, GENERATED / f"{scenario}-{release}.log")
    assert confident(diagnosis)[:1] == [RANK0]
    # read like a watchdog timeout: rank 1 timed out in a barrier, rank 0 never reported
    assert diagnosis.facts["timed_out_ranks"] == [1]
    assert diagnosis.facts["silent_ranks"] == [0]
    assert diagnosis.facts["op_type"] == "BARRIER"
    assert "rank 0 of 2 never reported a timeout" in diagnosis.verdict.summary


@pytest.mark.parametrize("release", RELEASES)
def test_gloo_s_timeout_is_read_as_the_collective_s_limit(rules, release):
    path = GENERATED / f"rank0-busy-barrier-gloo-timeout-{release}.log"
    [wait] = gloo_waits(stacks(path))
    assert (wait.collective, wait.op, wait.timeout_ms) == ("barrier", "BARRIER", 10000)
    assert run(rules, path).facts["timeout_ms"] == 10000


def test_an_unprefixed_traceback_takes_its_rank_from_torchrun_s_table_not_from_a_line_above_it(rules):
    # PyTorch 2.1 prints tracebacks without "[rankN]:"; the line above this one is rank 0's own print
    path = GENERATED / "rank0-busy-barrier-gloo-timeout-torch212.log"
    text = path.read_text()
    assert "[rank0] pid=" in text.split("Traceback (most recent call last):")[0].splitlines()[-1]
    [wait] = gloo_waits(stacks(path))
    assert wait.rank is None
    assert run(rules, path).facts["timed_out_ranks"] == [1]  # the table: rank 1 exitcode 1, rank 0 SIGTERM


@pytest.mark.parametrize("release", RELEASES)
def test_monitored_barrier_naming_the_late_rank_makes_rank_0_the_waiter(rules, release):
    diagnosis = run(rules, GENERATED / f"monitored-barrier-rank1-late-{release}.log")
    assert diagnosis.facts["timed_out_ranks"] == [0]
    assert diagnosis.facts["silent_ranks"] == [1]
    assert RANK0 not in confident(diagnosis)
    # "Rank 1 failed to pass monitoredBarrier" is rank 0 waiting, not an exception of its own
    assert diagnosis.facts.get("first_failure") != "exception"


@pytest.mark.parametrize("release", RELEASES)
def test_rank_1_s_monitored_barrier_error_is_a_wait_not_a_failure(rules, release):
    diagnosis = run(rules, GENERATED / f"monitored-barrier-rank0-busy-{release}.log")
    assert diagnosis.facts.get("first_failure") != "exception"


def test_a_rank_silent_at_the_barrier_is_not_rank_0_when_rank_0_timed_out(rules):
    # scenario b1: rank 1 sleeps, rank 0 waits in the barrier
    diagnosis = run(rules, GENERATED / "barrier-rank1-silent-gloo-timeout-torch2150.log")
    assert diagnosis.facts["silent_ranks"] == [1]
    assert RANK0 not in confident(diagnosis)


@pytest.mark.parametrize("release", RELEASES)
def test_without_the_launch_line_torchrun_s_table_says_which_ranks_the_job_has(rules, release):
    # what a user pastes: the output, not the command that started it (the fixture's first line is the generator's)
    text = (GENERATED / f"rank0-busy-barrier-gloo-timeout-{release}.log").read_text()
    assert text.startswith("$ torchrun --nproc_per_node=2")
    pasted = text.split("\n", 1)[1]
    diagnosis = log_diagnose([("log", pasted.encode())], rules)
    assert "world_size" not in diagnosis.facts
    assert diagnosis.facts["silent_ranks"] == [0]
    assert "rank 0 of at least 2 never reported a timeout" in diagnosis.verdict.summary
    assert confident(diagnosis)[:1] == [RANK0]
