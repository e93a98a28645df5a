"""`make serve`'s real stack (nginx in front, gunicorn behind; tests/deploy/serving.py starts it).

Issue 15's findings: five clients trickling a body held all five sync workers, so every other request timed out;
access logs held query strings. Clients come from different loopback addresses (127.0.0.2, .3, .4) so that each
test meets the per-address rate limit on its own.
"""

import socket
import threading
import time

import pytest

from config.serve import nginx_render, workers_plan
from kb.log_input import LogTooLarge
from tests.deploy.serving import BURST, MAX_LOG_BYTES, connection, request


@pytest.mark.proxy
def test_five_slow_clients_trickling_bodies_leave_a_page_answering_quickly(stack):
    """Regression (issue 15): five clients sending a body a few bytes at a time held the five sync workers."""
    port, stop = stack.port, threading.Event()
    slow = []
    for _ in range(5):
        client = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.3", 0))
        client.sendall(
            b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 200000\r\n\r\nNCCL WARN "
        )
        slow.append(client)

    def trickle() -> None:
        while not stop.wait(0.3):
            for client in slow:
                client.sendall(b"x" * 50)

    trickler = threading.Thread(target=trickle)
    trickler.start()
    try:
        time.sleep(1)  # every slow client has sent its headers and part of its body
        started = time.monotonic()
        status, body = request(port, "GET", "/kb/", timeout=10)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        trickler.join()
        for client in slow:
            client.close()
    assert status == 200 and b"<html" in body.lower()
    assert elapsed < 2, f"a page took {elapsed:.1f} s while 5 clients trickled bodies"


@pytest.mark.proxy
def test_an_oversize_content_length_gets_413_from_the_proxy_before_the_body(stack):
    client = connection(stack.port, "127.0.0.4")
    try:
        client.putrequest("POST", "/api/diagnose")
        client.putheader("Content-Type", "text/plain")
        client.putheader("Content-Length", str(MAX_LOG_BYTES + 1024 * 1024))
        client.endheaders()  # and no body: the answer comes from the declared length alone
        response = client.getresponse()
        status, body = response.status, response.read().decode()
    finally:
        client.close()
    assert status == 413
    assert body == LogTooLarge(MAX_LOG_BYTES).help_text() + "\n"  # the app's own wording, from the proxy


@pytest.mark.proxy
def test_a_body_nginx_cannot_spool_to_disk_gets_a_503_that_says_why(stack):
    """Turn 3: with client_body_temp_path full, nginx answered a bare 500. nginx keeps a body of up to 1.25 times
    client_body_buffer_size in memory when its length is declared, so a chunked body past 1 MB is what it spools;
    a folder its workers may not write to fails that write as a full disk does."""
    spool = stack.logs.parent / "nginx" / "client_body"
    mode = spool.stat().st_mode & 0o777
    spool.chmod(0o555)
    client = connection(stack.port, "127.0.0.6")
    try:
        chunks = iter([b"NCCL WARN x\n" * 5000] * 20)  # 1.2 MB
        client.request("POST", "/api/diagnose", body=chunks, headers={"Content-Type": "text/plain"}, encode_chunked=True)
        response = client.getresponse()
        status, body = response.status, response.read()
    finally:
        client.close()
        spool.chmod(mode)
    assert status == 503
    assert b"temporary storage may be full" in body and b"python manage.py diagnose" in body
    assert request(stack.port, "GET", "/kb/", source="127.0.0.6")[0] == 200


@pytest.mark.proxy
def test_diagnosis_posts_past_the_burst_get_429_with_a_message_and_pages_still_answer(stack):
    port = stack.port
    answers = [
        request(port, "POST", "/api/diagnose", source="127.0.0.2", body=b"NCCL WARN Duplicate GPU detected")
        for _ in range(BURST + 3)
    ]
    statuses = [status for status, _ in answers]
    assert statuses[: BURST + 1] == [200] * (BURST + 1), statuses  # the first request plus the burst
    assert statuses[BURST + 1 :] == [429, 429]
    assert b"Too many diagnoses from your address" in answers[-1][1]
    assert request(port, "GET", "/kb/", source="127.0.0.2")[0] == 200  # the limit is on diagnosis POSTs only


@pytest.mark.proxy
def test_vote_posts_past_their_burst_get_429_with_a_message_of_their_own(stack):
    """Issue 34: `/vote` was not limited. Without a CSRF token the app answers 403; past the burst nginx answers first."""
    answers = [request(stack.port, "POST", "/vote", source="127.0.0.5", body=b"answer=yes") for _ in range(9)]
    statuses = [status for status, _ in answers]
    assert statuses[:6] == [403] * 6 and set(statuses[6:]) == {429}, statuses  # the first request plus a burst of 5
    assert b"Too many votes from your address" in answers[-1][1]
    assert request(stack.port, "POST", "/api/diagnose", source="127.0.0.5", body=b"NCCL WARN x")[0] == 200, "a zone of its own"


