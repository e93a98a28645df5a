"""The CLI, the JSON API and the page give the same diagnosis; limits and bad input get clear answers."""

import re
import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils.html import escape

from kb.log_input import LogTooLarge

from tests.kb.html_checks import assert_valid_html

from tests.kb.diagnose_cli import diagnose_json

pytestmark = pytest.mark.django_db
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
WATCHDOG = (
    "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=2, OpType=_ALLGATHER_BASE, NumelIn=131334656, NumelOut=1050677248, "
    "Timeout(ms)=600000) ran for 600512 milliseconds before timing out."
)


def test_cli_json_follows_the_contract(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(WATCHDOG + "\n")
    result = diagnose_json(str(log))
    assert set(result) >= {"matches", "facts", "stats"}
    first = result["matches"][0]
    assert first["slug"] == "llama3-fsdp-allgather-timeout" and 0.5 <= first["confidence"] <= 1
    assert first["evidence"][0]["line"] == 1 and first["evidence"][0]["signal"]
    assert result["facts"]["op_type"] == "_ALLGATHER_BASE" and result["facts"]["timeout_ms"] == 600000


def test_cli_reads_standard_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO((WATCHDOG + "\n").encode())))
    assert diagnose_json("-")["matches"][0]["slug"] == "llama3-fsdp-allgather-timeout"


def test_cli_and_api_agree(client, tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes((LOGS / "barrier_rank0_silent_torch23.log").read_bytes())
    from_cli = diagnose_json(str(log))
    from_api = client.post("/api/diagnose", data=log.read_bytes(), content_type="text/plain").json()
    assert [(m["slug"], m["confidence"]) for m in from_cli["matches"]] == [
        (m["slug"], m["confidence"]) for m in from_api["matches"]
    ]
    assert from_cli["facts"] == from_api["facts"]


def test_cli_refuses_a_missing_file():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no such file"):
        call_command("diagnose", "/nonexistent/log.txt")


def test_api_accepts_a_form_field_and_an_upload(client):
    by_field = client.post("/api/diagnose", {"log": WATCHDOG}).json()
    by_upload = client.post("/api/diagnose", {"file": SimpleUploadedFile("rank3.log", WATCHDOG.encode())}).json()
    assert by_field["matches"][0]["slug"] == by_upload["matches"][0]["slug"] == "llama3-fsdp-allgather-timeout"


def test_api_over_the_size_limit_answers_413_with_the_limit(client, settings):
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/api/diagnose", data=b"x" * 5000, content_type="text/plain")
    assert response.status_code == 413
    assert response.json()["limit_bytes"] == 1000 and "limit" in response.json()["error"]


def test_page_over_the_size_limit_answers_413_page(client, settings):
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/diagnose", {"log": "y" * 5000})
    assert response.status_code == 413
    assert b"1000 bytes" in response.content
    assert_valid_html(response.content)


@pytest.mark.parametrize(
    ("route", "size"),
    [("/diagnose", 5000), ("/diagnose", 200_000), ("/search", 5000)],
    ids=["paste read by the view", "refused by Content-Length before the view", "search box"],
)
def test_every_layer_refuses_an_oversized_log_with_the_same_advice(client, settings, route, size):
    settings.KB_MAX_LOG_BYTES = 1000
    field = "log" if route == "/diagnose" else "q"
    response = client.post(route, {field: "NCCL WARN timeout\n" * (size // 18)})
    assert response.status_code == 413
    page = response.content.decode()
    assert "Log too large" in page and "1000 bytes" in page
    assert escape(LogTooLarge.advice) in page


def test_empty_paste_gets_a_clear_400(client):
    response = client.post("/diagnose", {"log": "   "})
    assert response.status_code == 400 and b"Paste a log" in response.content


def test_pasted_log_results_page_shows_evidence_and_facts(client):
    response = client.post("/diagnose", {"log": (LOGS / "fsdp_rank2_behind_torch25.log").read_text(errors="replace")})
    page = response.content.decode()
    assert response.status_code == 200
    assert_valid_html(response.content)
    assert "<mark>" in page and "Facts read from the log" in page
    assert "rank 2 had made the least progress" in page


def test_htmx_request_gets_only_the_results_fragment(client):
    response = client.post("/diagnose", {"log": WATCHDOG}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert "<html" not in page and "llama3-fsdp-allgather-timeout" in page


def test_search_link_with_an_error_line_diagnoses_it(client):
    page = client.get("/search", {"q": WATCHDOG}).content.decode()
    assert 'href="/kb/llama3-fsdp-allgather-timeout/#signatures"' in page


@pytest.mark.parametrize("payload", ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>'])
def test_pasted_html_comes_back_escaped(client, payload):
    log = f"{WATCHDOG} {payload}"
    page = client.post("/diagnose", {"log": log}).content.decode()
    assert payload not in page
    assert "&lt;" in page


def test_binary_garbage_is_diagnosed_without_error(client):
    response = client.post("/api/diagnose", data=bytes(range(256)) * 400, content_type="application/octet-stream")
    assert response.status_code == 200 and response.json()["matches"] == []


def test_results_hand_the_facts_to_the_troubleshooter(client):
    page = client.post("/diagnose", {"log": (LOGS / "barrier_rank0_silent_torch23.log").read_text()}).content.decode()
    assert "Continue in the troubleshooter with these facts" in page
    link = re.search(r'<a class="button" href="([^"]+)">Continue in the troubleshooter', page).group(1)
    assert link.startswith("/troubleshoot/") and "launcher=" in link
    assert client.get(link.replace("&amp;", "&")).status_code == 200


def test_the_api_answers_a_paste_of_thousands_of_ranks_with_bounded_rows_and_groups(client):
    lines = [
        f"[rank{i}]:[E1121 04:00:00.123 ProcessGroupNCCL.cpp:616] [Rank {i}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE, NumelIn={i}, NumelOut={i}, Timeout(ms)=600000) ran for "
        f"600000 milliseconds before timing out."
        for i in range(3000)
    ]
    response = client.post("/api/diagnose", data="\n".join(lines).encode(), content_type="text/plain")
    body = response.json()
    assert response.status_code == 200 and len(response.content) < 200_000
    assert len(body["ranks"]["table"]) == 256 and body["ranks"]["table_total"] == 3000
    assert len(body["ranks"]["groups"]) == 24 and body["ranks"]["groups_total"] == 3000
    assert len(body["rank_groups"]["groups"]) == 24 and body["rank_groups"]["groups_total"] == 3000
