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
