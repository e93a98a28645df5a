"""Log text pasted into a search box never reaches a URL: the boxes POST (with CSRF); words are redirected to the
stable GET URL a wiki links to; and `make serve`'s access log leaves query strings (and referers) out anyway."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import html5lib
import pytest
from django.conf import settings
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_make_serve_logs_requests_without_their_query_string_or_referer(tmp_path):
    """Regression: gunicorn's default access log format has `%(r)s` (the request line with its query string) and
    `%(f)s` (the referer, which carries the previous page's query string); a log line sent as /search?q= was kept
    in the access log, tokens and all."""
    from config.serve import GUNICORN_ACCESS_FORMAT  # the format `make serve` gives gunicorn behind nginx

    port = free_port()
    log = tmp_path / "access.log"
    env = {**os.environ, "DEBUG": "1", "SQLITE_PATH": str(tmp_path / "db.sqlite3"), "SECRET_KEY": "x"}
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--access-logfile",
            str(log),
            "--access-logformat",
            GUNICORN_ACCESS_FORMAT,
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/favicon.ico?q=HF_TOKEN%3D{SECRET}"
        request = urllib.request.Request(url, headers={"Referer": f"http://127.0.0.1:{port}/search?q={SECRET}"})
        for _ in range(200):
            try:
                urllib.request.build_opener(NoRedirect).open(request, timeout=5)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        for _ in range(50):
            if log.exists() and log.read_text():
                break
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)
    written = log.read_text()
    assert "GET /favicon.ico HTTP/1.1" in written and " 302 " in written
    assert SECRET not in written and "?q=" not in written


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
