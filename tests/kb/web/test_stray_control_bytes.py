"""Real logs with a stray control byte are logs (issue 33 item 4): PyTorch's DataLoader bus-error handler writes a NUL
into the log, which an upload refused as "binary data" and an archive dropped, while the paste got the right case.
Only what is mostly control bytes is binary; the page says what was done with the strays."""

from __future__ import annotations

import io
import os
import re
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from diagnosis.job_files import BINARY_CONTROL_PERCENT, file_kind, stray_control_bytes

pytestmark = pytest.mark.django_db

# A training log as the DataLoader's SIGBUS handler leaves it: its message, then a NUL, then the main process's error.
BUS_ERROR_LOG = (
    b"Epoch 3:  41%|####      | 812/1980 [05:12<07:29,  2.60it/s, loss=2.31]\n"
    b"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
    b"\x00"
    b"Traceback (most recent call last):\n"
    b'  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data\n'
    b"    data = self._data_queue.get(timeout=timeout)\n"
    b"RuntimeError: DataLoader worker (pid 40931) is killed by signal: Bus error. It is possible that dataloader's "
    b"workers are out of shared memory. Please try to raise your shared memory limit.\n"
)
SHM_CASE = "docker-shm-too-small"


def best_case(response) -> str:
    assert response.status_code == 200, response.content.decode()[:500]
    match = re.search(r'<h2 id="answer-h"><a href="/kb/([a-z0-9-]+)/">', response.content.decode())
    return match.group(1) if match else ""


def tar_gz(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        member = tarfile.TarInfo(name)
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def zipped(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def test_a_log_with_one_nul_byte_is_text():
    assert stray_control_bytes(BUS_ERROR_LOG) == 1
    assert file_kind("train.log", BUS_ERROR_LOG) == ("log", "text")


def test_a_file_mostly_of_control_bytes_is_still_binary():
    data = bytes(range(32)) * 100 + b"some text"
    kind, why = file_kind("dump.log", data)
    assert kind is None and f"over {BINARY_CONTROL_PERCENT}% of its first bytes are not text" in why


def test_random_bytes_are_refused_as_binary():
    assert file_kind("blob.log", os.urandom(8192) + b"\x00" * 4096)[0] is None


def test_the_pasted_log_gets_the_shm_case(client):
    assert best_case(client.post("/diagnose", {"log": BUS_ERROR_LOG.decode()})) == SHM_CASE


def test_a_nul_containing_log_uploaded_alone_gets_the_same_case_as_pasted(client):
    pasted = best_case(client.post("/diagnose", {"log": BUS_ERROR_LOG.decode()}))
    response = client.post("/diagnose", {"file": SimpleUploadedFile("train.log", BUS_ERROR_LOG)})
    assert best_case(response) == pasted == SHM_CASE


@pytest.mark.parametrize("packed, name", [(tar_gz, "job.tar.gz"), (zipped, "job.zip")], ids=["tar.gz", "zip"])
def test_a_nul_containing_log_inside_an_archive_gets_the_same_case_as_pasted(client, packed, name):
    response = client.post("/diagnose", {"file": SimpleUploadedFile(name, packed("logs/train.log", BUS_ERROR_LOG))})
    assert best_case(response) == SHM_CASE
    assert "skipped" not in response.content.decode()


def test_the_page_says_what_was_done_with_the_stray_bytes(client):
    page = client.post("/diagnose", {"file": SimpleUploadedFile("train.log", BUS_ERROR_LOG)}).content.decode()
    assert "train.log: read as text with 1 stray control byte (1 NUL byte dropped)" in page
