"""Evidence about the job as a whole: ranks, stages, stacks, the first failure, harmless lines and guides
decide which case wins, not only single lines."""

from pathlib import Path

import pytest

from diagnosis.engine import log_diagnose
from diagnosis.rules import rules_compile

TIMEOUT = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600{r:03d} "
    "milliseconds before timing out."
)


def timeouts(ranks, op="ALLREDUCE", seq=1) -> str:
    return "\n".join(TIMEOUT.format(r=r, op=op, seq=seq) for r in ranks)


ANY_TIMEOUT = {
    "id": "any-timeout",
    "description": "a watchdog timeout",
    "weight": 1,
    "pattern": r"Watchdog caught collective operation timeout",
}
CASES = [
    {
        "slug": "desync",
        "signatures": [ANY_TIMEOUT],
        "conditions": [
            {
                "id": "ranks-disagree",
                "description": "ranks in different collectives",
                "fact": "ranks_disagree",
                "equals": True,
                "weight": 7,
                "anchor": True,
            }
        ],
    },
    {
        "slug": "compile-hang",
        "signatures": [
            {
                "id": "stage-line",
                "description": "compile stage",
                "weight": 7,
                "anchor": True,
                "pattern": r"> compiling and loading fused kernels",
            }
        ],
        "conditions": [
            {
                "id": "compile-done",
                "description": "the stage finished",
                "fact": "stages_done",
                "contains": "compiling and loading fused kernels",
                "weight": -9,
            }
        ],
    },
    {
        "slug": "rank0-slow",
        "signatures": [ANY_TIMEOUT],
        "conditions": [
            {"id": "rank0-silent", "description": "rank 0 never timed out", "fact": "silent_ranks", "contains": 0, "weight": 3},
            {
                "id": "building-indices",
                "description": "rank 0 builds dataset indices",
                "fact": "stage",
                "equals": "building dataset indices",
                "weight": 4,
                "anchor": True,
            },
        ],
    },
    {
        "slug": "stale-lock",
        "signatures": [
            {"id": "ext-root", "description": "extensions root", "weight": 1, "pattern": r"as PyTorch extensions root"}
        ],
        "frames": [
            {
                "id": "baton-wait",
                "description": "waits on the FileBaton",
                "pattern": r"torch/utils/file_baton\.py:wait$",
                "weight": 7,
                "anchor": True,
            }
        ],
        "steps": [
            {"anchor": "fix-2", "versions": {"pytorch": "<2.14"}, "evidence": ["baton-wait"]},
            {"anchor": "fix-3", "evidence": ["ext-root"]},
        ],
    },
    {
        "slug": "host-oom",
        "signatures": [
            {
                "id": "sigkill",
                "description": "a rank got SIGKILL",
                "weight": 3,
                "pattern": r"Signal 9 \(SIGKILL\) received by PID",
            }
        ],
        "conditions": [
            {
                "id": "killed-first",
                "description": "the first failure is a kill",
                "fact": "first_failure",
                "in": ["sigkill", "oom-kill"],
                "weight": 4,
                "anchor": True,
            }
        ],
    },
    {
        "slug": "triage",
        "guide": True,
        "signatures": [
            {
                "id": "any-timeout",
                "description": "a watchdog timeout",
                "weight": 6,
                "anchor": True,
                "pattern": r"Watchdog caught collective operation timeout",
            }
        ],
    },
]
HARMLESS = [
    {
        "id": "pg-not-destroyed",
        "title": "process group not destroyed",
        "why": "printed at exit",
        "pattern": r"process group has NOT been destroyed before we destruct ProcessGroupNCCL",
    }
]


@pytest.fixture(scope="module")
def rules():
    return rules_compile(CASES, HARMLESS)


def best(rules, text: str, version_line: str = ""):
    diagnosis = log_diagnose([("log", (version_line + text).encode())], rules)
    return diagnosis, (diagnosis.confident[0].slug if diagnosis.confident else None)


