"""Untrusted text comes back escaped wherever it enters; forms need CSRF; bad URLs are 4xx, never 500."""

import pytest
from hypothesis import given, strategies as st
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

pytestmark = pytest.mark.django_db

PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "'><svg onload=alert(1)>"]
WATCHDOG = (
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out."
)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_search_query_is_escaped(client, payload):
    page = client.get("/search", {"q": f"{WATCHDOG} {payload}"}).content.decode()
    assert payload not in page


@pytest.mark.parametrize("payload", PAYLOADS)
def test_upload_file_name_is_escaped(client, payload):
    files = [SimpleUploadedFile(f"{payload}.log", WATCHDOG.encode()), SimpleUploadedFile("rank0.log", b"ok\n")]
    page = client.post("/diagnose", {"file": files}).content.decode()
    assert "Watchdog caught" in page
    assert payload not in page


@pytest.mark.parametrize("payload", PAYLOADS)
def test_wizard_values_are_escaped(client, payload):
    response = client.get("/troubleshoot/hang/", {"when": payload})
    assert response.status_code == 400
    assert payload not in response.content.decode()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_tag_filter_is_escaped(client, payload):
    assert payload not in client.get("/kb/", {"tag": payload}).content.decode()


def test_diagnose_form_post_without_csrf_token_is_refused():
    response = Client(enforce_csrf_checks=True).post("/diagnose", {"log": WATCHDOG})
    assert response.status_code == 403


def test_diagnose_form_post_with_csrf_token_is_accepted():
    client = Client(enforce_csrf_checks=True)
    page = client.get("/").content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    assert client.post("/diagnose", {"log": WATCHDOG, "csrfmiddlewaretoken": token}).status_code == 200


@pytest.mark.parametrize(
    "path, status",
    [
        ("/kb/%E2%98%83/", 404),
        ("/kb/" + "a" * 500 + "/", 404),
        ("/api/cases/..%2F..%2Fetc%2Fpasswd.json", 404),
        ("/troubleshoot/no-such-tree/", 404),
        ("/troubleshoot/no-such-tree/fix.sh", 404),
        ("/troubleshoot/hang/?no-such-question=1", 400),
        ("/troubleshoot/hang/fix.sh?when=%00", 400),
        ("/kb/?tag=framework:", 400),
        ("/search?q=" + "x" * 5000, 400),
        ("/api/search?q=" + "x" * 5000, 400),
        ("/api/diagnose?top=lots", 405),
    ],
)
def test_bad_urls_are_client_errors_not_server_errors(client, path, status):
    assert client.get(path).status_code == status


def test_api_diagnose_rejects_a_bad_top_parameter(client):
    response = client.post("/api/diagnose?top=lots", data=WATCHDOG, content_type="text/plain")
    assert response.status_code == 400 and "top" in response.json()["error"]


def test_security_headers_are_sent(client):
    response = client.get("/kb/")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_no_template_contains_inline_script_or_style():
    from pathlib import Path
    import re

    for template in Path("templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template
        assert " style=" not in text and "<style" not in text, template
        assert not re.search(r"<[^>]*\s(?:on[a-z]+|hx-on[:\w-]*)\s*=", text), template


@given(st.binary(max_size=400) | st.text(max_size=200).map(lambda t: t.encode("utf-8")))
def test_the_quick_control_check_agrees_with_the_whole_pattern(content):
    """config.security.has_controls looks only where a control's first byte is; it must find exactly what a search
    with the whole pattern finds (ESC, U+202E and the other invisible controls the page shows as escapes)."""
    from config.security import _CONTROL_BYTES_RE, has_controls

    assert has_controls(content) == bool(_CONTROL_BYTES_RE.search(content))
