"""What `make bench` and `make loadtest` read of a process from /proc: its memory and the processes it started."""

import io
import os
import subprocess
import sys

import pytest
from django.core.management import call_command

from tools.benchmark import process_children, process_status_kb


def test_a_process_memory_is_read_in_kilobytes_with_its_high_water_mark():
    status = process_status_kb(os.getpid())
    assert status["VmHWM"] >= status["VmRSS"] > 1000  # a Python process holds megabytes


def test_the_processes_a_command_started_are_found_and_a_gone_one_reads_as_nothing():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in process_children(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert process_status_kb(child.pid) == {}
    assert process_children(child.pid) == []


@pytest.mark.django_db
def test_make_bench_runs_through_and_prints_every_figure():
    """A smoke run of the command `make bench` runs (1 MB logs, one run, no page or 600 MB rounds): an API change had
    broken it at its first figure without any test noticing."""
    out = io.StringIO()
    call_command("bench", megabytes=1, big_megabytes=0, runs=1, page_seconds=0, stdout=out)
    printed = out.getvalue()
    assert printed.count("ratio diagnose/grep:") == 2 and "64 rank files" in printed
    assert "command line on a 3-line log" in printed and "text search uncached" in printed