def test_ranks_in_different_collectives_at_adjacent_seqnums_are_a_desync(rules):
    text = TIMEOUT.format(r=0, op="BROADCAST", seq=41) + "\n" + timeouts(range(1, 4), op="ALLREDUCE", seq=42)
    diagnosis, slug = best(rules, text)
    assert slug == "desync" and diagnosis.facts["ranks_disagree"] is True


def test_ranks_in_the_same_collective_are_not_a_desync(rules):
    diagnosis, slug = best(rules, timeouts(range(4), seq=42))
    assert diagnosis.facts["ranks_disagree"] is False and slug != "desync"


def _sized(rank: int, op: str, seq: int, numel: int) -> str:
    return TIMEOUT.format(r=rank, op=op, seq=seq).replace("NumelIn=1, NumelOut=1", f"NumelIn={numel}, NumelOut={numel}")


def test_one_collective_run_with_different_input_sizes_is_a_desync(rules):
    """PyTorch 2.1 wording: ranks 1-3 and rank 0 at ALLREDUCE SeqNum 13807 on different bucket sizes."""
    text = "\n".join([_sized(r, "ALLREDUCE", 13807, 11274112) for r in (1, 2, 3)] + [_sized(0, "ALLREDUCE", 13807, 10942336)])
    diagnosis, slug = best(rules, text)
    assert slug == "desync" and diagnosis.facts["ranks_disagree"] is True
    assert "ranks 1–3 on 11274112 elements and rank 0 on 10942336 elements" in diagnosis.verdict.summary


def test_all_to_all_sizes_may_differ_between_ranks(rules):
    text = "\n".join(_sized(r, "ALLTOALL_BASE", 90, 1000 + r) for r in range(4))
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False


@pytest.mark.parametrize(
    "tail, stage",
    [
        ("Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n", "building extension"),
        (
            "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
            "Loading extension module fused_adam...\nTime to load fused_adam op: 0.39 seconds\n",
            "extension loaded",
        ),
        ("{'train_runtime': 119.8187, 'train_samples_per_second': 3.2, 'train_loss': 1.21, 'epoch': 3.0}\n", "training finished"),
        ("***** train metrics *****\n  train_runtime            = 0:01:59.81\n", "training finished"),
        (
            "fully_sharded_data_parallel.py:690: FutureWarning: FSDP.state_dict_type() and FSDP.set_state_dict_type() are "
            "being deprecated. Please use APIs, get_state_dict() and set_state_dict()\n",
            "saving checkpoint",
        ),
        ("INFO:accelerate.accelerator:Saving FSDP model\n", "saving checkpoint"),
    ],
    ids=[
        "extensions-root-last",
        "extension-loaded-after",
        "trainer-metrics-dict",
        "trainer-metrics-table",
        "fsdp-state-dict",
        "accelerate-save-state-fsdp",
    ],
)
def test_the_last_progress_line_names_the_stage(rules, tail, stage):
    text = "{'loss': 1.3, 'grad_norm': 0.8, 'learning_rate': 2e-05, 'epoch': 2.9}\n" + tail + timeouts(range(1, 4), seq=900)
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["stage"] == stage


def test_a_finished_stage_rules_its_hang_out(rules):
    text = (
        "> compiling and loading fused kernels ...\n"
        ">>> done with compiling and loading fused kernels. Compilation time: 2.418 seconds\n"
        " > WARNING: could not find index map files, building the indices on rank 0 ...\n" + timeouts(range(1, 8))
    )
    diagnosis, slug = best(rules, text)
    assert slug == "rank0-slow" and diagnosis.facts["stage"] == "building dataset indices"


def test_a_rank_missing_from_the_timeouts_is_silent_without_a_world_size_line(rules):
    diagnosis, _ = best(rules, timeouts(range(1, 8)))
    assert diagnosis.facts["silent_ranks"] == [0]


def test_a_watchdog_line_cut_before_ran_for_still_names_its_collective(rules):
    """A paste cut at the right edge: the record is whole, "ran for ..." is gone (PyTorch 2.4's what() line)."""
    line = (
        "  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=199, OpType=_REDUCE_SCATTER_BASE, NumelIn=7098994688, "
        "NumelOut=443687168, Timeout(ms)=600000) ra"
    )
    diagnosis, _ = best(rules, line)
    assert (diagnosis.facts["op_type"], diagnosis.facts["seq_num"], diagnosis.facts["timeout_ms"]) == (
        "_REDUCE_SCATTER_BASE",
        199,
        600000,
    )


