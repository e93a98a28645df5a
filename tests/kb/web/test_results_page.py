"""The result, answer first (issue 10): the best case before everything else, evidence one row per line with
its reasons in words, the odd rank out first, ranks grouped, guides as the next step, inputs never merged."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.kb.html_checks import assert_valid_html

pytestmark = pytest.mark.django_db

WATCHDOG = (
    "[rank{r}]:[E1104 02:53:{s:02d}.482140337 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=65667328, NumelOut=262669312, "
    "Timeout(ms)=600000) ran for 6000{ran:02d} milliseconds before timing out."
)
LAST = (
    "[rank{r}]:[E1104 02:53:{s:02d}.482498121 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
    "Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, "
    "last completed NCCL work: {done}."
)


def sixty_four_rank_log(behind: int = 37, silent: int = 0) -> str:
    """A torchrun job of 64 ranks (PyTorch 2.5 watchdog wording): every rank times out in the same
    _ALLGATHER_BASE except one that is behind in an earlier collective, and one that prints nothing."""
    lines = [
        "+ torchrun --nnodes 8 --nproc_per_node 8 train_fsdp.py --model /home/alice/models/llama-3-8b",
        "W1104 02:11:07.620000 1883 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable "
        "for each process to be 1 in default",
    ]
    for r in range(64):
        lines.append(
            f"node-{r // 8}:{4100 + r % 8}:{4100 + r % 8} [{r % 8}] NCCL INFO comm 0x55d0c0a{r:02d}1e0 rank {r} "
            f"nranks 64 cudaDev {r % 8} nvmlDev {r % 8} busId {r % 8 + 1}000 commId 0x6c2b - Init COMPLETE"
        )
    lines.append("Training Epoch: 1/1, step 811/1200 completed (loss: 1.28):  68%|######8   | 811/1200 [41:07<19:43,  3.04s/it]")
    for r in range(64):
        if r == silent:
            continue
        if r == behind:
            lines.append(WATCHDOG.format(r=r, s=17, seq=9738, op="_REDUCE_SCATTER_BASE", ran=r % 90))
            lines.append(LAST.format(r=r, s=17, seq=9738, done=9737))
        else:
            lines.append(WATCHDOG.format(r=r, s=16, seq=9741, op="_ALLGATHER_BASE", ran=r % 90))
            lines.append(LAST.format(r=r, s=16, seq=9741, done=9740))
    return "\n".join(lines) + "\n"


def diagnose_page(client, text: str) -> str:
    response = client.post("/diagnose", {"log": text})
    assert response.status_code == 200
    assert_valid_html(response.content)
    return response.content.decode()


def test_the_answer_comes_before_the_evidence_and_the_ranks(client):
    page = diagnose_page(client, sixty_four_rank_log())
    answer, evidence, ranks = page.find('id="answer"'), page.find('id="matches-h"'), page.find('id="where-h"')
    assert -1 < answer < evidence < ranks
    head = page[answer:evidence]
    assert "Most likely cause" in head and "Do this first" in head
    assert re.search(r'<a class="button" id="do-first" href="/kb/[a-z0-9-]+/#fix[-0-9]*"', head)
    assert "autofocus" in page[answer - 200 : answer + 200]


def test_ranks_are_grouped_with_the_odd_ones_named(client):
    page = diagnose_page(client, sixty_four_rank_log(behind=37, silent=0))
    groups = page[page.find('<ol class="where-groups">') :]
    groups = groups[: groups.find("</ol>")].split('<li class="where-group')[1:]
    assert len(groups) <= 4, "agreeing ranks are collapsed into one group"
    assert '<span class="where-count">62 ranks</span>' in groups[0], "the largest group first"
    (behind,) = [g for g in groups if "Rank 37</p>" in g]
    assert ' odd"' in behind[:20] and '<span class="badge">behind</span>' in behind
    (silent,) = [g for g in groups if "Rank 0</p>" in g]
    assert "no timeout line" in silent and ' odd"' in silent[:20]


def test_the_ranks_are_said_once(client):
    """One view of where the ranks are: the verdict's sentence and table sit inside it, not in a second list."""
    page = diagnose_page(client, sixty_four_rank_log(behind=37, silent=0))
    assert page.count("had made the least progress") == 1
    assert page.count('class="where-ranks"') == 1 and 'class="rank-table"' in page[page.find('class="where-ranks"') :]


