"""Text search: log identifiers survive tokenising, and pasted text is data, never query syntax."""

import re

import pytest
from django.conf import settings
from django.core.cache import caches
from whoosh import index as whoosh_index

from kb.content.publish import served_build
from kb.models import Case, ContentState
from kb.search.analysis import query_terms
from kb.search.index import search
from tests.kb.html_checks import main_links

pytestmark = pytest.mark.django_db


def test_identifiers_are_kept_whole_and_split_into_parts():
    terms = query_terms("OpType=_ALLGATHER_BASE NCCL_SOCKET_IFNAME ProcessGroupNCCL.cpp")
    assert {"_allgather_base", "allgather", "nccl_socket_ifname", "ifname", "processgroupnccl.cpp", "processgroupnccl"} <= set(
        terms
    )


def test_query_syntax_in_pasted_text_is_treated_as_words():
    terms = query_terms('"unbalanced quote AND (bracket OR NOT) field:value ~fuzzy^3 *')
    assert {"unbalanced", "quote", "bracket", "field", "value", "fuzzy"} <= set(terms)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("ALLGATHER_BASE watchdog timeout FSDP LoRA", "llama3-fsdp-allgather-timeout"),
        ("compiling and loading fused kernels", "megatron-fused-kernel-compile-hang"),
        ("creating trainer BROADCAST autotrain", "autotrain-creating-trainer-broadcast-timeout"),
        ("tp-comm-overlap userbuffers mpirun", "transformer-engine-mpi-tp-overlap-hang"),
    ],
)
def test_search_ranks_the_matching_case_first(query, expected):
    assert search(query, index_dir=settings.SEARCH_INDEX_DIR)[0].slug == expected


@pytest.mark.parametrize("query", ['"', "AND OR NOT", "field:", "((((", "*?~^", "\x00\x01"])
def test_hostile_query_text_never_raises(query):
    assert isinstance(search(query, index_dir=settings.SEARCH_INDEX_DIR), list)


def test_search_page_is_a_stable_link(client):
    response = client.get("/search", {"q": "NCCL_SOCKET_IFNAME docker0"})
    assert response.status_code == 200
    assert b"/kb/nccl-socket-ifname-wrong-interface/" in response.content


def test_empty_search_says_something_useful(client):
    page = client.get("/search?q=").content.decode()
    assert '<label for="log">' in page


def test_api_search_returns_json_results():
    from django.test import Client

    data = Client().get("/api/search", {"q": "fused kernels"}).json()
    assert data["results"][0]["slug"] == "megatron-fused-kernel-compile-hang"


# --- Issue 12: search that shows where ----------------------------------------------------------------------

from kb.forms import query_is_keywords  # noqa: E402
from kb.search.index import search_results  # noqa: E402


@pytest.mark.parametrize(
    "query, keywords",
    [
        ("NCCL_SOCKET_IFNAME", True),
        ("flight recorder", True),
        ("py-spy dump", True),
        ("ALLGATHER_BASE watchdog", True),
        ("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout", False),
        ("WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000)", False),
        ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275", False),
        ("node1:123:456 [0] NCCL WARN Duplicate GPU detected", False),
        ("line one\nline two", False),
        ("ProcessGroupNCCL.cpp:1234", True),  # issue 33: a source location typed alone was diagnosed, the box emptied
        ("watchdog ProcessGroupNCCL.cpp:1234", True),
        ("train.py:12: UserWarning: the barrier", False),
    ],
)
def test_a_one_line_query_without_log_shape_is_a_keyword_search(query, keywords):
    assert query_is_keywords(query) is keywords


def test_a_source_location_search_is_a_text_search_that_keeps_the_query_in_the_box(client):
    """Issue 33: `file.cpp:123` in the header box ran a diagnosis and came back with the box empty."""
    posted = client.post("/search", {"q": "ProcessGroupNCCL.cpp:1234"})
    assert posted.status_code == 303 and posted["Location"] == "/search?q=ProcessGroupNCCL.cpp%3A1234"
    page = client.get(posted["Location"]).content.decode()
    assert 'id="answer"' not in page and 'value="ProcessGroupNCCL.cpp:1234"' in page
    assert re.search(r"\d+ pages? mentions? <q>ProcessGroupNCCL.cpp", page), "the hits say which words they matched"


