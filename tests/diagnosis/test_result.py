"""One Result renders every interface: its JSON and text are what the API and the command line answered before the
Result existed (goldens written by tests/fixtures/contract/make_goldens.py at 4ee6b2b), and the answer it decides is
the one the page, the Markdown and a stored report show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis import diagnose
from diagnosis.result import Catalog, answer_slugs, json_text, snapshot_markdown
from diagnosis.rules import rules_compile

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "tests/fixtures/contract"
LOGS = json.loads((GOLDENS / "logs.json").read_text())
ROWS = json.loads((GOLDENS / "rules.json").read_text())  # the content's rules when the goldens were written


@pytest.fixture(scope="module")
def rules():
    return rules_compile(ROWS["cases"], ROWS["harmless"])


@pytest.fixture(scope="module")
def catalog():
    slugs = sorted(case["slug"] for case in ROWS["cases"])
    return Catalog(
        titles={s: s.replace("-", " ").title() for s in slugs},
        case_urls={s: f"/kb/{s}/" for s in slugs},
        harmless_url="/kb/harmless/",
        sections={s: [{"id": "fix-1", "title": "First step"}, {"id": "fix-2", "title": "Second step"}] for s in slugs},
    )


def _result(name: str, rules, catalog, **kwargs):
    path = ROOT / name
    result = diagnose([(path.name, path.read_bytes())], rules, catalog, notes=["a note"], **kwargs)
    result.diagnosis.stats["ms"] = 0.0
    return result


@pytest.mark.parametrize("name", LOGS)
def test_the_json_is_byte_for_byte_what_the_contract_answered(name, rules, catalog):
    golden = (GOLDENS / (name.replace("/", "__") + ".json")).read_text()
    assert json_text(_result(name, rules, catalog).to_json()) + "\n" == golden


@pytest.mark.parametrize("name", LOGS)
def test_the_text_is_byte_for_byte_what_the_command_line_printed(name, rules, catalog):
    golden = (GOLDENS / (name.replace("/", "__") + ".txt")).read_text()
    assert _result(name, rules, catalog).to_text() + "\n" == golden


def test_the_best_answer_is_the_first_confident_cause_and_every_rendering_names_it(rules, catalog):
    result = _result("tests/fixtures/logs/fsdp_rank2_behind_torch25.log", rules, catalog, context=True)
    causes = [m for m in result.diagnosis.matches if m.kind == "cause"]
    assert causes and causes[0].confidence >= 0.5
    assert result.best_slug == causes[0].slug
    snapshot = result.to_snapshot()
    assert answer_slugs(snapshot)[0] == result.best_slug
    assert f"[{catalog.titles[result.best_slug]}]" in result.to_markdown()
    assert snapshot["version"] == result.version == 1


def test_a_log_no_case_explains_has_no_best_answer_anywhere(rules, catalog):
    path = ROOT / "tests/fixtures/contract/logs.json"  # JSON, not a log: nothing in it is a failure
    result = diagnose([("notes.txt", path.read_bytes())], rules, catalog)
    assert result.best_slug == ""
    assert "No known case explains this log" in result.to_markdown()
    assert "No known case explains this log with confidence." in result.to_text()


def test_evidence_rows_carry_the_lines_around_them_when_the_text_is_kept(rules, catalog):
    result = _result("tests/fixtures/logs/fsdp_rank2_behind_torch25.log", rules, catalog, context=True)
    row = result.to_snapshot()["matches"][0]["evidence"][0]
    here = [line for line in row["context"] if line["here"]]
    assert len(here) == 1 and here[0]["line"] == row["line"] and here[0]["text"] == row["text"]
    assert len(row["context"]) > 1


def test_the_odd_rank_lines_come_first_in_the_evidence(rules, catalog):
    result = _result("tests/fixtures/logs/fsdp_rank2_behind_torch25.log", rules, catalog, context=True)
    odd = set(result.diagnosis.verdict.behind)
    assert odd, "the fixture's rank 2 is behind"
    evidence = result.to_snapshot()["matches"][0]["evidence"]
    assert evidence[0]["odd"] and evidence[0]["rank"] in odd


def test_without_kept_text_the_evidence_has_no_context_and_the_text_is_not_held(rules, catalog):
    result = _result("tests/fixtures/logs/fsdp_rank2_behind_torch25.log", rules, catalog)
    assert result.texts is None
    assert all(not row["context"] for m in result.to_snapshot()["matches"] for row in m["evidence"])


def test_a_stored_snapshot_without_a_guide_slug_still_names_its_guide():
    stored = {"best_slug": "", "matches": [{"slug": "a", "kind": "cause"}, {"slug": "triage", "kind": "guide"}]}
    assert answer_slugs(stored) == ("", "triage")


def test_markdown_of_a_stored_snapshot_links_the_guide_step_when_nothing_is_confident():
    stored = {
        "best_slug": "",
        "guide_slug": "triage",
        "matches": [
            {"slug": "triage", "kind": "guide", "title": "Triage", "url": "/kb/triage/", "fix_step": "fix-1", "confidence": 0.6}
        ],
    }
    assert "Next step: [Triage](/kb/triage/#fix-1)" in snapshot_markdown(stored)
