"""The "From the command line" panel's commands work as written (issue 12).

`curl --data-binary @job.log URL` sends the file as the body with curl's default Content-Type,
application/x-www-form-urlencoded. The API must read such a body as the log, not as an empty form."""

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log"


def test_a_raw_log_sent_as_curl_sends_it_is_diagnosed(client):
    response = client.post("/api/diagnose", data=LOG.read_bytes(), content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    assert response.json()["matches"][0]["slug"] == "llama3-fsdp-allgather-timeout"


def test_a_raw_log_with_many_ampersands_is_still_the_log(client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    body = LOG.read_bytes() + b"\n" + b"GET /x?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12\n"
    response = client.post("/api/diagnose", data=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200 and response.json()["matches"]


def test_a_form_with_a_log_field_is_still_read_as_a_form(client):
    response = client.post("/api/diagnose", {"log": LOG.read_text(errors="replace")})
    assert response.status_code == 200 and response.json()["matches"][0]["slug"] == "llama3-fsdp-allgather-timeout"
    empty = client.post("/api/diagnose", {"log": "   "})
    assert empty.status_code == 400


def test_the_cut_down_command_keeps_the_lines_around_the_first_watchdog_line(client, tmp_path):
    if shutil.which("grep") is None:
        pytest.skip("no grep")
    lines = [f"step {i} loss 1.{i:03d}" for i in range(1000)]
    lines[700] = "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: ..."
    lines[900] = "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: ..."
    (tmp_path / "job.log").write_text("\n".join(lines) + "\n")
    # The command exactly as the home page's panel shows it.
    command = html.unescape(re.search(r"<code>(grep [^<]+)</code>", client.get("/").content.decode()).group(1))
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    part = (tmp_path / "part.log").read_text().splitlines()
    assert part == lines[400:801]
