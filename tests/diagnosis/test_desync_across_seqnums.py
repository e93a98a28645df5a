"""Ranks whose timeouts are one or a few SeqNums apart: a rank that had finished a collective another rank of its
group still waits in, and went on to a different one, called different collectives (a desync); but SeqNums count
per process group, and the timeout line never names its group, so lines are lined up only where the job evidently
has one group, or where their lines name the same one.

The logs are in the wording and at the source lines of the named PyTorch releases (ProcessGroupNCCL.cpp as users'
logs show it: 2.1 :475, 2.3 :563/:1537, 2.4 :607/:1664/:1709, 2.5 :616/:1785/:1834).
"""

import pytest
from django.conf import settings

from tools.corpus import content_rules
from diagnosis.engine import log_diagnose
from diagnosis.readers.facts import fact_literals, ranks_extract
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator

DESYNC = "collective-mismatch-desync"


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def diagnose(rules, text: str):
    return log_diagnose([("log", text.encode())], rules)


def torch24(rank: int, seq: int, op: str, numel: int, completed: int, pg: str = "1") -> str:
    """One rank's watchdog timeout in PyTorch 2.4: the line (no group), then its group's progress lines."""
    return (
        f"[rank{rank}]:[E1123 00:52:57.66494912{rank} ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) "
        f"ran for 60001{rank} milliseconds before timing out.\n"
        f"[rank{rank}]:[E1123 00:52:57.66542769{rank} ProcessGroupNCCL.cpp:1664] [PG {pg} Rank {rank}] Exception (either an "
        f"error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: "
        f"{completed}.\n"
        f"[rank{rank}]:[E1123 00:52:57.66560112{rank} ProcessGroupNCCL.cpp:1709] [PG {pg} Rank {rank}] Timeout at NCCL "
        f"work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {completed}.\n"
        f"[rank{rank}]:[E1123 00:52:57.66563768{rank} ProcessGroupNCCL.cpp:621] [Rank {rank}] Some NCCL operations have "
        "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n"
    )


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


TRAINER = (
    "{'loss': 0.8533, 'grad_norm': 4.869833469390869, 'learning_rate': 1.4516129032258065e-05, 'epoch': 0.16}\n"
    "  2%|▏         | 13/620 [01:07<50:20,  4.98s/it]\n"
)


def test_a_rank_past_a_collective_another_waits_in_with_a_different_size_is_a_desync(rules):
    """LlamaFactory (hiyouga/LlamaFactory#2902), PyTorch 2.4: rank 0 waits in ALLREDUCE #1516 on 25427968 elements;
    rank 1 had finished #1516 and waits in ALLREDUCE #1517 on one element. Same op, one SeqNum apart: before, only a
    different op at an adjacent SeqNum counted."""
    text = TRAINER + torch24(0, 1516, "ALLREDUCE", 25427968, 1515) + torch24(1, 1517, "ALLREDUCE", 1, 1516)
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is True
    assert "rank 1 had finished #1516, where rank 0 timed out in ALLREDUCE on 25427968 elements" in diagnosis.verdict.summary
    assert diagnosis.confident[0].slug == DESYNC


def test_a_rank_two_collectives_past_an_all_gather_another_waits_in_is_a_desync(rules):
    """torchtune (meta-pytorch/torchtune#1107), PyTorch 2.3, after a custom mid-epoch save: rank 1 waits in
    _ALLGATHER_BASE #313; rank 0 had finished #313 and #314 and waits in ALLREDUCE #315 on one element."""
    text = (
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=313, "
        "OpType=_ALLGATHER_BASE, NumelIn=262668288, NumelOut=525336576, Timeout(ms)=600000) ran for 600010 milliseconds "
        "before timing out.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=315, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600095 milliseconds before timing out.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 315, last enqueued NCCL work: 315, "
        "last completed NCCL work: 314.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 313, last enqueued NCCL work: 313, "
        "last completed NCCL work: 312.\n"
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is True
    assert "rank 0 had finished #313, where rank 1 timed out in _ALLGATHER_BASE" in diagnosis.verdict.summary


def test_a_rank_one_past_the_same_collective_of_the_same_size_is_not_a_desync(rules):
    """PyTorch 2.5, a run of equal gradient buckets: rank 0 waits in ALLREDUCE #2000, rank 1 had finished it and waits in
    #2001, the same all-reduce of the same size. That fits one sequence with rank 0 cut off inside #2000 as well."""
    default = "[PG ID 0 PG GUID 0(default_pg)"
    text = torch25(0, 2000, "ALLREDUCE", 26214400, 26214400, 1999, default) + torch25(
        1, 2001, "ALLREDUCE", 26214400, 26214400, 2000, default
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False
    assert "(a desync)" not in diagnosis.verdict.summary


def test_timeouts_in_two_named_process_groups_are_not_lined_up(rules):
    """PyTorch 2.5, two groups over both ranks (the default group and a copy of it, as DeepSpeed makes): rank 0 waits
    in the copy's _ALLGATHER_BASE #812, rank 1 in the default group's ALLREDUCE #813. Their progress lines name
    different groups (PG GUID 1 and 0), whose SeqNums count apart."""
    text = torch25(0, 812, "_ALLGATHER_BASE", 1048576, 2097152, 811, "[PG ID 1 PG GUID 1") + torch25(
        1, 813, "ALLREDUCE", 1, 1, 812, "[PG ID 0 PG GUID 0(default_pg)"
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["ranks_disagree"] is False


def test_timeouts_whose_lines_name_the_same_group_are_lined_up_in_a_job_with_several(rules):
    """PyTorch 2.5: both timeouts are in PG GUID 1 while the default group (GUID 0) prints the dump signal, so the job
    has two groups; the two ranks' progress lines name the same one, and rank 1 is past rank 0's all-reduce."""
    dumped = (
        "[rank{r}]:[E0219 08:58:33.10000000{r} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Received "
        "a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. "
        "Last enqueued NCCL work: 40, last completed NCCL work: 40.\n"
    )
    text = (
        torch25(0, 1516, "ALLREDUCE", 25427968, 25427968, 1515, "[PG ID 1 PG GUID 1")
        + dumped.format(r=0)
        + torch25(1, 1517, "ALLREDUCE", 1, 1, 1516, "[PG ID 1 PG GUID 1")
        + dumped.format(r=1)
    )
    diagnosis = diagnose(rules, text)
    assert diagnosis.facts["process_groups"] == ["0", "1"]
    assert diagnosis.facts["ranks_disagree"] is True


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


def test_a_group_rank_printed_under_another_global_rank_keeps_seqnums_apart(rules):
    """PyTorch 2.3, lines without a process group: global rank 4's timeout line says "[Rank 0]", its rank in a smaller
    group, so the job has groups other than the world's."""
    text = (
        "[rank4]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1516, "
        "OpType=ALLREDUCE, NumelIn=25427968, NumelOut=25427968, Timeout(ms)=600000) ran for 600017 milliseconds before "
        "timing out.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1517, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
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
