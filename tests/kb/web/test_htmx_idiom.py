"""One htmx idiom: a view that answers htmx with a fragment and everyone else with a page says so to caches
(Vary), and a history restore gets the page (kb/htmx.py)."""

import pytest

pytestmark = pytest.mark.django_db

WATCHDOG = (
    "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
)
HTMX = {"HTTP_HX_REQUEST": "true"}


def vary(response) -> set[str]:
    return {v.strip() for v in response.get("Vary", "").split(",") if v.strip()}


def test_a_diagnosis_answers_htmx_with_the_fragment_and_varies_by_it(client):
    page = client.post("/diagnose", {"log": WATCHDOG})
    fragment = client.post("/diagnose", {"log": WATCHDOG}, **HTMX)
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert "HX-Request" in vary(page) and "HX-Request" in vary(fragment)


def test_an_error_answer_varies_by_htmx_too(client):
    response = client.post("/diagnose", {"log": ""}, **HTMX)
    assert response.status_code == 400 and b"<html" not in response.content and "HX-Request" in vary(response)


def test_the_search_varies_by_the_box_that_asked(client):
    response = client.get("/search?q=NCCL_SOCKET_IFNAME")
    assert {"HX-Request", "HX-Target"} <= vary(response)


def test_a_history_restore_of_a_wizard_step_gets_the_whole_page(client):
    response = client.get("/troubleshoot/hang/", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert response.status_code == 200 and b"<html" in response.content and "HX-Request" in vary(response)


def test_a_vote_varies_by_htmx(client):
    response = client.post("/vote", {}, **HTMX)
    assert "HX-Request" in vary(response)