def test_evidence_is_one_row_per_line_with_reasons_in_words_and_the_odd_rank_first(client):
    page = diagnose_page(client, sixty_four_rank_log(behind=37))
    first_match = page[page.find('class="evidence"') :]
    first_match = first_match[: first_match.find("</ol>\n      </details>")]
    rows = re.findall(r'<span class="lineno">(\d+)</span>', first_match)
    summary_rows = re.findall(r'<summary><span class="lineno">(\d+)</span>', first_match)
    assert len(summary_rows) == len(set(summary_rows)), "each log line is one row"
    assert "rank 37: the odd one out" in first_match.split('class="evidence-row')[1]
    assert 'class="reasons"' in first_match and "watchdog" in first_match.lower()
    assert not re.search(r'class="reasons">[a-z0-9-]+</p>', first_match), "reasons are descriptions, not ids"
    assert '<ol class="context">' in first_match and rows


def test_a_long_line_is_cut_around_the_highlight():
    from kb.result_view import _cut

    text = "x" * 400 + "Watchdog caught collective operation timeout" + "y" * 400
    start = 400
    html = str(_cut(text, start, start + 44))
    assert html.startswith("…") and html.endswith("…") and "<mark>Watchdog caught" in html and len(html) < 320


def test_a_guide_is_the_next_step_not_a_cause(client):
    line = (
        "[rank0]:[E1104 02:53:16.482140337 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9741, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600074 "
        "milliseconds before timing out."
    )
    page = diagnose_page(client, line)
    from kb.models import Case

    guides = set(Case.objects.filter(guide=True).values_list("slug", flat=True))
    listed = re.findall(r'<li class="match[^"]*">\s*<h3><a href="/kb/([a-z0-9-]+)/#signatures"', page)
    assert not guides & set(listed), "a guide is never listed as a case that explains it"
    if "Most likely cause" not in page:
        assert "Next step" in page


def test_pages_that_mention_these_words_only_when_nothing_matched(client):
    page = client.get("/search", {"q": WATCHDOG.format(r=3, s=1, seq=2, op="_ALLGATHER_BASE", ran=12)}).content.decode()
    assert "Pages that mention these words" not in page
    words = client.get("/search", {"q": "socket interface"}).content.decode()
    assert "Most likely cause" not in words


def test_a_paste_and_files_together_are_refused_not_merged(client):
    upload = SimpleUploadedFile("rank1.log", sixty_four_rank_log().encode())
    response = client.post("/diagnose", {"log": "some pasted text\nmore", "file": upload})
    assert response.status_code == 400
    assert b"never merged" in response.content


def test_a_multi_line_search_link_is_a_diagnosis(client):
    text = sixty_four_rank_log()[:3000]
    page = client.get("/search", {"q": text[:3900]}).content.decode()
    assert 'id="answer"' in page


def test_nothing_is_stored_for_a_default_paste(client):
    from kb.models import LineTemplate, Report

    diagnose_page(client, sixty_four_rank_log())
    assert Report.objects.count() == 0
    assert LineTemplate.objects.count() == 0, "a matched paste leaves no templates"


