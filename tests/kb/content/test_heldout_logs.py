"""The project's own labelled logs (tests/fixtures/logs/**/expected.yaml): the engine, fed straight from
content/, must get each one right.

Each folder's expected.yaml says, per file, the case that must be the first confident match (`primary`), the
cases allowed among the first three (`acceptable`), or, with `acceptable: []`, that no case may match with
confidence; `source` names the program release whose output the log reproduces. No database.
"""

from pathlib import Path

import pytest
from django.conf import settings

from kb.content.cases import case_files_read
from tools.corpus import content_rules, corpus_entries, entry_diagnose, entry_verdict

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

REPO = Path(__file__).resolve().parents[3]
CONTENT = settings.CONTENT_DIR
LOGS = REPO / "tests" / "fixtures" / "logs"
ENTRIES = corpus_entries(LOGS)


@pytest.fixture(scope="module")
def rules():
    return content_rules(CONTENT)


def test_every_labelled_log_exists_once_and_names_real_cases():
    docs, _ = case_files_read(CONTENT)
    slugs = {d.slug for d in docs}
    paths = [e.path for e in ENTRIES]
    assert len(paths) == len(set(paths)), "a log is listed twice"
    for entry in ENTRIES:
        assert entry.path.is_file(), entry.id
        assert set(entry.acceptable) <= slugs, entry.id
        if entry.primary:
            assert entry.primary in entry.acceptable, entry.id
    for folder in {e.path.parent for e in ENTRIES}:
        listed = {e.path.name for e in ENTRIES if e.path.parent == folder}
        assert {p.name for p in folder.glob("*.log")} <= listed, f"{folder}: a .log file has no expected.yaml entry"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_labelled_log_is_diagnosed(entry, rules):
    verdict = entry_verdict(entry, entry_diagnose(entry, rules))
    want = entry.primary or list(entry.acceptable) or "no confident match"
    assert verdict.ok, f"want {want}; got {verdict.top3}"
