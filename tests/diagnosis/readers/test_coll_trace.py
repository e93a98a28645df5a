"""NCCL's collective trace (NCCL_DEBUG_SUBSYS=COLL): processes of one job that enqueued different collectives at the
same opCount of communicators of one size are out of step, and the desync case says so without a watchdog line.
Lines in the format of src/enqueue.cc (NCCL 2.4 to 2.30): '%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype
%d op %d root %d comm %p [nranks=%d] stream %p'."""

from __future__ import annotations

import pytest

from diagnosis.engine import log_diagnose
from diagnosis.rules import rules_compile
from tools.corpus import content_rules

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def coll(host: str, pid: int, dev: int, op: str, count: int, comm: str, nranks: int = 4) -> str:
    return (
        f"{host}:{pid}:{pid} [{dev}] NCCL INFO {op}: opCount {count:x} sendbuff 0x7f5dd139b900 recvbuff 0x7f5dd139b900 "
        f"count 8149504 datatype 7 op 0 root 0 comm {comm} [nranks={nranks}] stream 0x55bef0208bd0\n"
    )


def in_step(last: int = 0x30) -> list[str]:
    lines = []
    for count in range(0x20, last):
        for dev, pid in enumerate((45006, 45008, 45010, 45012)):
            op = "AllReduce" if count % 3 else "AllGather"
            lines.append(coll("h03r3n06", pid, dev, op, count, f"0x55bef02013{dev}0"))
    return lines


def _facts(text: str) -> dict:
    return log_diagnose([("job.log", text.encode())], rules_compile([], [])).facts


def test_processes_in_step_are_no_mismatch():
    assert "coll_trace_mismatch" not in _facts("".join(in_step()))


def test_two_collectives_at_one_opcount_are_a_mismatch():
    text = (
        "".join(in_step())
        + coll("h03r3n06", 45006, 0, "AllReduce", 0x30, "0x55bef0201300")
        + coll("h03r3n06", 45012, 3, "AllGather", 0x30, "0x55bef0201330")
    )
    assert _facts(text)["coll_trace_mismatch"].startswith("opCount 30 of 4-rank communicators: AllReduce on h03r3n06:45006")


def test_the_mismatch_is_found_across_a_job_s_files_in_any_order():
    a = coll("node1", 11, 0, "AllReduce", 0x91, "0x1000") + coll("node1", 11, 0, "Broadcast", 0x92, "0x1000")
    b = coll("node2", 22, 0, "AllReduce", 0x91, "0x2000") + coll("node2", 22, 0, "AllGather", 0x92, "0x2000")
    for sources in ([("a.log", a.encode()), ("b.log", b.encode())], [("b.log", b.encode()), ("a.log", a.encode())]):
        assert "opCount 92" in log_diagnose(sources, rules_compile([], [])).facts["coll_trace_mismatch"]


def test_a_process_with_two_communicators_of_one_size_is_not_lined_up():
    text = (
        coll("n", 1, 0, "AllReduce", 5, "0xa") + coll("n", 1, 0, "AllGather", 5, "0xb") + coll("n", 2, 1, "AllReduce", 5, "0xc")
    )
    assert "coll_trace_mismatch" not in _facts(text)


@pytest.fixture(scope="module")
def rules():
    return content_rules(ROOT / "content")


def test_the_desync_case_answers_a_collective_trace_out_of_step(rules):
    text = (
        "".join(in_step())
        + coll("h03r3n06", 45006, 0, "AllReduce", 0x30, "0x55bef0201300")
        + coll("h03r3n06", 45012, 3, "AllGather", 0x30, "0x55bef0201330")
    )
    diagnosis = log_diagnose([("job.log", text.encode())], rules)
    assert diagnosis.matches[0].slug == "collective-mismatch-desync" and diagnosis.matches[0].confidence >= 0.5