def test_an_unmatched_paste_leaves_only_masked_templates(client):
    from kb.models import LineTemplate

    log = (
        "2026-11-02 10:00:01 worker-17.corp.example.com ERROR frobnicator failed on /home/bob/run/cfg.yaml after 3 retries\n"
        "2026-11-02 10:00:09 worker-18.corp.example.com ERROR frobnicator failed on /home/carol/run/cfg.yaml after 5 retries\n"
        "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789AB error\n"
    )
    diagnose_page(client, log)
    diagnose_page(client, log.replace("frobnicator failed", "frobnicator  failed"))
    rows = list(LineTemplate.objects.values_list("template", "count"))
    assert rows
    stored = " ".join(t for t, _ in rows)
    for private in ("worker-17", "bob", "carol", "ghp_abc", "10:00:01", "cfg.yaml"):
        assert private not in stored
    assert any(count == 2 for _, count in rows), rows


def test_why_this_confidence_lists_only_the_signals_that_count():
    """A signal of weight 0 adds nothing to the sentence, not even a separator."""
    from kb.result_view import snapshot_view

    snapshot = {
        "matches": [
            {
                "slug": "x",
                "title": "X",
                "kind": "cause",
                "confidence": 0.6,
                "score": 5.0,
                "url": "/kb/x/",
                "fix_step": None,
                "signals": [
                    {"id": "a", "description": "First.", "weight": 5.0},
                    {"id": "b", "description": "Counted nothing.", "weight": 0},
                ],
            }
        ]
    }
    assert [s["id"] for s in snapshot_view(snapshot)["matches"][0]["weighted"]] == ["a"]


def test_when_nothing_is_confident_the_closest_pages_are_inside_the_answer_box(client):
    page = diagnose_page(client, "our training job stops while every rank saves the checkpoint to the shared filesystem\n")
    box = page[page.index('id="answer"') : page.index("</section>", page.index('id="answer"'))]
    assert "No known case" in box and "Possibly related" in box
    assert re.search(r'<ul class="possibly-related">\s*<li><a href="/kb/[a-z0-9-]+/">', box)
    assert "Pages that mention these words" not in page  # not again, 700 px further down


def test_a_confident_match_without_evidence_lines_says_what_its_confidence_rests_on():
    from django.template.loader import render_to_string

    from kb.result_view import snapshot_view

    match = {
        "slug": "collective-mismatch-desync",
        "title": "Ranks desynchronised",
        "summary": "",
        "kind": "cause",
        "confidence": 0.5,
        "score": 6.0,
        "url": "/kb/collective-mismatch-desync/",
        "fix_step": "fix-1",
        "fix_title": "Find the first collective where the ranks differ",
        "steps": [],
        "signals": [{"id": "disagree", "description": "ranks were in different collectives", "weight": 6, "kind": "condition"}],
        "evidence": [],
        "evidence_total": 0,
    }
    html = render_to_string("kb/_results.html", {"result": snapshot_view({"best_slug": match["slug"], "matches": [match]})})
    assert "Evidence from your log (0 lines)" not in html
    assert "No single line of your log is this case's evidence" in html


def test_a_log_with_a_rank_s_own_exception_never_says_no_failure_was_found(client):
    """A KeyError on rank 1 and torchrun's harmless OMP_NUM_THREADS notice: the page names the failure, it does not
    call every suspicious line harmless (seen in Chromium: 'No failure found in this log' above rank 1's traceback)."""
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "fixtures/logs/generated/keyerror-dataloader-rank1-peer-closed-torch2141.log"
    page = diagnose_page(client, log.read_text())
    assert "No failure found in this log" not in page
    assert "raised an exception (KeyError" in page


def test_a_harmless_message_s_page_is_never_offered_as_possibly_related(client):
    """A rank's KeyError with torchrun's OMP_NUM_THREADS notice above it: the notice is listed apart as harmless,
    never as a possible cause in the answer box (seen in Chromium: its page was the first 'possibly related')."""
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "fixtures/logs/generated/keyerror-dataloader-rank1-peer-closed-torch2141.log"
    page = diagnose_page(client, log.read_text())
    related = page[page.index("Possibly related") : page.index("</ul>", page.index("Possibly related"))]
    assert "/kb/harmless/" not in related
