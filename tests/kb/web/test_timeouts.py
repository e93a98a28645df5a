"""The limits a log shows, which one ends a hung collective first, and a framework timeout that never reached
the process group (diagnosis/readers/timeouts.py)."""

from __future__ import annotations

import re

import pytest

from diagnosis.engine import log_diagnose
from diagnosis.rules import rules_compile
from diagnosis.readers.timeouts import duration_text

WATCHDOG = (
    "[rank1]:[E1123 04:00:01.100000 2002 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)={ms}) ran for "
    "{ran} milliseconds before timing out.\n"
)
# TORCH_CPP_LOG_LEVEL=INFO: ProcessGroupNCCL prints its options and environment when each group is created.
PG_OPTIONS = (
    "[rank0]:I1123 03:49:59.120000 2001 ProcessGroupNCCL.cpp:869] [PG 0 Rank 0] ProcessGroupNCCL initialization "
    "options: size: 2, global rank: 0, TIMEOUT(ms): {ms}, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, "
    "PG Name: 0\n"
    "[rank0]:I1123 03:49:59.120100 2001 ProcessGroupNCCL.cpp:878] [PG 0 Rank 0] ProcessGroupNCCL environments: NCCL "
    "version: 2.18.3, TORCH_NCCL_ASYNC_ERROR_HANDLING: 1, TORCH_NCCL_DUMP_ON_TIMEOUT: 0, "
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC: 60000, TORCH_NCCL_DESYNC_DEBUG: 0, TORCH_NCCL_ENABLE_TIMING: 0, "
    "TORCH_NCCL_BLOCKING_WAIT: 0, TORCH_DISTRIBUTED_DEBUG: OFF, TORCH_NCCL_ENABLE_MONITORING: 1, "
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: {heartbeat}, TORCH_NCCL_TRACE_BUFFER_SIZE: 0\n"
)
TRAINING_ARGS = "TrainingArguments(\n_n_gpu=1,\nddp_find_unused_parameters=None,\nddp_timeout={seconds},\ndebug=[],\n)\n"
MEGATRON_ARGS = (
    "------------------------ arguments ------------------------\n"
    "  distributed_backend ............................. nccl\n"
    "  distributed_timeout_minutes ..................... {minutes}\n"
    "  embedding_path .................................. None\n"
)


@pytest.fixture(scope="module")
def rules():
    return rules_compile([])


def diagnose(rules, text: str, **files: str):
    sources = [("job.log", text.encode())] if text else []
    sources += [(name, body.encode()) for name, body in files.items()]
    return log_diagnose(sources, rules)


def test_a_trainer_timeout_that_the_process_group_does_not_have_is_called_out(rules):
    """accelerate#2236 and transformers#24775: ddp_timeout is ignored when the process group already exists."""
    result = diagnose(rules, TRAINING_ARGS.format(seconds=5400) + WATCHDOG.format(ms=600000, ran=600083))
    assert result.facts["timeout_set_s"] == 5400 and result.facts["timeout_not_applied"] is True
    assert any("ddp_timeout" in note and "did not reach it" in note for note in result.timeouts["notes"])


def test_a_megatron_timeout_that_reached_the_group_is_not_called_out(rules):
    result = diagnose(rules, MEGATRON_ARGS.format(minutes=30) + WATCHDOG.format(ms=1800000, ran=1800411))
    assert result.facts["timeout_set_s"] == 1800 and result.facts["timeout_not_applied"] is False
    assert result.timeouts["notes"] == []
    assert result.timeouts["summary"].startswith("A collective that never completes is ended first by the process group")
    assert "(it fired)" in result.timeouts["summary"]


def test_the_watchdog_line_and_the_start_up_print_of_one_timeout_are_one_limit_that_fired(rules):
    result = diagnose(rules, PG_OPTIONS.format(ms=600000, heartbeat=480) + WATCHDOG.format(ms=600000, ran=600001))
    collective = [limit for limit in result.timeouts["limits"] if limit["kind"] == "collective"]
    assert len(collective) == 1 and collective[0]["fired"] and collective[0]["line"] == 3


