"""A log holding an HF_TOKEN goes in through every way the site takes logs, and the token is then found nowhere the
site writes: var/, the database (its file and every row of every table), the search index and the temp dir.
Shared reports store text, so they must store it redacted."""

from __future__ import annotations

import datetime as dt
import re
import secrets
import tempfile
from pathlib import Path
from typing import Callable

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone

from kb.models import Report

pytestmark = pytest.mark.django_db

WATCHDOG = (
    "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
    "SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds "
    "before timing out."
)


@pytest.fixture
def token() -> str:
    """A Hugging Face token no file on this machine holds yet (34 characters after hf_, as real ones have)."""
    return "hf_" + secrets.token_hex(17)


@pytest.fixture
def temp_dir(tmp_path, monkeypatch, settings) -> Path:
    """tempfile.gettempdir() for this test: a fresh folder, so scanning it means scanning all the site wrote there."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    settings.FILE_UPLOAD_TEMP_DIR = None
    return folder


def log_with(token: str, *, lines: int = 1) -> str:
    """A watchdog log whose error lines carry the token: evidence, facts and templates all see it."""
    body = "\n".join(
        f"{WATCHDOG} HF_TOKEN={token}".replace("rank1", f"rank{n}").replace("Rank 1", f"Rank {n}") for n in range(1, lines + 1)
    )
    return f"export HF_TOKEN={token}\nRuntimeError: hub login failed with token={token}\n{body}\n"


def big_log_with(token: str) -> bytes:
    """Past FILE_UPLOAD_MAX_MEMORY_SIZE, so an upload spools to disk."""
    filler = "NCCL INFO Channel 00/02 : 0 1 2 3\n" * (settings.FILE_UPLOAD_MAX_MEMORY_SIZE // 34 + 1000)
    return (log_with(token) + filler + log_with(token)).encode()


def places_holding(token: str) -> list[str]:
    """Every file under var/, the database file, the search index and the temp dir, and every database row, that
    contains the token."""
    roots = [Path(settings.BASE_DIR) / "var", Path(settings.SEARCH_INDEX_DIR), Path(tempfile.gettempdir())]
    if connection.vendor == "sqlite":
        name = str(connection.settings_dict["NAME"])
        roots += [Path(name + suffix) for suffix in ("", "-wal", "-journal", "-shm") if Path(name + suffix).is_file()]
    needle = token.encode()
    found = [
        str(path)
        for root in roots
        if root.exists()
        for path in ([root] if root.is_file() else root.rglob("*"))
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes()
    ]
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            found += [f"table {table}" for row in cursor.fetchall() if token in repr(row)]
    return found


def payload_of(page: str) -> str:
    return re.search(r'name="payload" value="([^"]+)"', page).group(1)


def paste_form(client, token: str) -> str:
    return client.post("/diagnose", {"log": log_with(token)}).content.decode()


def upload_form(client, token: str) -> str:
    files = [SimpleUploadedFile("rank1.log", big_log_with(token)), SimpleUploadedFile("rank2.log", log_with(token).encode())]
    return client.post("/diagnose", {"file": files}).content.decode()


def api_raw_body(client, token: str) -> str:
    return client.post("/api/diagnose", data=log_with(token), content_type="text/plain").content.decode()


def api_curl_data_binary(client, token: str) -> str:
    return client.post(
        "/api/diagnose", data=log_with(token).encode(), content_type="application/x-www-form-urlencoded"
    ).content.decode()


def api_form_field(client, token: str) -> str:
    return client.post("/api/diagnose", {"log": log_with(token)}).content.decode()


def api_upload(client, token: str) -> str:
    return client.post("/api/diagnose", {"file": SimpleUploadedFile("job.log", big_log_with(token))}).content.decode()


def header_search_box(client, token: str) -> str:
    return client.post("/search", {"q": f"{WATCHDOG} HF_TOKEN={token}"}).content.decode()


def search_as_you_type(client, token: str) -> str:
    return client.post(
        "/search", {"q": f"{WATCHDOG} HF_TOKEN={token}"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live-hits"
    ).content.decode()


def search_link(client, token: str) -> str:
    return client.get("/search", {"q": log_with(token)}).content.decode()


def unmatched_paste(client, token: str) -> str:
    """Nothing explains it, so its error lines are kept as templates for the curators."""
    return client.post(
        "/diagnose",
        {"log": f"RuntimeError: hub login failed with token={token}\nfatal: could not read Username, HF_TOKEN={token} refused\n"},
    ).content.decode()


def vote_wrong_on_a_result(client, token: str) -> str:
    page = paste_form(client, token)
    ballot = re.search(r'name="ballot" value="([^"]+)"', page).group(1)
    assert client.post("/vote", {"target": "result", "ballot": ballot, "answer": "no"}).status_code in (200, 302)
    return page


def shared_report_with_its_pasted_log(client, token: str) -> str:
    page = paste_form(client, token)
    response = client.post("/d/", {"payload": payload_of(page), "log": log_with(token), "store_log": "on"})
    report = Report.objects.get(id=response["Location"].rsplit("/", 1)[1])
    assert "HF_TOKEN=[REDACTED]" in report.log and report.log.count("\n") >= 3
    return (
        page + client.get(response["Location"]).content.decode() + client.get(response["Location"] + "/log.txt").content.decode()
    )


def shared_report_with_its_uploaded_files(client, token: str) -> str:
    """With JavaScript the Share form sends the chosen files again (hx-include="#file")."""
    page = upload_form(client, token)
    response = client.post(
        "/d/", {"payload": payload_of(page), "store_log": "on", "file": SimpleUploadedFile("rank1.log", big_log_with(token))}
    )
    report = Report.objects.get(id=response["Location"].rsplit("/", 1)[1])
    assert "==> rank1.log <==" in report.log and "HF_TOKEN=[REDACTED]" in report.log
    return page + client.get(response["Location"] + ".md").content.decode()


def shared_report_of_a_search_box_diagnosis(client, token: str) -> str:
    page = header_search_box(client, token)
    response = client.post("/d/", {"payload": payload_of(page), "log": f"{WATCHDOG} HF_TOKEN={token}", "store_log": "on"})
    return page + client.get(response["Location"]).content.decode()


ENTRY_POINTS: list[Callable] = [
    paste_form,
    upload_form,
    api_raw_body,
    api_curl_data_binary,
    api_form_field,
    api_upload,
    header_search_box,
    search_as_you_type,
    search_link,
    unmatched_paste,
    vote_wrong_on_a_result,
    shared_report_with_its_pasted_log,
    shared_report_with_its_uploaded_files,
    shared_report_of_a_search_box_diagnosis,
]


@pytest.mark.parametrize("send", ENTRY_POINTS, ids=[f.__name__ for f in ENTRY_POINTS])
def test_a_token_sent_in_a_log_is_found_nowhere_the_site_writes(client, token, temp_dir, send):
    answer = send(client, token)
    assert "Watchdog caught" in answer or "hub login failed" in answer or '"matches"' in answer, "the log was not read"
    assert places_holding(token) == []


def test_the_scan_finds_a_token_left_in_a_file_or_a_row(token, temp_dir):
    """The scan itself can fail: a token written unredacted to the temp dir or to a table is reported."""
    (temp_dir / "upload.log").write_text(f"HF_TOKEN={token}\n")
    Report.objects.create(
        id=secrets.token_urlsafe(24),
        expires_at=timezone.now() + dt.timedelta(days=1),
        delete_token_hash="x",
        data={},
        log=f"HF_TOKEN={token}",
        best_slug="",
    )
    found = places_holding(token)
    assert str(temp_dir / "upload.log") in found and "table kb_report" in found
