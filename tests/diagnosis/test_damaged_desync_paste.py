"""A three-rank desync reads the same however its paste was damaged (issue 33, item 3: a hard-wrapped three-rank desync
showed rank 0 as the odd one out in another collective while the same page's facts said "Ranks disagree (desync):
False"). The log (tests/fixtures/logs/desync_rank0_broadcast_3ranks_torch25.log, PyTorch 2.5 wording and source lines)
has ranks 1 and 2 in ALLREDUCE SeqNum 120 and rank 0 still in BROADCAST 119; a chat wraps it at words, a terminal at its
width, a terminal view without wrapping cuts it at the right edge. The rank groups, the desync fact and the odd rank's
evidence are one reading of it, whatever the damage.
"""

import textwrap
from pathlib import Path

import pytest
from django.conf import settings

from diagnosis.engine import log_diagnose
from diagnosis.evidence import SourceText, evidence_rows
from tools.corpus import content_rules

LOG_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
LOG = (LOG_DIR / "desync_rank0_broadcast_3ranks_torch25.log").read_text()


def chat(width: int):
    return lambda lines: [part for line in lines for part in (textwrap.wrap(line, width) or [""])]


def terminal(width: int):
    return lambda lines: [line[i : i + width] for line in lines for i in range(0, max(len(line), 1), width)]


def cut(width: int):
    return lambda lines: [line[:width] for line in lines]


DAMAGE = {
    "chat-wrapped at 64": chat(64),
    "chat-wrapped at 80": chat(80),
    "chat-wrapped at 100": chat(100),
    "chat-wrapped at 120": chat(120),
    "terminal-wrapped at 80": terminal(80),
    "cut at 200 columns": cut(200),
}


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def damaged(name: str) -> str:
    return "\n".join(DAMAGE[name](LOG.split("\n")))


def groups(diagnosis) -> list[tuple[list[int], str, bool]]:
    return [(g["ranks"], g["where"].split(",")[0], g["odd"]) for g in diagnosis.rank_groups["groups"]]


@pytest.mark.parametrize("name", DAMAGE)
def test_every_rank_is_placed_in_its_collective_however_the_paste_was_damaged(rules, name):
    diagnosis = log_diagnose([("pasted", damaged(name))], rules)
    assert groups(diagnosis) == [([1, 2], "ALLREDUCE #120", False), ([0], "BROADCAST #119", True)]


@pytest.mark.parametrize("name", DAMAGE)
def test_the_rank_in_another_collective_makes_the_ranks_disagree_however_the_paste_was_damaged(rules, name):
    diagnosis = log_diagnose([("pasted", damaged(name))], rules)
    assert diagnosis.facts["ranks_disagree"] is True
    assert diagnosis.verdict.behind == [0]


@pytest.mark.parametrize("name", DAMAGE)
def test_only_the_rank_the_groups_call_odd_has_its_lines_shown_as_the_odd_one_out(rules, name):
    text = damaged(name)
    diagnosis = log_diagnose([("pasted", text)], rules)
    rows = evidence_rows(diagnosis, rules, SourceText.decoded([("pasted", text)]))
    odd_rows = {row["rank"] for shown, _ in rows.values() for row in shown if row["odd"]}
    assert odd_rows == {0}


@pytest.mark.parametrize("name", DAMAGE)
def test_every_line_number_shown_is_the_line_its_text_begins_on(rules, name):
    """A joined line is shown whole: its number is the paste's line where it begins, not where a match inside it does,
    so the rank table, the timeouts and the evidence name one line for one message."""
    text = damaged(name)
    pasted = text.split("\n")
    diagnosis = log_diagnose([("pasted", text)], rules)
    shown = [(e.line, e.text) for m in diagnosis.matches for e in m.evidence]
    if diagnosis.timeouts:  # a cut paste may have lost what the limit was
        shown.append((diagnosis.timeouts["first"]["line"], diagnosis.timeouts["first"]["text"]))
    for line, words in shown:
        assert words.strip().startswith(pasted[line - 1].strip()[:20]), (line, words[:60])
    for row in diagnosis.verdict.table:
        assert f"[Rank {row['rank']}]" in pasted[row["line"] - 1]


@pytest.mark.parametrize("width", [80, 100])
def test_a_newer_release_s_desync_chat_wrapped_at_words_is_still_a_desync(rules, width):
    """PyTorch 2.6 (tests/fixtures/logs/corpus/audit-a): rank 2 in BROADCAST, ranks 0, 1 and 3 in ALLREDUCE at SeqNum
    7713. Wrapped at 80 columns, "Watchdog" ended lines of exactly the widest length and was glued to "caught"."""
    lines = (LOG_DIR / "corpus" / "audit-a" / "ds-watchdog-disagree-torch26.log").read_text().split("\n")
    diagnosis = log_diagnose([("pasted", "\n".join(chat(width)(lines)))], rules)
    assert diagnosis.facts["ranks_disagree"] is True
    assert [(g["ranks"], g["where"].split(",")[0]) for g in diagnosis.rank_groups["groups"]] == [
        ([0, 1, 3], "ALLREDUCE #7713"),
        ([2], "BROADCAST #7713"),
    ]
