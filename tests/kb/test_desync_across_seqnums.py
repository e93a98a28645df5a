"""Ranks' timeouts at the same or nearby SeqNums are lined up (different collectives, different sizes: a desync) only
within one process group: SeqNums count per group, and the timeout line never names its group, so lines are lined
up only where the job evidently has one group, or where their lines name the same one.

The logs are in the wording and at the source lines of the named PyTorch releases (ProcessGroupNCCL.cpp as users'
logs show it: 2.1 :475, 2.3 :563/:1537, 2.4 :607/:1664/:1709, 2.5 :616/:1785/:1834).
"""

import pytest
from django.conf import settings

from kb.corpus import content_rules
from kb.diagnosis.engine import log_diagnose
from kb.diagnosis.facts import fact_literals, ranks_extract
from kb.diagnosis.scanning import TextScanner
from kb.diagnosis.text import LineLocator

DESYNC = "collective-mismatch-desync"


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def diagnose(rules, text: str):
    return log_diagnose([("log", text.encode())], rules)


def torch25(rank: int, seq: int, op: str, numel_in: int, numel_out: int, completed: int, pg: str) -> str:
    """One rank's watchdog timeout in PyTorch 2.5; `pg` is the "[PG ID n PG GUID name(desc)" part of its prefix."""
    return (
        f"[rank{rank}]:[E0219 08:58:32.60623333{rank} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel_in}, NumelOut={numel_out}, "
        f"Timeout(ms)=600000) ran for 60003{rank} milliseconds before timing out.\n"
        f"[rank{rank}]:[E0219 08:58:32.60666749{rank} ProcessGroupNCCL.cpp:1785] {pg} Rank {rank}] Exception (either an "
        f"error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: "
        f"{completed}.\n"
        f"[rank{rank}]:[E0219 08:58:32.60669332{rank} ProcessGroupNCCL.cpp:1834] {pg} Rank {rank}] Timeout at NCCL work: "
        f"{seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {completed}.\n"
    )


def test_timeouts_in_two_named_process_groups_are_not_lined_up(rules):
    """PyTorch 2.5, two groups over both ranks (the default group and a copy of it, as DeepSpeed makes): rank 0 waits
    in the copy's _ALLGATHER_BASE #812, rank 1 in the default group's ALLREDUCE #813. Their progress lines name
    different groups (PG GUID 1 and 0), whose SeqNums count apart."""
    text = torch25(0, 812, "_ALLGATHER_BASE", 1048576, 2097152, 811, "[PG ID 1 PG GUID 1") + torch25(
        1, 813, "ALLREDUCE", 1, 1, 812, "[PG ID 0 PG GUID 0(default_pg)"
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False


MEGATRON = (
    "+ torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1\n"
    "using world size: 8, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 4, "
    "pipeline-model-parallel size: 1\n"
    "> initializing torch distributed ...\n"
    "> initialized tensor model parallel with size 4\n"
    " iteration     2180/  500000 | consumed samples:       279040 | elapsed time per iteration (ms): 1421.3 |\n"
)


def torch21(rank: int, seq: int, op: str, numel_in: int, numel_out: int) -> str:
    return (
        f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
        f"OpType={op}, NumelIn={numel_in}, NumelOut={numel_out}, Timeout(ms)=600000) ran for 60021{rank} milliseconds "
        "before timing out.\n"
    )


def test_a_megatron_hang_without_process_group_ids_is_not_lined_up(rules):
    """Megatron-LM, PyTorch 2.1 (no [PG ...] anywhere): "[Rank 0]" at a tensor-parallel all-reduce #5312 and "[Rank 1]"
    at a data-parallel reduce-scatter #5313 come from different groups whose counters happen to be close."""
    text = (
        MEGATRON + torch21(0, 5312, "ALLREDUCE", 16777216, 16777216) + torch21(1, 5313, "_REDUCE_SCATTER_BASE", 8388608, 4194304)
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False


def test_tensor_parallel_flags_without_the_framework_name_keep_seqnums_apart(rules):
    """The same two lines after a launch line that names tensor and pipeline parallelism only."""
    launch = "torchrun --nproc_per_node 8 train.py --tensor-parallel-size 4 --pipeline-parallel-size 2\n"
    text = launch + torch21(0, 5312, "ALLREDUCE", 16777216, 16777216) + torch21(1, 5313, "_REDUCE_SCATTER_BASE", 8388608, 4194304)
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["parallelism"] == ["tensor-parallel", "pipeline-parallel"]
    assert diagnosis.facts["ranks_disagree"] is False


def test_an_all_gather_over_fewer_ranks_than_the_job_keeps_seqnums_apart(rules):
    """PyTorch 2.3, HSDP on 16 ranks named nowhere: rank 2's _ALLGATHER_BASE gathers 8 shards (the intra-node shard
    group), so the job has groups smaller than itself; rank 3's all-reduce one SeqNum later may be another group's."""
    text = (
        "torchrun --nnodes 2 --nproc_per_node 8 train.py\n"
        "[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7001, "
        "OpType=_ALLGATHER_BASE, NumelIn=8388608, NumelOut=67108864, Timeout(ms)=600000) ran for 600012 milliseconds before "
        "timing out.\n"
        "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7002, "
        "OpType=ALLREDUCE, NumelIn=67108864, NumelOut=67108864, Timeout(ms)=600000) ran for 600013 milliseconds before "
        "timing out.\n"
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False


@pytest.mark.parametrize(
    "prefix, wording, group",
    [
        ("[PG 0 Rank 1]", "Timeout at NCCL work", None),  # 2.3: the number counts the process's groups
        ("[PG 1 Rank 1]", "Exception (either an error or timeout) detected by watchdog at work", "1"),  # 2.4, no desc
        ("[PG 0 (default_pg) Rank 1]", "Timeout at NCCL work", "0"),  # 2.4
        ("[PG ID 2 PG GUID 3 Rank 1]", "Timeout at NCCL work", "3"),  # 2.5
        ("[PG ID 0 PG GUID 0(default_pg) Rank 1] ", "failure detected by watchdog at work sequence id", "0"),  # 2.6+
    ],
)
def test_the_progress_line_at_the_timeouts_seqnum_names_its_process_group(prefix, wording, group):
    tail = (
        " PG status: last enqueued work: 77, last completed work: 76"
        if "sequence id" in wording
        else (", last enqueued NCCL work: 77, last completed NCCL work: 76.")
    )
    text = (
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
        f"[rank1]:[E ProcessGroupNCCL.cpp:1537] {prefix} {wording}: 77{tail}\n"
    )
    ranks = ranks_extract(TextScanner(text, fact_literals()), LineLocator(text))
    assert ranks[1].group == group
