"""The rank-stacks check of a fix or capture script: run with --check while a job hangs, it dumps the Python stack
of every rank on the node with py-spy, each under the rank its launcher put in the process's environment, so
the output can be pasted back and every stack lands on its rank."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.troubleshooter.test_scripts import render

FAKE_PYSPY = """#!/usr/bin/env bash
# Stands in for py-spy: prints what `py-spy dump --pid PID` prints for a process waiting in all_reduce.
[ "$1" = dump ] || { echo 'py-spy 0.4.1'; exit 0; }
pid=$3
printf 'Process %s: python train.py\\nPython v3.11.9 (/usr/bin/python3.11)\\n\\n' "$pid"
printf 'Thread %s (idle): "MainThread"\\n' "$pid"
printf '    all_reduce (torch/distributed/distributed_c10d.py:2501)\\n    train_step (train.py:88)\\n'
"""


@pytest.fixture
def fake_pyspy(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "py-spy"
    tool.write_text(FAKE_PYSPY)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return bin_dir


SPAWNS_A_CHILD = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


@pytest.fixture
def ranks_running():
    """Start Python processes that sleep like hung ranks, each with the environment given; stop them after."""
    started: list[subprocess.Popen] = []

    def start(env: dict[str, str], child: bool = False, argv: tuple[str, ...] = ()) -> int:
        clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")}
        code = SPAWNS_A_CHILD if child else "import time; time.sleep(60)"
        process = subprocess.Popen([sys.executable, "-c", code, *argv], env={**clean, **env}, start_new_session=True)
        started.append(process)
        return process.pid

    yield start
    for process in started:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _check(library, tmp_path: Path, bin_dir: Path, launcher: str, as_user: tuple[str, ...] = ()) -> str:
    """The capture script's --check, its text given on standard input (another user cannot read tmp_path)."""
    answers = {"stacks": "none", "recorder": "have", "launcher": launcher, "torch": "ge-2.5"}
    script = render(library, answers, tree_id="capture")
    time.sleep(0.2)  # let the sleeping ranks exec python
    result = subprocess.run(
        [*as_user, "bash", "-s", "--", "--check"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_torchrun_rank_on_the_node_is_dumped_under_its_rank(library, tmp_path, fake_pyspy, ranks_running):
    first, second = ranks_running({"RANK": "4"}), ranks_running({"RANK": "5"})
    out = _check(library, tmp_path, fake_pyspy, "torchrun")
    assert f"=== rank 4 (pid {first}) ===\nProcess {first}: python train.py" in out
    assert f"=== rank 5 (pid {second}) ===" in out


def test_a_python_process_without_a_rank_is_not_dumped(library, tmp_path, fake_pyspy, ranks_running):
    other = ranks_running({})
    out = _check(library, tmp_path, fake_pyspy, "torchrun")
    assert f"pid {other})" not in out


def test_a_rank_s_own_child_process_is_not_dumped_as_another_rank(library, tmp_path, fake_pyspy, ranks_running):
    """DataLoader workers and multiprocessing's resource tracker inherit their rank's RANK."""
    parent = ranks_running({"RANK": "13"}, child=True)
    out = _check(library, tmp_path, fake_pyspy, "torchrun")
    assert f"=== rank 13 (pid {parent}) ===" in out
    assert out.count("=== rank 13 (pid ") == 1


def test_open_mpi_ranks_are_found_by_their_world_rank(library, tmp_path, fake_pyspy, ranks_running):
    pid = ranks_running({"OMPI_COMM_WORLD_RANK": "2"})
    assert f"=== rank 2 (pid {pid}) ===" in _check(library, tmp_path, fake_pyspy, "mpirun")


def test_srun_ranks_are_found_by_their_task_id_and_a_launcher_srun_started_is_not_a_rank(
    library, tmp_path, fake_pyspy, ranks_running
):
    task = ranks_running({"SLURM_PROCID": "7"})
    agent = ranks_running({"SLURM_PROCID": "8"}, argv=("torch.distributed.run", "train.py"))
    out = _check(library, tmp_path, fake_pyspy, "srun")
    assert f"=== rank 7 (pid {task}) ===" in out and f"pid {agent})" not in out


def test_a_torchrun_worker_started_by_srun_is_dumped_under_its_rank_not_its_task_id(library, tmp_path, fake_pyspy, ranks_running):
    pid = ranks_running({"SLURM_PROCID": "1", "RANK": "9"})
    assert f"=== rank 9 (pid {pid}) ===" in _check(library, tmp_path, fake_pyspy, "srun")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start the check as another user (CI runs as root)")
def test_ranks_of_another_user_are_counted_and_the_user_told_to_run_as_root(library, tmp_path, fake_pyspy, ranks_running):
    """Without root, /proc/PID/environ of another user's process cannot be read: say so instead of 'no rank'."""
    pid = ranks_running({"RANK": "6"})
    shared_bin = Path(tempfile.mkdtemp(prefix="fake-py-spy-"))
    shared_bin.chmod(0o755)
    shutil.copy(fake_pyspy / "py-spy", shared_bin / "py-spy")
    try:
        out = _check(library, tmp_path, shared_bin, "torchrun", as_user=("runuser", "-u", "nobody", "--"))
    finally:
        shutil.rmtree(shared_bin)
    assert f"pid {pid})" not in out
    assert "python processes belong to another user: run this as root" in out
