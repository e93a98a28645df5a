"""Each vocabulary the diagnosis speaks is declared once (conditions.FACTS, versions.SOFTWARE_NAMES); where a copy
must exist for another purpose (a label, a version fact), it is tied here to the declaration it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis import diagnose
from diagnosis.conditions import FACT_LABELS, FACTS
from diagnosis.engine import VERSION_FACTS
from diagnosis.result import Catalog
from diagnosis.rules import rules_compile
from diagnosis.versions import SOFTWARE_NAMES

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "tests/fixtures/contract"


def test_every_fact_label_names_a_declared_fact():
    assert set(FACT_LABELS) - set(FACTS) == set()


def test_every_version_fact_is_a_declared_version_of_a_named_software():
    assert set(VERSION_FACTS) - set(SOFTWARE_NAMES) == set()
    assert {fact: FACTS.get(fact, ("undeclared",))[0] for fact in VERSION_FACTS.values()} == dict.fromkeys(
        VERSION_FACTS.values(), "version"
    )


def test_content_schema_allows_exactly_the_software_the_diagnosis_names():
    from kb.content.schema import SOFTWARE

    assert SOFTWARE == tuple(SOFTWARE_NAMES)


@pytest.fixture(scope="module")
def rules():
    rows = json.loads((CONTRACT / "rules.json").read_text())
    return rules_compile(rows["cases"], rows["harmless"])


@pytest.fixture(scope="module")
def facts_reported(rules) -> set[str]:
    catalog = Catalog(titles={}, case_urls={}, harmless_url="/kb/harmless/", sections={})
    reported: set[str] = set()
    for name in json.loads((CONTRACT / "logs.json").read_text()):
        path = ROOT / name
        reported |= set(diagnose([(path.name, path.read_bytes())], rules, catalog).facts)
    return reported


def test_every_fact_reported_on_real_logs_is_declared_by_the_engine_or_by_a_signature(facts_reported, rules):
    """A fact comes from FACTS (what the readers compute) or from a named group of a case's signature (FORMAT.md)."""
    captured = {name for signature in rules.signatures for name in signature.regex.groupindex}
    assert facts_reported - set(FACTS) - captured == set()
    assert facts_reported & set(FACTS), "the contract logs gave no engine fact at all"


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("[rank3]:[E1123 06:12:44 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout", 3),
        ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5", 1),
        ("RuntimeError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d (rank 3)", 3),
        ("Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint", None),
        ("step 100 loss 2.31", None),
    ],
)
def test_the_evidence_rows_and_the_rank_groups_read_a_line_s_rank_by_one_rule(line, rank):
    """diagnosis.text.line_rank is the one reading: the evidence rows mark a row's rank with it and the rank groups
    take a group's evidence with it (each had its own regex, and a "rank 3" in the text counted in one only)."""
    from diagnosis import evidence, rank_groups
    from diagnosis.text import line_rank

    assert line_rank(line) == rank
    assert evidence.line_rank is rank_groups.line_rank is line_rank
