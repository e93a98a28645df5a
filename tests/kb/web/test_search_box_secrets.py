"""Log text pasted into a search box never reaches a URL: the boxes POST (with CSRF); words are redirected to the
stable GET URL a wiki links to; and `make serve`'s access logs leave query strings and referers out (tests/deploy/test_serve_stack.py)."""

import html5lib
import pytest
from django.test import Client

SECRET = "hf_SearchBoxTokenAbcdefghijklmnop0123"
WATCHDOG = (
    "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
    "SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds "
    f"before timing out. HF_TOKEN={SECRET}"
)


def forms_posting_to_search(page: str) -> list:
    document = html5lib.parse(page, namespaceHTMLElements=False)
    return [f for f in document.iter("form") if f.get("action") == "/search"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/kb/", "/kb/llama3-fsdp-allgather-timeout/"])
def test_every_search_box_posts_with_a_csrf_token(client, path):
    forms = forms_posting_to_search(client.get(path).content.decode())
    assert forms, "no search box on the page"
    for form in forms:
        assert form.get("method") == "post"
        assert form.find(".//input[@name='csrfmiddlewaretoken']") is not None
        for element in form.iter():
            assert element.get("hx-get") is None, "search as you type must not put the box's text in a URL"


@pytest.mark.django_db
def test_a_search_box_post_without_its_csrf_token_is_refused():
    assert Client(enforce_csrf_checks=True).post("/search", {"q": WATCHDOG}).status_code == 403


@pytest.mark.django_db
def test_words_typed_in_a_search_box_land_on_the_stable_search_url(client):
    response = client.post("/search", {"q": " NCCL_SOCKET_IFNAME docker0 "})
    assert response.status_code == 303
    assert response["Location"] == "/search?q=NCCL_SOCKET_IFNAME+docker0"
    assert b"mention" in client.get(response["Location"]).content


@pytest.mark.django_db
def test_an_empty_search_box_goes_to_the_search_page(client):
    response = client.post("/search", {"q": "  "})
    assert response.status_code == 303 and response["Location"] == "/search"


@pytest.mark.django_db
def test_a_log_line_in_a_search_box_is_diagnosed_in_place_and_never_put_in_a_link(client):
    response = client.post("/search", {"q": WATCHDOG})
    page = response.content.decode()
    assert response.status_code == 200 and "Location" not in response
    assert "Diagnosis of your log" in page and "Watchdog caught" in page
    document = html5lib.parse(page, namespaceHTMLElements=False)
    for element in document.iter():
        for attribute in ("href", "action", "hx-get", "hx-post", "value"):
            assert SECRET not in (element.get(attribute) or ""), (element.tag, attribute)
    assert SECRET not in document.find(".//title").text


@pytest.mark.django_db
def test_search_as_you_type_answers_words_with_hits_in_place(client):
    response = client.post("/search", {"q": "flight recorder"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live-hits")
    assert response.status_code == 200 and b'class="hit' in response.content
    assert b"<html" not in response.content
    assert client.post("/search", {"q": ""}, HTTP_HX_REQUEST="true").content.strip() == b""


@pytest.mark.django_db
def test_search_as_you_type_diagnoses_a_pasted_log_line_in_place(client):
    response = client.post("/search", {"q": WATCHDOG}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live-hits")
    assert response.status_code == 200 and b"Watchdog caught" in response.content and b"<html" not in response.content


@pytest.mark.django_db
def test_a_pasted_log_over_the_limit_in_a_search_box_gets_the_413_page(client, settings):
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/search", {"q": WATCHDOG + "\n" + "x" * 2000})
    assert (
        response.status_code == 413
        and b"1000 bytes" in response.content
        and b"Traceback (most recent call last)" not in response.content
    )
