"""Nothing a client or a broken index can cause answers 500 (robustness probe findings)."""

import logging
import shutil
from pathlib import Path

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


def _broken_index(kind: str, published: Path, folder: Path) -> Path:
    """A copy of the published index folder, broken the way a disk, a careless `rm` or a half-finished restore
    breaks it: its files overwritten with garbage, its build deleted under `current`, or no build at all."""
    broken = folder / "published"
    shutil.copytree(published, broken, symlinks=True)
    build = (broken / "current").resolve()
    if kind == "corrupt":
        for segment in build.glob("*.seg"):
            segment.write_bytes(b"\x00garbage")
        for toc in build.glob("*.toc"):
            toc.write_bytes(b"not an index")
    elif kind == "build deleted":
        for old in broken.glob("build-*"):
            shutil.rmtree(old)
    else:
        shutil.rmtree(broken)
        broken.mkdir()
    return broken


BROKEN = ["corrupt", "build deleted", "never built"]


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_index_gives_search_a_clear_503_page_and_one_log_line(client, settings, tmp_path, caplog, kind):
    """Regression: a corrupt index answered the search page with "No page mentions", a wrong answer, and a missing
    one logged nothing. Every request meets the problem until content is loaded again, so it is logged once."""
    settings.SEARCH_INDEX_DIR = _broken_index(kind, settings.SEARCH_INDEX_DIR, tmp_path)
    with caplog.at_level(logging.ERROR, logger="kb.search.index"):
        answers = [client.get("/search?q=NCCL_SOCKET_IFNAME") for _ in range(3)]
        typed = client.post("/search", {"q": "NCCL_SOCKET_IFNAME"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live-hits")
        api = client.get("/api/search?q=NCCL_SOCKET_IFNAME")
    for response in answers + [typed]:
        assert response.status_code == 503 and b"Search is unavailable" in response.content
        assert b"load_content" in response.content and b"No page mentions" not in response.content
    assert api.status_code == 503 and "load_content" in api.json()["error"]
    logged = [r.getMessage() for r in caplog.records if r.name == "kb.search.index"]
    assert len(logged) == 1 and str(settings.SEARCH_INDEX_DIR) in logged[0] and "load_content" in logged[0], logged


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_index_leaves_every_other_page_answering(client, settings, tmp_path, kind):
    """Case pages and the case list come from the database, a paste is diagnosed from the database's rules, and
    the 404 page's suggestions are dropped: none of them may fail with the index."""
    settings.SEARCH_INDEX_DIR = _broken_index(kind, settings.SEARCH_INDEX_DIR, tmp_path)
    assert client.get("/").status_code == 200
    assert client.get("/kb/").status_code == 200
    assert client.get("/kb/llama3-fsdp-allgather-timeout/").status_code == 200
    assert client.get("/kb/no-such-case/").status_code == 404
    line = "gpu-b04:20931:20990 [0] init.cc:824 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000"
    diagnosed = client.post("/diagnose", {"log": line})
    assert diagnosed.status_code == 200 and b"duplicate-gpu-rank-mapping" in diagnosed.content


@pytest.mark.parametrize("kind", ["build deleted", "never built"])
def test_a_lost_build_gives_the_troubleshooter_a_clear_503_page_and_a_log_line(client, settings, tmp_path, caplog, kind):
    """The troubleshooter's trees are published in the same build as the index: without it, the wizard said
    nothing (an empty list, then 404 for a tree that exists)."""
    settings.SEARCH_INDEX_DIR = _broken_index(kind, settings.SEARCH_INDEX_DIR, tmp_path)
    with caplog.at_level(logging.ERROR, logger="troubleshooter.library"):
        for path in ("/troubleshoot/", "/troubleshoot/hang/", "/troubleshoot/hang/fix.sh"):
            response = client.get(path)
            assert response.status_code == 503 and b"Troubleshooter unavailable" in response.content, path
    assert any("load_content" in r.getMessage() for r in caplog.records if r.name == "troubleshooter.library")


def test_search_answers_again_as_soon_as_the_index_is_rebuilt(client, settings, tmp_path):
    """No failure is cached: the first search after `load_content` repaired the index finds pages again."""
    published = settings.SEARCH_INDEX_DIR
    settings.SEARCH_INDEX_DIR = _broken_index("corrupt", published, tmp_path)
    assert client.get("/search?q=NCCL_SOCKET_IFNAME").status_code == 503
    settings.SEARCH_INDEX_DIR = published
    repaired = client.get("/search?q=NCCL_SOCKET_IFNAME")
    assert repaired.status_code == 200 and b"nccl-socket-ifname-wrong-interface" in repaired.content
