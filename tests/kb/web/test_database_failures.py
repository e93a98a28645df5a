"""When the database or the temp space fails, the site answers briefly and honestly, logs one line, and never loses
a finished diagnosis to a counter it could not write (issue 34: B7, B9, B12, B13).

The database failures are real ones: every query of the request goes through a connection.execute_wrapper that
raises what the driver raises (psycopg's "connection refused", SQLite's "database is locked")."""

from __future__ import annotations

import logging
import re
import tempfile

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection
from django.test import Client

from kb.models import LineTemplate, Report
from tests.kb.web.test_reports import MARKER, share

pytestmark = pytest.mark.django_db

CASE_URL = "/kb/nccl-watchdog-timeout-triage/"


def refused(execute, sql, params, many, context):
    raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')


def counters_locked(execute, sql, params, many, context):
    """SQLite's answer to a write while another process holds the write lock past the 20 s timeout."""
    if "kb_casematchday" in sql or "kb_linetemplate" in sql:
        raise OperationalError("database is locked")
    return execute(sql, params, many, context)


@pytest.fixture(autouse=True)
def no_cached_pages():
    caches["pages"].clear()


def test_a_page_while_the_database_is_down_is_a_short_503_saying_so(client):
    with connection.execute_wrapper(refused):
        response = client.get(CASE_URL)
    assert response.status_code == 503
    assert "The knowledge base is briefly unavailable" in response.content.decode()
    assert response["Retry-After"] == "30"


def test_an_api_route_while_the_database_is_down_answers_json_503(client):
    with connection.execute_wrapper(refused):
        response = client.get("/api/cases/nccl-watchdog-timeout-triage.json")
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert "briefly unavailable" in response.json()["error"]


def test_a_paste_to_the_api_while_the_database_is_down_answers_json_503(client):
    with connection.execute_wrapper(refused):
        response = client.post("/api/diagnose", MARKER, content_type="text/plain")
    assert response.status_code == 503 and "briefly unavailable" in response.json()["error"]


def test_a_request_failing_for_the_database_logs_one_line_without_a_traceback(client, caplog):
    with caplog.at_level(logging.INFO), connection.execute_wrapper(refused):
        client.get(CASE_URL)
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(logged) == 1 and logged[0].exc_info is None
    assert "database unavailable: GET /kb/nccl-watchdog-timeout-triage/" in logged[0].getMessage()


def test_a_database_failure_raised_outside_the_view_is_a_503_too():
    """Sharing keeps the delete token in the session, which its middleware saves after the view: handler500
    answers for a failure there."""
    client = Client(raise_request_exception=False)
    page = client.post("/diagnose", {"log": MARKER}).content.decode()
    payload = re.search(r'name="payload" value="([^"]+)"', page).group(1)

    def sessions_refused(execute, sql, params, many, context):
        if "django_session" in sql:
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(sessions_refused):
        response = client.post("/d/", {"payload": payload})
    assert response.status_code == 503
    assert "The knowledge base is briefly unavailable" in response.content.decode()


def test_a_paste_is_diagnosed_when_only_its_counter_cannot_be_written(client):
    with connection.execute_wrapper(counters_locked):
        response = client.post("/diagnose", {"log": MARKER})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Most likely cause" in page
    assert "This paste was not counted" in page


def test_an_unmatched_paste_is_answered_when_its_templates_cannot_be_written(client):
    with connection.execute_wrapper(counters_locked):
        response = client.post("/diagnose", {"log": "myapp failed badly at step 3\nanother odd line 42\n"})
    assert response.status_code == 200 and "This paste was not counted" in response.content.decode()


def test_nul_in_an_unmatched_line_never_reaches_the_database(client):
    """PostgreSQL refuses NUL in text: the curators' template keeps the line without it (the diagnosis reads the
    paste's printable text, which drops control characters), and the paste is answered."""
    response = client.post("/diagnose", {"log": "myapp \x00 failed badly at step 3\n"})
    stored = " ".join(LineTemplate.objects.values_list("template", flat=True))
    assert response.status_code == 200
    assert "\x00" not in stored and "myapp failed badly at step" in stored


def test_nul_in_a_shared_log_is_stored_as_a_visible_escape(client):
    report, _ = share(client, MARKER + "\nbad \x00 byte\n", store_log="on")
    report = Report.objects.get(id=report.id)
    assert "\x00" not in report.log and "bad \\x00 byte" in report.log
    assert "\x00" not in str(report.data)


def test_nul_in_a_vote_field_is_dropped_before_the_database():
    """PostgreSQL refuses NUL in text: a vote's fields lose it before they are stored, and the vote counts."""
    from kb.models import Vote
    from kb.report_views import case_ballot

    response = Client(raise_request_exception=False).post(
        "/vote",
        {"target": "case", "ballot": case_ballot("host-oom-kill"), "answer": "other", "other_case": "docker-shm\x00-too-small"},
    )
    assert response.status_code == 200
    assert Vote.objects.get().other_case == "docker-shm-too-small"


def test_nul_in_a_report_id_is_no_such_report_not_a_500():
    response = Client(raise_request_exception=False).post("/vote", {"target": "report", "report": "\x00abc", "answer": "no"})
    assert response.status_code == 404


@pytest.fixture
def full_temp_dir(monkeypatch, settings):
    """Every upload past memory spools to a temp file; /dev/full is a file every write to which fails with ENOSPC."""
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *args, **kwargs: open("/dev/full", "w+b"))


def test_an_upload_when_the_temp_dir_is_full_is_a_507_saying_so(client, full_temp_dir):
    upload = SimpleUploadedFile("rank0.log", (MARKER + "\n").encode() * 100)
    response = client.post("/diagnose", {"file": upload})
    assert response.status_code == 507
    assert "temporary space is full" in response.content.decode()


def test_an_api_upload_when_the_temp_dir_is_full_is_a_json_507(client, full_temp_dir):
    upload = SimpleUploadedFile("rank0.log", (MARKER + "\n").encode() * 100)
    response = client.post("/api/diagnose", {"file": upload})
    assert response.status_code == 507 and "temporary space is full" in response.json()["error"]
