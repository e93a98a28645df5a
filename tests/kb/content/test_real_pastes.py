"""Real pastes from public issue threads (tests/fixtures/pastes): what users really paste, short and cut, from
launchers and releases nobody here chose. Ten sets, each with a floor it must keep:
- tuned: 49 pastes whose misses the day's new signatures were written for (top1 0.88, hit3 0.98, negatives 1.00);
- heldout: 40 pastes collected after those changes and labelled before the engine saw them (top1 0.77, hit3 1.00,
  negatives 1.00);
- heldout2: 40 more, collected that night from other threads, labelled before the engine saw them (top1 0.76,
  hit3 0.94, negatives 1.00);
- heldout3: 32 more, chosen for the cases and launchers the others lacked, labelled before the engine saw them
  (top1 0.38, hit3 0.65, negatives 1.00);
- heldout4: 31 more from other threads, labelled before the engine saw them (top1 0.64, hit3 0.92, negatives 1.00);
- heldout5: 27 more, for Slurm, Ray, Kubernetes and Windows shapes, labelled before the engine saw them (top1 0.65,
  hit3 0.80, negatives 1.00).
- heldout6 and heldout7 (2026-11-28): 56 and 60 more from threads nothing in the repository cited, labelled and their
  checksums recorded (12:13:51 and 12:19:19 UTC) before the engine first ran on them, at one engine state (after the
  Result, the readers and the catalogue reader; before the Gloo work and the new cases). First scores (the shared
  scorer): heldout6 top1 0.46 (16/35), hit3 0.64 (25/39), negatives 0.88 (15/17), a confident answer for 0.49 of the
  failures, 0.81 of those right; heldout7 top1 0.37 (11/30), hit3 0.56 (23/41), negatives 1.00 (19/19), answered 0.32,
  right 1.00. heldout6's misses were then read as the programs' wordings (commits after 12:25 UTC); heldout7's were
  not looked at. The floors below are the scores after those changes and the three new cases, whose failure modes
  the labels had called uncovered (three heldout6 negatives are JIT build failures the new case now answers).
- heldout8 (56, labels' sha256 721ae5b2… recorded 14:01:53 UTC) and heldout9 (54, 6070e384… at 14:51:39 UTC),
  2026-11-28, from threads nothing in the repository cited (nor the earlier sets'), labelled before the engine first
  ran on them. heldout8's first score (14:37 UTC): top1 0.29 (12/42), hit3 0.47 (20/43), negatives 1.00 (13/13),
  answered 0.35, right 0.80 (12/15). Its misses were then read as the programs' wordings, from their sources
  (commits 14:45-15:08 UTC); heldout9, collected meanwhile and not looked at, then scored first: top1 0.59 (19/32),
  hit3 0.83 (30/36), negatives 1.00 (18/18), answered 0.64 (23/36), right 1.00 (23/23). heldout8 after: 0.67,
  0.91, 1.00. The floors of heldout5 and heldout7 rose with the same work.
A change that loses ground on logs like these fails here. No database.
"""

from pathlib import Path

import pytest
from django.conf import settings

from kb.content.cases import case_files_read
from tools.corpus import content_rules, corpus_entries, corpus_score, entry_diagnose, entry_verdict

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

PASTES = Path(__file__).resolve().parents[2] / "fixtures" / "pastes"
# set: (top1, hit3, neg) it must keep
FLOORS = {
    "tuned": (0.88, 0.97, 1.0),
    "heldout": (0.76, 1.0, 1.0),
    "heldout2": (0.75, 0.93, 1.0),
    "heldout3": (0.38, 0.65, 1.0),
    "heldout4": (0.64, 0.92, 1.0),
    "heldout5": (0.75, 0.95, 1.0),
    "heldout6": (0.54, 0.74, 0.7),
    "heldout7": (0.46, 0.61, 0.94),
    "heldout8": (0.66, 0.9, 1.0),
    "heldout9": (0.59, 0.83, 1.0),
}


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


@pytest.fixture(scope="module")
def scores(rules):
    found = {}
    for name in FLOORS:
        verdicts = [entry_verdict(entry, entry_diagnose(entry, rules)) for entry in corpus_entries(PASTES / name)]
        found[name] = corpus_score(verdicts)["all"], [v for v in verdicts if not v.ok]
    return found


@pytest.mark.parametrize("name", FLOORS)
def test_every_paste_is_labelled_with_real_cases_and_a_thread(name):
    slugs = {d.slug for d in case_files_read(settings.CONTENT_DIR)[0]}
    entries = corpus_entries(PASTES / name)
    assert {p.name for p in (PASTES / name).glob("*.log")} == {e.path.name for e in entries}
    for entry in entries:
        assert set(entry.acceptable) <= slugs, entry.id
        assert entry.primary is None or entry.primary in entry.acceptable, entry.id
        assert entry.source.startswith("https://github.com/"), entry.id


def test_no_thread_is_in_two_sets():
    threads = {name: {e.source.split()[0] for e in corpus_entries(PASTES / name)} for name in FLOORS}
    shared = {(a, b): threads[a] & threads[b] for a in FLOORS for b in FLOORS if a < b}
    assert not any(shared.values()), shared


@pytest.mark.parametrize("name", FLOORS)
def test_no_paste_that_no_case_explains_gets_a_confident_match(scores, name):
    shares, misses = scores[name]
    assert shares["neg"] >= FLOORS[name][2], [(m.entry.id, m.top3) for m in misses if not m.entry.acceptable]


@pytest.mark.parametrize("name", FLOORS)
def test_the_first_confident_match_is_the_threads_cause_as_often_as_it_was(scores, name):
    shares, misses = scores[name]
    assert shares["top1"] >= FLOORS[name][0], [(m.entry.id, m.entry.primary, m.top3) for m in misses]


@pytest.mark.parametrize("name", FLOORS)
def test_the_threads_cause_is_among_the_first_three_as_often_as_it_was(scores, name):
    shares, misses = scores[name]
    assert shares["hit3"] >= FLOORS[name][1], [(m.entry.id, m.entry.acceptable, m.top3) for m in misses]
