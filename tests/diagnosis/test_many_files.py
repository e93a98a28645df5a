"""A job of thousands of small files (an archive of per-rank logs, or a hostile one of 4,999 tiny members) costs the
engine time in proportion to its files, not to their square."""

from __future__ import annotations

from diagnosis.engine import job_diagnose
from diagnosis.readers import facts
from diagnosis.readers.base import FileReading
from diagnosis.rules import Rules

FILES = 1000  # under facts.MAX_FACT_VALUES, the most values of a list fact the engine keeps


def _rank_file(rank: int) -> FileReading:
    return FileReading(facts={"hosts": [f"node{rank:04d}"], "op_type": ["ALLREDUCE"]}, label=f"rank{rank}.log")


def test_list_facts_of_many_files_are_joined_and_sorted_once(monkeypatch):
    keyed = []
    order = facts._order
    monkeypatch.setattr(facts, "_order", lambda value: keyed.append(1) or order(value))
    diagnosis = job_diagnose([_rank_file(rank) for rank in reversed(range(FILES))], Rules(signatures=[]))
    assert diagnosis.facts["hosts"] == [f"node{rank:04d}" for rank in range(FILES)]
    assert diagnosis.facts["op_type"] == ["ALLREDUCE"]
    assert len(keyed) <= 2 * (FILES + 1)  # once per value; re-sorting at every file made it about FILES**2 / 2


def test_one_file_keeps_its_list_facts_in_the_order_it_read_them():
    reading = FileReading(facts={"op_type": ["BROADCAST", "ALLREDUCE"]}, label=None)
    assert job_diagnose([reading], Rules(signatures=[])).facts["op_type"] == ["BROADCAST", "ALLREDUCE"]


WATCHDOG = (
    "[rank{rank}]:[E1123 06:12:44.100000 4100 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632] [Rank {rank}] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1048576, "
    "NumelOut=1048576, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
)


def _contract_rules():
    import json
    from pathlib import Path

    from diagnosis.rules import rules_compile

    rows = json.loads((Path(__file__).resolve().parents[1] / "fixtures/contract/rules.json").read_text())
    return rules_compile(rows["cases"], rows["harmless"])


def test_the_signature_index_keeps_exactly_the_signatures_that_can_match():
    from diagnosis.readers.signatures import SignatureIndex
    from diagnosis.scan.scanner import TextScanner

    rules = _contract_rules()
    index = SignatureIndex.build(rules.signatures)
    for text in (WATCHDOG.format(rank=3), "step 10 loss 2.31\n", "NCCL WARN NET/IB : Got completion from peer\n"):
        scanner = TextScanner(text, rules.literals)
        possible = [sig for sig in rules.signatures if scanner.can_match(sig.prefilter, sig.ignorecase)]
        kept = [sig for sig in index.candidates(scanner, rules.signatures) if scanner.can_match(sig.prefilter, sig.ignorecase)]
        assert kept == possible
        assert len(index.candidates(scanner, rules.signatures)) < len(rules.signatures)


def test_files_left_when_the_time_budget_is_spent_are_not_read_and_the_answer_says_so(monkeypatch):
    from diagnosis import engine

    clock = iter(range(0, 10_000))
    monkeypatch.setattr(engine.time, "perf_counter", lambda: float(next(clock)))  # a second passes at each look
    sources = [(f"rank{rank}.log", WATCHDOG.format(rank=rank).encode()) for rank in range(40)]
    diagnosis = engine.log_diagnose(sources, _contract_rules(), budget_s=5)
    assert diagnosis.stats.get("partial") is True
    assert any(note.endswith("the time one diagnosis may take was spent on the files before them") for note in diagnosis.repairs)
    unread = int(next(note for note in diagnosis.repairs if "files were not read" in note).split()[0])
    assert 0 < unread < 40