def test_an_excerpt_of_high_ranks_says_nothing_of_the_ranks_below_it(rules):
    diagnosis, _ = best(rules, timeouts([64, 65, 67]))
    assert diagnosis.facts["silent_ranks"] == [66]


def test_the_launch_line_gives_the_world_size_for_silent_ranks(rules):
    diagnosis, _ = best(rules, "torchrun --nnodes 2 --nproc_per_node 4 train.py\n" + timeouts(range(0, 6)))
    assert diagnosis.facts["world_size"] == 8 and diagnosis.facts["silent_ranks"] == [6, 7]


def test_every_rank_in_its_first_collective_is_reported(rules):
    diagnosis, _ = best(rules, timeouts(range(1, 4), seq=1))
    assert diagnosis.facts["first_collective"] is True


def test_an_allgather_of_one_element_per_rank_is_an_object_collective(rules):
    text = "\n".join(TIMEOUT.format(r=r, op="ALLGATHER", seq=493).replace("NumelOut=1,", "NumelOut=4,") for r in (2, 3))
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["object_collective"] is True
    assert "size exchange of all_gather_object" in diagnosis.verdict.summary


@pytest.mark.parametrize("op, numel_out", [("ALLGATHER", 1), ("_ALLGATHER_BASE", 4), ("ALLREDUCE", 4)])
def test_other_collectives_are_not_object_collectives(rules, op, numel_out):
    text = "\n".join(TIMEOUT.format(r=r, op=op, seq=493).replace("NumelOut=1,", f"NumelOut={numel_out},") for r in (2, 3))
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["object_collective"] is False


def test_the_watchdog_wording_dates_the_pytorch_release_when_no_version_is_printed(rules):
    text = (
        "[rank1]:[E0914 11:02:41.1 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an error or "
        "timeout) detected by watchdog at work: 9, last enqueued NCCL work: 9, last completed NCCL work: 8.\n"
    )
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["torch_band"] == [">=2.4,<2.6"]


def test_a_fix_step_outside_the_range_the_wording_implies_is_not_offered(rules):
    text = (
        'Thread 4242 (idle): "MainThread"\n    wait (torch/utils/file_baton.py:42)\n'
        "[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: boom\n"
    )
    diagnosis, _ = best(rules, text)
    lock = next(m for m in diagnosis.matches if m.slug == "stale-lock")
    assert diagnosis.facts["torch_band"] == ["<2.3"] and lock.steps_not_for_versions == []
    text_new = text.replace("NCCL watchdog thread terminated", "Process group watchdog thread terminated")
    text_new += "[rank1]:[E ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 1]  failure detected by watchdog at work sequence id: 5\n"
    rules_new = rules_compile(
        [
            {
                **CASES[3],
                "steps": [
                    {"anchor": "fix-2", "versions": {"pytorch": "<2.6"}, "evidence": ["baton-wait"]},
                    {"anchor": "fix-3", "evidence": ["ext-root"]},
                ],
            }
        ]
    )
    diagnosis = log_diagnose([("log", text_new.encode())], rules_new)
    assert diagnosis.matches[0].steps_not_for_versions == ["fix-2"]


def test_two_nccl_releases_in_one_job_are_flagged(rules):
    text = "NCCL version 2.21.5+cuda12.4\n==> node1.log <==\nNCCL version 2.18.3+cuda12.2\n"
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["nccl_versions"] == ["2.18.3", "2.21.5"] and diagnosis.facts["nccl_builds_differ"] is True


def test_both_bootstrap_wordings_mean_different_nccl_builds(rules):
    text = (
        "node-a:11:11 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "node-b:12:12 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>\n"
    )
    diagnosis, _ = best(rules, text)
    assert diagnosis.facts["nccl_builds_differ"] is True


def test_a_stack_frame_decides_a_case(rules):
    text = 'Thread 4242 (idle): "MainThread"\n    wait (torch/utils/file_baton.py:42)\n    _jit_compile (torch/utils/cpp_extension.py:1535)\n'
    diagnosis, slug = best(rules, text)
    assert slug == "stale-lock" and diagnosis.matches[0].evidence[0].line == 2


