"""The shell's `Killed` is a process killed by SIGKILL (host-oom-kill evidence), wherever it lands in a line.

The lines are bash 5.2.15's (jobs.c), printed after a progress bar redrawn with carriage returns by a Python
process that was then sent SIGKILL: an interactive shell prints the signal's name where the cursor was, a script
prints "<name>: line N: PID Killed  command".
"""

from __future__ import annotations

import pytest
from django.conf import settings

from diagnosis.engine import CONFIDENT, log_diagnose
from diagnosis.readers.events import LITERALS, first_failure
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator

from tools.corpus import content_rules

BAR = "".join(
    f"\rLoading checkpoint shards:  {i * 20:2d}%|{'#' * i * 2:<10}| {i}/5 [00:{i * 5:02d}<00:15,  5.00s/it]" for i in range(3)
)
KILLED_INTERACTIVE = BAR + "Killed\r\n"
KILLED_SCRIPT = BAR + "bash: line 1: 32192 Killed                  python3 bar.py\n"


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


@pytest.mark.parametrize("text", [KILLED_INTERACTIVE, KILLED_SCRIPT, "step 3\nKilled\n"], ids=["after-bar", "script", "alone"])
def test_the_shell_s_killed_is_a_process_killed(rules, text):
    diagnosis = log_diagnose([("log", text.encode())], rules)
    assert diagnosis.failure.kind == "sigkill"
    assert [m.slug for m in diagnosis.matches if m.confidence >= CONFIDENT][:1] == ["host-oom-kill"]


@pytest.mark.parametrize(
    "line",
    [
        "OOMKilled",
        "      Reason:       OOMKilled",
        "Some of the step tasks have been OOM Killed.",
        "Killed process 42",
        "srun: error: gpu-c12: task 13: Killed",  # Slurm's report of a task it killed after another failed
    ],
)
def test_killed_inside_other_words_is_not_the_shell_s_notice(line):
    assert first_failure(TextScanner(line, [(lit, False) for lit in LITERALS]), LineLocator(line), []) is None
