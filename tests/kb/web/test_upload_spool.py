"""Uploads past the in-memory bound spool to a temporary file that has no name, so no copy of a log (and of
any secret in it) outlives the worker that read it, whatever happens to that worker."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db

SECRET = "hf_SpoolTestTokenAbcdefghijklmnop0123"
WATCHDOG = (
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.\n"
)


def big_log(settings) -> bytes:
    """A log larger than FILE_UPLOAD_MAX_MEMORY_SIZE, so Django would not keep it in memory."""
    filler = b"NCCL INFO Channel 00/02 : 0 1 2 3\n" * (settings.FILE_UPLOAD_MAX_MEMORY_SIZE // 34 + 1000)
    return f"export HF_TOKEN={SECRET}\n".encode() + filler + WATCHDOG.encode()


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def open_unnamed_files_in(folder: Path) -> list[str]:
    """Files this process holds open in `folder` that have no name any more (Linux shows them "(deleted)")."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)) and target.endswith("(deleted)"):
            found.append(target)
    return found


def test_an_upload_past_the_memory_bound_is_on_disk_without_a_name_while_it_is_read(client, settings, tmp_path, monkeypatch):
    """Regression: Django's TemporaryFileUploadHandler kept a named `tmpXXXX.upload.log` in the temp dir for as
    long as the request ran; a worker killed by gunicorn's timeout left it there, secrets and all."""
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    seen: dict[str, list] = {}
    from kb import views

    real = views.job_diagnosis_run

    def diagnosis_run_watched(*args, **kwargs):
        seen["names"] = sorted(p.name for p in tmp_path.iterdir())
        seen["holding"] = files_holding(tmp_path, SECRET)
        seen["unnamed"] = open_unnamed_files_in(tmp_path)
        return real(*args, **kwargs)

    monkeypatch.setattr(views, "job_diagnosis_run", diagnosis_run_watched)
    response = client.post("/diagnose", {"file": SimpleUploadedFile("rank1.log", big_log(settings))})
    assert response.status_code == 200 and b"Watchdog caught" in response.content
    assert seen["names"] == [] and seen["holding"] == []
    assert seen["unnamed"], "the upload should have spooled to disk, in FILE_UPLOAD_TEMP_DIR"
    assert list(tmp_path.iterdir()) == []


def test_a_small_upload_stays_in_memory(client, settings, tmp_path, monkeypatch):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    seen: dict[str, list] = {}
    from kb import views

    real = views.job_diagnosis_run

    def diagnosis_run_watched(*args, **kwargs):
        seen["unnamed"] = open_unnamed_files_in(tmp_path)
        return real(*args, **kwargs)

    monkeypatch.setattr(views, "job_diagnosis_run", diagnosis_run_watched)
    response = client.post("/diagnose", {"file": SimpleUploadedFile("rank1.log", WATCHDOG.encode())})
    assert response.status_code == 200 and seen["unnamed"] == []


def test_an_upload_cut_off_mid_way_leaves_nothing_in_the_temp_dir(client, settings, tmp_path):
    """A client that goes away mid-upload: the multipart body ends inside the file, with no closing boundary."""
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    boundary = "cutoffboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="rank1.log"\r\nContent-Type: text/plain\r\n\r\n'
    ).encode() + big_log(settings)[: settings.FILE_UPLOAD_MAX_MEMORY_SIZE * 2]
    response = client.generic("POST", "/diagnose", body, content_type=f"multipart/form-data; boundary={boundary}")
    assert response.status_code in (200, 400)
    assert b"Traceback (most recent call last)" not in response.content
    assert files_holding(tmp_path, SECRET) == [] and list(tmp_path.iterdir()) == []


def test_an_upload_whose_diagnosis_fails_leaves_nothing_in_the_temp_dir(client, settings, tmp_path, monkeypatch):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    from kb import views

    def diagnosis_run_failing(*args, **kwargs):
        raise RuntimeError("the engine failed mid-way")

    monkeypatch.setattr(views, "job_diagnosis_run", diagnosis_run_failing)
    client.raise_request_exception = False
    response = client.post("/diagnose", {"file": SimpleUploadedFile("rank1.log", big_log(settings))})
    assert response.status_code == 500 and b"the engine failed" not in response.content
    assert files_holding(tmp_path, SECRET) == [] and list(tmp_path.iterdir()) == []


KILLED_WORKER = textwrap.dedent("""
    import os, signal, sys
    import django
    django.setup()
    from django.conf import settings
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client
    from kb import views

    def killed(*args, **kwargs):  # the worker dies while it holds the upload: SIGKILL runs no clean-up
        os.kill(os.getpid(), signal.SIGKILL)

    views.job_diagnosis_run = killed
    from django.core.management import call_command
    call_command("migrate", verbosity=0)  # the page reads the served revision before it diagnoses
    data = sys.stdin.buffer.read()
    Client().post("/diagnose", {"file": SimpleUploadedFile("rank1.log", data)})
""")


def test_a_worker_killed_while_it_reads_an_upload_leaves_no_copy_of_it(settings, tmp_path):
    """Regression: gunicorn SIGKILLs a worker past --timeout; Django's named upload file then stayed in /tmp."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    env = {
        **os.environ,
        "TMPDIR": str(spool),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        "DEBUG": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WORKER],
        input=big_log(settings),
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert files_holding(tmp_path, SECRET) == []
    assert list(spool.iterdir()) == []
