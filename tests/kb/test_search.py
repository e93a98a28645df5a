"""Text search: log identifiers survive tokenising, and pasted text is data, never query syntax."""
import pytest
from django.conf import settings

from kb.search.analysis import query_terms
from kb.search.index import search

pytestmark = pytest.mark.django_db


def test_identifiers_are_kept_whole_and_split_into_parts():
    terms = query_terms("OpType=_ALLGATHER_BASE NCCL_SOCKET_IFNAME ProcessGroupNCCL.cpp")
    assert {"_allgather_base", "allgather", "nccl_socket_ifname", "ifname", "processgroupnccl.cpp", "processgroupnccl"} <= set(terms)


def test_query_syntax_in_pasted_text_is_treated_as_words():
    terms = query_terms('"unbalanced quote AND (bracket OR NOT) field:value ~fuzzy^3 *')
    assert {"unbalanced", "quote", "bracket", "field", "value", "fuzzy"} <= set(terms)


@pytest.mark.parametrize("query, expected", [
    ("ALLGATHER_BASE watchdog timeout FSDP LoRA", "llama3-fsdp-allgather-timeout"),
    ("compiling and loading fused kernels", "megatron-fused-kernel-compile-hang"),
    ("creating trainer BROADCAST autotrain", "autotrain-creating-trainer-broadcast-timeout"),
    ("tp-comm-overlap userbuffers mpirun", "transformer-engine-mpi-tp-overlap-hang"),
])
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