def test_limits_are_listed_shortest_first_with_what_each_one_bounds(rules):
    result = diagnose(rules, PG_OPTIONS.format(ms=1800000, heartbeat=480))
    assert [(limit["kind"], limit["seconds"]) for limit in result.timeouts["limits"]] == [
        ("heartbeat", 480),
        ("collective", 1800),
    ]
    assert "not a slow collective" in result.timeouts["limits"][0]["bounds"]


def test_a_slurm_limit_shorter_than_the_collective_timeout_fires_first_and_hides_the_hang(rules):
    launch = "+ srun --nodes=2 --ntasks-per-node=8 --time=00:05:00 python train.py\n"
    result = diagnose(rules, launch + PG_OPTIONS.format(ms=600000, heartbeat=480))
    assert result.timeouts["first"]["setting"] == "Slurm --time" and result.timeouts["first"]["seconds"] == 300
    assert any("no watchdog line and no Flight Recorder dump" in note for note in result.timeouts["notes"])


@pytest.mark.parametrize(
    "written, seconds",
    [("30", 1800), ("90:00", 5400), ("4:00:00", 14400), ("1-00", 86400), ("2-12:30", 217800), ("0-0:0:45", 45)],
)
def test_slurm_time_formats_are_read_as_slurm_means_them(rules, written, seconds):
    result = diagnose(rules, f"#SBATCH --time={written}\n")
    assert result.timeouts["limits"][0]["seconds"] == seconds


def test_a_job_ended_at_its_slurm_time_limit_says_so(rules):
    line = "slurmstepd: error: *** JOB 4121 ON gpu-node-07 CANCELLED AT 2026-11-23T04:10:00 DUE TO TIME LIMIT ***\n"
    result = diagnose(rules, WATCHDOG.format(ms=600000, ran=600001) + line)
    ended = [limit for limit in result.timeouts["limits"] if limit["kind"] == "job"]
    assert ended[0]["fired"] and ended[0]["seconds"] is None
    assert any("time limit" in note for note in result.timeouts["notes"])


def test_a_stuck_watchdog_is_told_apart_from_a_collective_timeout(rules):
    line = (
        "[rank25]:[F1121 04:22:40.771004219 ProcessGroupNCCL.cpp:1557] [PG ID 0 PG GUID 0(default_pg) Rank 25] "
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.\n"
    )
    result = diagnose(rules, line)
    assert result.timeouts["limits"][0]["kind"] == "heartbeat" and result.timeouts["limits"][0]["fired"]
    assert any("watchdog thread was stuck" in note for note in result.timeouts["notes"])


def test_limits_from_several_files_keep_the_file_that_shows_each(rules):
    result = diagnose(
        rules,
        "",
        **{"rank0.log": TRAINING_ARGS.format(seconds=3600), "rank1.log": WATCHDOG.format(ms=600000, ran=600001)},
    )
    sources = {limit["kind"]: limit["source"] for limit in result.timeouts["limits"]}
    assert sources == {"framework": "rank0.log", "collective": "rank1.log"}
    assert result.facts["timeout_not_applied"] is True


def test_a_log_without_limits_has_no_timeouts(rules):
    assert diagnose(rules, "[rank0]: step 10 loss 2.31\n").timeouts is None


@pytest.mark.parametrize(
    "seconds, shown",
    [(600, "600 s (10 min)"), (5400, "5400 s (90 min)"), (7200, "7200 s (2 h)"), (45, "45 s"), (23825, "23825 s (about 6.6 h)")],
)
def test_durations_are_said_in_seconds_and_a_rounder_unit(seconds, shown):
    assert duration_text(seconds) == shown


@pytest.mark.django_db
def test_the_results_page_shows_the_timeouts_and_the_setting_that_did_not_apply(client):
    from tests.kb.html_checks import assert_valid_html

    log = TRAINING_ARGS.format(seconds=5400) + WATCHDOG.format(ms=600000, ran=600083)
    response = client.post("/diagnose", {"log": log})
    assert_valid_html(response.content)
    page = response.content.decode()
    section = page[page.index('id="timeouts-h"') :]
    assert "ddp_timeout (transformers Trainer)" in section and "did not reach it" in section
    assert re.search(r'<li class="fired">\s*<p><strong>600 s \(10 min\)</strong> <span class="badge">fired</span>', section)


