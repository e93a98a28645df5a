"""Sharing a report into a wiki (issue 33 item 9): Markdown with absolute links, evidence lines that link to their
place in the stored log (`#L123`), and a search over that log that works as a plain GET form."""

from __future__ import annotations

import re

import pytest

from kb.reports.log_view import PAGE_LINES, log_anchors, log_found, log_lines, log_marked
from tests.kb.web.test_reports import share
from tests.kb.web.test_results_page import sixty_four_rank_log

LOG = sixty_four_rank_log()


def test_a_paste_is_numbered_from_one_with_plain_line_anchors():
    lines = log_lines("first\nsecond\nthird\n", sources=[])
    assert [(line.number, line.anchor, line.text) for line in lines] == [
        (1, "L1", "first"),
        (2, "L2", "second"),
        (3, "L3", "third"),
    ]


def test_each_uploaded_file_restarts_its_numbering_under_an_anchor_of_its_own():
    log = "pasted line\n==> rank0.log <==\na\nb\n==> rank1.log <==\nc\n"
    anchors = log_anchors(log_lines(log, sources=["rank0.log", "rank1.log"]))
    assert anchors[("", 1)].anchor == "L1"
    assert anchors[("rank0.log", 2)].anchor == "F1-L2" and anchors[("rank0.log", 2)].text == "b"
    assert anchors[("rank1.log", 1)].anchor == "F2-L1" and anchors[("rank1.log", 1)].text == "c"


def test_a_tail_header_inside_a_paste_does_not_restart_its_numbering():
    lines = log_lines("one\n==> other.log <==\nthree\n", sources=[])
    assert [line.anchor for line in lines] == ["L1", "L2", "L3"]


def test_a_search_finds_lines_case_insensitively_and_marks_the_words():
    found, total = log_found(log_lines("NCCL WARN a\nnothing\nnccl warn b\n", []), "nccl warn")
    assert total == 2 and [line.number for line in found] == [1, 3]
    assert log_marked("x NCCL WARN y", "nccl warn") == [("x ", False), ("NCCL WARN", True), (" y", False)]


@pytest.mark.django_db
def test_markdown_links_are_absolute_on_the_page_and_in_the_md_file(client):
    report, url = share(client, LOG)
    page = client.get(url).content.decode()
    markdown = re.search(r'<textarea id="report-markdown"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    md_file = client.get(url + ".md").content.decode()
    for text in (markdown, md_file):
        assert "](http://testserver/kb/" in text and "**Do this first:** http://testserver/kb/" in text
        assert "](/kb/" not in text and ": /kb/" not in text


@pytest.mark.django_db
def test_evidence_lines_of_a_report_with_its_log_link_to_their_line_in_the_log_view(client):
    report, url = share(client, LOG, store_log="on")
    page = client.get(url).content.decode()
    links = re.findall(r'<a href="(/d/[^"]+/log#L(\d+))">Line (\d+) in the whole log</a>', page)
    assert links and all(anchor == number for _, anchor, number in links)
    href, number, _ = links[0]
    log_page = client.get(href.split("#")[0]).content.decode()
    expected = LOG.split("\n")[int(number) - 1]
    line = re.search(
        rf'<li id="L{number}"><a class="lineno" href="#L{number}"[^>]*>{number}</a><code>(.*?)</code></li>', log_page
    )
    assert line and line.group(1) == expected.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        "'", "&#x27;"
    )


@pytest.mark.django_db
def test_a_report_shared_without_its_log_links_no_line(client):
    report, url = share(client, LOG)
    assert "in the whole log" not in client.get(url).content.decode()
    assert client.get(f"{url}/log").status_code == 404


@pytest.mark.django_db
def test_the_log_search_is_a_get_form_that_keeps_the_query_and_links_each_line_to_its_place(client):
    report, url = share(client, LOG, store_log="on")
    page = client.get(f"{url}/log", {"q": "rank 37"}).content.decode()
    assert 'method="get"' in page and 'value="rank 37"' in page
    found = re.findall(r'<a class="lineno" href="(/d/[^"]+/log#L\d+)"', page)
    expected = [n for n, text in enumerate(LOG.split("\n"), start=1) if "rank 37" in text.lower()]
    assert len(found) == len(expected) >= 1 and found[0].endswith(f"#L{expected[0]}")
    assert "<mark>" in page


@pytest.mark.django_db
def test_a_long_log_is_paged_and_a_line_links_to_its_page(client):
    long_log = "\n".join(f"filler line {n}" for n in range(1, PAGE_LINES + 50)) + "\n" + LOG
    report, url = share(client, long_log, store_log="on")
    page = client.get(url).content.decode()
    assert re.search(r'href="/d/[^"]+/log\?page=2#L\d+"', page)
    second = client.get(f"{url}/log", {"page": "2"}).content.decode()
    assert f'id="L{PAGE_LINES + 1}"' in second and 'id="L1"' not in second