def test_keyword_search_has_no_diagnosis_block(client):
    page = client.get("/search", {"q": "NCCL_SOCKET_IFNAME"}).content.decode()
    assert 'id="answer"' not in page and "No known case matches" not in page
    assert re.search(r"\d+ pages? mentions? <q>NCCL_SOCKET_IFNAME</q>", page)


def test_a_hit_links_to_the_section_with_its_passage_marked():
    found = search_results("NCCL_SOCKET_IFNAME docker0", index_dir=settings.SEARCH_INDEX_DIR)
    best = found.hits[0]
    assert best.slug == "nccl-socket-ifname-wrong-interface" and best.relevance == "strong"
    assert best.section_id.startswith("fix-") and best.target_url.endswith(f"#{best.section_id}")
    assert "hl=nccl_socket_ifname" in best.target_url
    assert "<mark>NCCL_SOCKET_IFNAME</mark>" in best.passage_html
    assert found.total >= 3 and all(h.relevance != "weak" for h in found.hits[: found.total])


def test_passages_are_escaped_before_they_are_marked():
    found = search_results("py-spy dump", index_dir=settings.SEARCH_INDEX_DIR)
    passage = next(h.passage_html for h in found.hits if "&quot;" in h.passage_html or "&#x27;" in h.passage_html)
    assert "<mark>" in passage
    assert not re.search(r"<(?!/?mark>)", passage), "only <mark> tags; everything else escaped"


def test_a_part_of_a_word_never_marks_another_word():
    """`py-spy` searches its parts too; a page's `train.py` must not be marked for it."""
    for hit in search_results("py-spy dump", index_dir=settings.SEARCH_INDEX_DIR).hits:
        assert "<mark>py</mark>" not in hit.passage_html.lower()


def test_results_rank_whole_words_before_loose_matches():
    hits = search_results("NCCL_SOCKET_IFNAME docker0", index_dir=settings.SEARCH_INDEX_DIR, limit=20).hits
    tiers = [{"strong": 2, "partial": 1, "weak": 0}[h.relevance] for h in hits]
    assert tiers == sorted(tiers, reverse=True) and tiers[-1] < 2


def test_no_match_offers_did_you_mean_and_browsing(client):
    assert search_results("watchdgo", index_dir=settings.SEARCH_INDEX_DIR).suggestion == "watchdog"
    assert search_results("infinband_hca", index_dir=settings.SEARCH_INDEX_DIR).suggestion == "infiniband hca"
    page = client.get("/search", {"q": "watchdgo"}).content.decode()
    assert 'href="/search?q=watchdog"' in page and "Did you mean" in page
    assert ("/kb/", "All cases") in main_links(page) and "?tag=framework:" in page


def test_search_as_you_type_gets_the_hits_fragment(client):
    response = client.get("/search", {"q": "flight recorder"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live-hits")
    page = response.content.decode()
    assert "<html" not in page and 'class="hit' in page and "HX-Request" in response["Vary"]
    assert client.get("/search", {"q": ""}, HTTP_HX_REQUEST="true").content.strip() == b""


def test_api_search_says_where():
    from django.test import Client

    data = Client().get("/api/search", {"q": "NCCL_SOCKET_IFNAME"}).json()
    first = data["results"][0]
    assert first["section"].startswith(("fix-", "cause-")) and first["section_url"].endswith("#" + first["section"])
    assert data["total"] >= 1 and first["relevance"] == "strong"


def test_a_keyword_search_page_rendered_anew_runs_at_most_two_statements(client, django_assert_max_num_queries):
    """Once for the page's key and the index it searches, once more before the page is kept (kb/page_cache.py)."""
    client.get("/search?q=watchdog+timeout")
    caches["pages"].clear()
    with django_assert_max_num_queries(2):
        page = client.get("/search?q=watchdog+timeout").content.decode()
    assert 'href="/kb/nccl-watchdog-timeout-triage/' in page


def test_the_index_holds_each_case_section_as_the_case_page_lists_it():
    """The indexer takes the sections the renderer read from the Markdown tree, not its own parse of the HTML."""
    build = served_build(settings.SEARCH_INDEX_DIR, ContentState.loaded_revision())
    with whoosh_index.open_dir(str(build)).searcher() as searcher:
        for case in Case.objects.all():
            passages = searcher.document(slug=case.slug)["passages"]
            assert [{"id": p["id"], "title": p["title"], "level": p["level"]} for p in passages] == case.sections
            assert not any("Link to this section" in p["title"] + p["text"] for p in passages)
