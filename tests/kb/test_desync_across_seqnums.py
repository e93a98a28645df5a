"""Which process group a rank's watchdog timeout is in: the timeout line never says, the progress line after it does,
in a form that names the group alike on every rank from PyTorch 2.4 on (ProcessGroupNCCL.cpp's logPrefix)."""

import pytest

from kb.diagnosis.facts import fact_literals, ranks_extract
from kb.diagnosis.scanning import TextScanner
from kb.diagnosis.text import LineLocator


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
