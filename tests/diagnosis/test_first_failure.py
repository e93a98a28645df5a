"""The failure that came first is read from what each launcher prints when a rank dies."""

import pytest

from diagnosis.readers.events import LITERALS, first_failure
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator


def failure(text: str):
    return first_failure(TextScanner(text, [(lit, False) for lit in LITERALS]), LineLocator(text), [])


# Open MPI's mpirun (orterun / prterun help text proc-aborted-strsignal), as a job killed by the kernel ends
MPIRUN_KILLED = """--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 7 with PID 41877 on node gpu-b12 exited on signal 9 (Killed).
--------------------------------------------------------------------------
"""


def test_mpirun_reporting_a_rank_killed_by_signal_9_is_a_sigkill():
    found = failure(MPIRUN_KILLED)
    assert (found.kind, found.line) == ("sigkill", 6)


@pytest.mark.parametrize("signal", ["11 (Segmentation fault)", "7 (Bus error)"])
def test_mpirun_reporting_a_rank_dead_of_a_crash_signal_is_a_signal(signal):
    found = failure(MPIRUN_KILLED.replace("9 (Killed)", signal))
    assert found.kind == "signal"


def test_mpirun_reporting_a_rank_that_was_terminated_is_no_failure_of_its_own():
    assert failure(MPIRUN_KILLED.replace("9 (Killed)", "15 (Terminated)")) is None
