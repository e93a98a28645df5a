"""Held-out logs: the diagnosis engine, fed straight from content/cases, must get each one right.

The logs in tests/fixtures/logs/heldout/ are captures in real formats that differ from the eval-dev set (other
PyTorch and NCCL releases, launchers, prefixes, CRLF, colour). expected.yaml says, per file, the case that must be
the first confident match (`primary`), the cases allowed among the first three (`acceptable`), or, with
`acceptable: []`, that no case may match with confidence. No database: the signatures are compiled from the files.
"""
from pathlib import Path

import pytest
import yaml

from kb.content.cases import case_files_read
from kb.content.harmless import harmless_files_read
from kb.diagnosis.engine import CONFIDENT, log_diagnose
from kb.diagnosis.rules import rules_compile

REPO = Path(__file__).resolve().parents[2]
CONTENT = REPO / "content"
HELDOUT = REPO / "tests" / "fixtures" / "logs" / "heldout"
EXPECTED = yaml.safe_load((HELDOUT / "expected.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def signatures():
    docs, errors = case_files_read(CONTENT)
    assert not errors, [str(e) for e in errors]
    return rules_compile([{**d.meta, "slug": d.slug} for d in docs], [h.meta for h in harmless_files_read(CONTENT)[0]])


@pytest.fixture(scope="module")
def case_slugs():
    docs, _ = case_files_read(CONTENT)
    return {d.slug for d in docs}


def test_expected_yaml_is_well_formed(case_slugs):
    files = [entry["file"] for entry in EXPECTED]
    assert len(files) == len(set(files)), "a log is listed twice"
    on_disk = {p.name for p in HELDOUT.glob("*.log")}
    assert set(files) == on_disk, "every held-out log needs exactly one expected.yaml entry"
    for entry in EXPECTED:
        assert set(entry) >= {"file", "primary", "acceptable", "note"}, entry["file"]
        assert all(slug in case_slugs for slug in entry["acceptable"]), entry["file"]
        if entry["primary"]:
            assert entry["primary"] in entry["acceptable"], entry["file"]


@pytest.mark.parametrize("entry", EXPECTED, ids=[e["file"] for e in EXPECTED])
def test_heldout_log_is_diagnosed(entry, signatures):
    data = (HELDOUT / entry["file"]).read_bytes()
    diagnosis = log_diagnose([(entry["file"], data)], signatures, top=3)
    ranked = [(m.slug, m.confidence, m.score) for m in diagnosis.matches]
    confident = [m.slug for m in diagnosis.matches if m.confidence >= CONFIDENT]
    if entry["primary"]:
        assert confident and confident[0] == entry["primary"], f"got {ranked}"
    if entry["acceptable"]:
        assert any(m.slug in entry["acceptable"] for m in diagnosis.matches[:3]), f"got {ranked}"
    else:
        assert not confident, f"negative log matched with confidence: {ranked}"
