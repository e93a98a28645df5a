"""What `make bench` and `make loadtest` read of a process from /proc: its memory and the processes it started."""

import os
import subprocess
import sys

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