def test_the_fix_step_is_the_one_the_evidence_points_at(rules):
    text = 'Thread 4242 (idle): "MainThread"\n    wait (torch/utils/file_baton.py:42)\n'
    diagnosis, _ = best(rules, text)
    assert diagnosis.matches[0].fix_step == "fix-2"


def test_a_step_outside_the_logs_versions_is_not_offered(rules):
    text = 'PyTorch version: 2.14.1\nThread 4242 (idle): "MainThread"\n    wait (torch/utils/file_baton.py:42)\n'
    diagnosis, _ = best(rules, text)
    assert diagnosis.matches[0].fix_step is None and diagnosis.matches[0].steps_not_for_versions == ["fix-2"]


def test_a_rank_killed_before_the_timeouts_is_the_first_failure(rules):
    text = (
        timeouts(range(0, 3))
        + """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-02-11_09:41:27
  host      : node-7.cluster
  rank      : 3 (local_rank: 3)
  exitcode  : -9 (pid: 88231)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 88231
============================================================"""
    )
    diagnosis, slug = best(rules, text)
    assert slug == "host-oom" and diagnosis.failure.rank == 3 and diagnosis.failure.time == "2025-02-11_09:41:27"
    assert diagnosis.verdict.summary.startswith("Rank 3 was killed with SIGKILL")


def test_a_harmless_line_is_set_aside_and_never_evidence(rules):
    text = "[rank0]:[W1107 10:00:00.000 ProcessGroupNCCL.cpp:1250] WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n"
    diagnosis, slug = best(rules, text)
    assert slug is None and [h.id for h in diagnosis.harmless] == ["pg-not-destroyed"] and diagnosis.harmless[0].line == 1


def test_a_guide_is_listed_after_a_confident_cause(rules):
    text = "> compiling and loading fused kernels ...\n" + timeouts(range(1, 8))
    diagnosis, slug = best(rules, text)
    assert slug == "compile-hang" and [m.kind for m in diagnosis.matches][-1] == "guide"


def test_a_bare_timeout_gets_the_guide_marked_as_a_guide(rules):
    diagnosis, slug = best(rules, TIMEOUT.format(r=3, op="ALLREDUCE", seq=9000))
    assert slug == "triage" and diagnosis.matches[0].kind == "guide"


FLIGHT_RECORDER = Path(__file__).resolve().parents[1] / "fixtures" / "flight_recorder"


def dumps(scenario: str) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted((FLIGHT_RECORDER / scenario).glob("rank_[0-9]"))]


def test_flight_recorder_dumps_among_the_inputs_are_read_as_dumps():
    diagnosis = log_diagnose(dumps("mismatched_op"), rules_compile([]))
    assert diagnosis.facts["fr_mismatch"] is True and diagnosis.stats["lines"] == 0
    assert [g["ranks"] for g in diagnosis.recorder.groups if g["odd"]] == [[3]]


def test_a_rank_missing_from_the_dumps_is_named():
    diagnosis = log_diagnose(dumps("missing_rank"), rules_compile([]))
    assert diagnosis.facts["fr_missing_ranks"] == [2]


def test_healthy_dumps_raise_no_fact_against_the_job():
    diagnosis = log_diagnose(dumps("healthy"), rules_compile([]))
    assert diagnosis.facts["fr_mismatch"] is False and diagnosis.facts["fr_missing_ranks"] == []


def test_a_file_whose_path_names_its_rank_gives_its_stacks_that_rank():
    text = b'Thread 4242 (idle): "MainThread"\n    barrier (torch/distributed/distributed_c10d.py:3685)\n'
    diagnosis = log_diagnose(
        [("attempt_0/3/stderr.log", text), ("attempt_0/1/stderr.log", text)],
        rules_compile([]),
        ranks={"attempt_0/3/stderr.log": 3, "attempt_0/1/stderr.log": 1},
    )
    assert diagnosis.stack_groups[0]["ranks"] == [1, 3]