@pytest.mark.django_db
def test_the_api_answers_the_timeouts_with_their_lines(client):
    log = MEGATRON_ARGS.format(minutes=10) + WATCHDOG.format(ms=600000, ran=600001)
    body = client.post("/api/diagnose", data=log, content_type="text/plain").json()
    assert [(limit["setting"], limit["line"]) for limit in body["timeouts"]["limits"]] == [
        ("the process group's timeout", 5),
        ("--distributed-timeout-minutes (Megatron-LM)", 3),
    ]


def test_a_start_up_limit_alone_is_said_to_have_run_out_without_claiming_a_collective_limit(rules):
    line = "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.\n"
    summary = diagnose(rules, line).timeouts["summary"]
    assert summary.startswith("TCPStore timeout") and "ran out after 901 s" in summary and "no limit on collectives" in summary


@pytest.mark.django_db
def test_a_single_limit_that_says_nothing_new_gets_no_section_on_the_page(client):
    page = client.post("/diagnose", {"log": WATCHDOG.format(ms=600000, ran=600001)}).content.decode()
    assert 'id="timeouts-h"' not in page


def test_a_gloo_group_s_timeout_is_read_from_real_torch_output(rules):
    """tests/fixtures/generators: two ranks on gloo with a 10 s group timeout, rank 1 silent (torch 2.8.0)."""
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "fixtures/logs/generated/allreduce-rank1-silent-gloo-timeout-torch280.log"
    result = log_diagnose([("job.log", log)], rules)
    assert result.timeouts["first"]["seconds"] == 10 and result.timeouts["first"]["fired"]


@pytest.mark.parametrize("flag", ["--ddp_timeout 7200", "--ddp_timeout=7200", "--ddp-timeout 7200"])
def test_the_trainer_timeout_is_read_from_the_command_line_too(rules, flag):
    result = diagnose(rules, f"+ accelerate launch --multi_gpu train.py {flag} --bf16\n" + WATCHDOG.format(ms=600000, ran=600001))
    assert result.facts["timeout_set_s"] == 7200 and result.facts["timeout_not_applied"] is True


def test_no_limit_is_searched_for_by_a_word_as_common_as_timeout():
    """Each rule's prefilter literal is specific: a log full of the word 'timeout' costs no regex per line."""
    from diagnosis.readers.timeouts import LITERALS

    assert all(
        len(literal) >= 8 or literal in ("srun", "sbatch", "salloc", "mpirun", "mpiexec", "prterun") for literal in LITERALS
    )
    assert "timeout" not in LITERALS


def test_a_program_option_after_the_program_is_not_read_as_the_slurm_time_limit(rules):
    result = diagnose(rules, "+ srun --exclusive python train.py -t 5\n" + WATCHDOG.format(ms=600000, ran=600001))
    assert all(limit["kind"] != "job" for limit in result.timeouts["limits"])


def test_mpirun_s_own_timeout_is_read_and_a_program_s_is_not(rules):
    own = diagnose(rules, "+ mpirun -np 16 --timeout 300 -x NCCL_DEBUG=INFO python train.py\n")
    program = diagnose(rules, "+ mpirun -np 16 python train.py --timeout 300\n")
    assert own.timeouts["limits"][0]["setting"] == "mpirun --timeout" and own.timeouts["limits"][0]["seconds"] == 300
    assert program.timeouts is None


def test_a_watchdog_that_reports_hours_after_the_limit_is_called_out(rules):
    """An old-format (PyTorch < 2.1) line from a job whose watchdog reported 7 hours after a 30-minute limit."""
    line = (
        "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.\n"
    )
    result = diagnose(rules, line)
    assert result.facts["watchdog_late_s"] == 23824
    assert any("reported the timeout" in note and "paused" in note for note in result.timeouts["notes"])


def test_a_watchdog_a_few_seconds_late_is_normal(rules):
    result = diagnose(rules, WATCHDOG.format(ms=600000, ran=600471))
    assert "watchdog_late_s" not in result.facts and result.timeouts["notes"] == []