@pytest.mark.proxy
def test_log_posts_to_the_search_box_count_against_the_diagnosis_limit(stack):
    """Issue 34, B4: POST /search diagnoses a pasted log as /diagnose does, and was outside the limit."""
    body = b"q=NCCL+WARN+Duplicate+GPU+detected%0Asecond+line"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    statuses = [
        request(stack.port, "POST", "/search", source="127.0.0.7", body=body, headers=headers)[0] for _ in range(BURST + 3)
    ]
    assert 429 not in statuses[: BURST + 1] and statuses[BURST + 1 :] == [429, 429], statuses
    assert request(stack.port, "GET", "/search?q=nccl", source="127.0.0.7")[0] != 429  # searching is not limited


@pytest.mark.proxy
def test_sign_in_posts_past_the_burst_get_429_with_a_message(stack):
    """Issue 34, B15: the admin login, which is also the curators', had no limit (30 wrong passwords in 9.3 s)."""
    body = b"username=curator&password=wrong"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    answers = [
        request(stack.port, "POST", "/admin/login/", source="127.0.0.6", body=body, headers=headers) for _ in range(BURST + 3)
    ]
    statuses = [status for status, _ in answers]
    assert 429 not in statuses[: BURST + 1] and statuses[BURST + 1 :] == [429, 429], statuses
    assert b"Too many sign-in attempts from your address" in answers[-1][1]


@pytest.mark.proxy
def test_access_logs_hold_the_path_but_never_the_query_string(stack):
    """Nor the referer, which carries the previous page's query string (gunicorn's default format has both)."""
    port = stack.port
    referer = {"Referer": f"http://127.0.0.1:{port}/search?q=hunter2-token-in-the-referer"}
    # This stack has loaded no content: the search answers 'Search is unavailable', from gunicorn, which logs it.
    status, body = request(port, "GET", "/search?q=hunter2-token-in-a-query", source="127.0.0.4", headers=referer)
    assert status == 503 and b"Search is unavailable" in body
    assert (
        request(
            port,
            "POST",
            "/api/diagnose?top=3&note=hunter2-token-in-a-query",
            source="127.0.0.4",
            body=b"NCCL WARN Duplicate GPU detected",
        )[0]
        == 200
    )
    logs = {name: stack.logs / f"{name}-access.log" for name in ("nginx", "gunicorn")}
    expected = ('"GET /search HTTP/1.', '"POST /api/diagnose HTTP/1.')
    # A gunicorn worker writes its line after the client has the answer, so a line may lag by a moment.
    deadline = time.monotonic() + 5
    while not all(line in path.read_text() for path in logs.values() for line in expected):
        assert time.monotonic() < deadline, {name: path.read_text()[-1000:] for name, path in logs.items()}
        time.sleep(0.1)
    for name, path in logs.items():
        text = path.read_text()
        assert "hunter2" not in text and "?" not in text, (name, text)


def test_workers_follow_the_memory_when_it_holds_fewer_than_the_cpus_would_run():
    gib = 1024**3
    assert workers_plan(cpus=2, available_bytes=24 * gib, budget_bytes=gib).workers == 5
    assert workers_plan(cpus=16, available_bytes=8 * gib, budget_bytes=gib).workers == 8
    assert workers_plan(cpus=4, available_bytes=gib // 2, budget_bytes=gib).workers == 1  # one, not none


def test_nginx_waits_to_hand_a_body_to_a_busy_worker_as_long_as_it_waits_for_an_answer(tmp_path):
    """Regression (issue 14): with every worker busy, an upload waits in gunicorn's accept queue while nginx's
    writes of its body stall; nginx's default 60 s answered 504 to 3 of 8 parallel 45 MB uploads (make loadtest)."""
    rendered = nginx_render(
        host="127.0.0.1",
        port=8000,
        var=tmp_path,
        socket=tmp_path / "gunicorn.sock",
        max_body_bytes=MAX_LOG_BYTES,
        too_large_text="The log is larger than the limit of 1 MB.",
        rate="10r/m",
        burst=BURST,
        rate_exempt=[],
        read_timeout_s=130,
    )
    assert "proxy_read_timeout 130s;" in rendered and "proxy_send_timeout 130s;" in rendered
