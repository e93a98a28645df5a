"""Nothing a client or a broken index can cause answers 500 (robustness probe findings)."""

import shutil

import pytest

pytestmark = pytest.mark.django_db


def test_a_foreign_host_header_gets_a_400_not_a_500(client, settings):
    """Regression: the base template built og:url from the request, which raises for a foreign Host."""
    settings.ALLOWED_HOSTS = ["kb.example.com"]
    response = client.get("/kb/", HTTP_HOST="attacker.example")
    assert response.status_code == 400


def test_a_nul_in_the_path_is_a_400(client):
    response = client.get("/kb/llama3-fsdp%00-allgather-timeout/")
    assert response.status_code == 400 and b"NUL" in response.content


def test_a_nul_in_a_search_query_is_searched_as_text(client):
    response = client.get("/search?q=NCCL%00error")
    assert response.status_code == 200 and b"NCCL" in response.content


def test_an_oversize_body_is_refused_from_its_content_length_before_it_is_read(client, settings):
    """Regression: CSRF checking parsed (and spooled) the whole body before the view's size check."""
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/diagnose", data=b"log=" + b"x" * 200_000, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413 and b"1000 bytes" in response.content


def test_the_api_says_413_with_the_limit_in_json(client, settings):
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/api/diagnose", data=b"x" * 200_000, content_type="text/plain")
    assert response.status_code == 413 and response.json()["limit_bytes"] == 1000


def test_a_corrupt_index_leaves_search_pages_working_without_hits(client, settings, tmp_path):
    broken = tmp_path / "published"
    shutil.copytree(settings.SEARCH_INDEX_DIR, broken, symlinks=True)
    build = (broken / "current").resolve()
    for segment in build.glob("*.seg"):
        segment.write_bytes(b"\x00garbage")
    for toc in build.glob("*.toc"):
        toc.write_bytes(b"not an index")
    settings.SEARCH_INDEX_DIR = broken
    assert client.get("/search?q=NCCL_SOCKET_IFNAME").status_code == 200
    assert client.get("/api/search?q=NCCL_SOCKET_IFNAME").status_code == 503
    assert client.post("/diagnose", {"log": "NCCL WARN Duplicate GPU detected"}).status_code == 200
