"""Which processes a fix script's --check treats as this node's training ranks (rank_pids in the script skeleton).

A rank is found by the rank its launcher put in its environment, not by its command name, because the name
differs by release and launcher: python or python3 on most PyTorch releases, pt_main_thread on 2.3 and 2.4 (import
torch renamed the main thread: PyTorch PR 121170, undone by PR 134066), and any name a launcher runs directly
(torchrun --no-python). The processes here are real, renamed the way each release renames them, and the checks
are the generated scripts' own, run with bash (audit turn 3, finding 2: the old `comm ~ /^python/` selection
listed none of a 2.3 or 2.4 job's ranks).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.troubleshooter.test_scripts import render
from troubleshooter.tree_model import tree_walk

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

# What `import torch` did on PyTorch 2.3 and 2.4: name the main thread, and so the process's comm, pt_main_thread.
RENAMES_ITSELF = "import ctypes, time; ctypes.CDLL(None).prctl(15, b'pt_main_thread', 0, 0, 0); time.sleep(60)"
SLEEPS = "import time; time.sleep(60)"


@pytest.fixture
def start(tmp_path: Path):
    """Start a sleeping Python process under the file name and environment given; stop it after the test."""
    started: list[subprocess.Popen] = []
    clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")}

    def run(env: dict[str, str], name: str = "python3", code: str = SLEEPS) -> int:
        program = tmp_path / name
        if not program.exists():
            program.symlink_to(sys.executable)
        process = subprocess.Popen([str(program), "-c", code], env={**clean, **env}, start_new_session=True)
        started.append(process)
        return process.pid

    yield run
    for process in started:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def comm_of(pid: int, want: str) -> str:
    """The command name ps -C, pgrep and awk on `comm` see, once it is `want` (the process has exec'd and renamed
    itself) or after five seconds."""
    comm = ""
    for _ in range(100):
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        if comm == want:
            break
        time.sleep(0.05)
    return comm


def script_for_part(library, part_title: str, tree_id: str = "hang") -> str:
    """The generated script of the first path whose leaf uses the part with this title."""
    for state in tree_walk(library.trees[tree_id]):
        text = render(library, state, tree_id)
        if f"# {part_title}" in text:
            return text
    raise AssertionError(f"no path of {tree_id} uses the part '{part_title}'")


def check_output(script: str) -> str:
    result = subprocess.run(["bash", "-s", "--", "--check"], input=script, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def a_node_of_ranks(start) -> dict[str, int]:
    """One rank as each release names it, and a python process that is no rank."""
    pids = {
        "python3": start({"RANK": "0", "LOCAL_RANK": "0"}),
        "pt_main_thread": start({"RANK": "1", "LOCAL_RANK": "1"}, code=RENAMES_ITSELF),
        "launcher-named": start({"RANK": "2", "LOCAL_RANK": "2"}, name="train-job"),
        "unrelated": start({}),
    }
    assert comm_of(pids["python3"], "python3") == "python3"
    assert comm_of(pids["pt_main_thread"], "pt_main_thread") == "pt_main_thread"
    assert comm_of(pids["launcher-named"], "train-job") == "train-job"
    return pids


@pytest.mark.parametrize(
    "part_title",
    ["Memory of every training process on this node, per rank", "Which GPU each process uses on this node"],
)
@pytest.mark.parametrize("named", ["python3", "pt_main_thread", "launcher-named"])
def test_a_rank_is_listed_whatever_its_command_name(library, a_node_of_ranks, part_title, named):
    out = check_output(script_for_part(library, part_title))
    rank = ["python3", "pt_main_thread", "launcher-named"].index(named)
    assert f"pid {a_node_of_ranks[named]}  rank {rank}" in out, out


@pytest.mark.parametrize(
    "part_title",
    ["Memory of every training process on this node, per rank", "Which GPU each process uses on this node"],
)
def test_a_python_process_without_a_rank_is_not_listed(library, a_node_of_ranks, part_title):
    out = check_output(script_for_part(library, part_title))
    assert not re.search(rf"\bpid {a_node_of_ranks['unrelated']}\b", out), out


def test_the_memory_check_shows_each_rank_s_resident_memory(library, a_node_of_ranks):
    out = check_output(script_for_part(library, "Memory of every training process on this node, per rank"))
    line = next(line for line in out.splitlines() if f"pid {a_node_of_ranks['pt_main_thread']}  rank 1" in line)
    assert re.search(r"  RSS \d+ MiB  ", line), line


def test_the_gpu_map_shows_each_rank_s_local_rank(library, a_node_of_ranks):
    out = check_output(script_for_part(library, "Which GPU each process uses on this node"))
    assert f"pid {a_node_of_ranks['launcher-named']}  rank 2: LOCAL_RANK=2" in out, out


def test_a_pt_main_thread_rank_is_dumped_by_the_stack_check(library, a_node_of_ranks, tmp_path):
    """The capture script's py-spy check uses the same selection (py-spy here is a stand-in that names the pid)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "py-spy").write_text('#!/usr/bin/env bash\n[ "$1" = dump ] && echo "dumped $3"\nexit 0\n')
    (bin_dir / "py-spy").chmod(0o755)
    script = render(library, {"stacks": "none", "recorder": "have", "launcher": "torchrun", "torch": "ge-2.5"}, tree_id="capture")
    result = subprocess.run(
        ["bash", "-s", "--", "--check"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    pid = a_node_of_ranks["pt_main_thread"]
    assert f"=== rank 1 (pid {pid}) ===\ndumped {pid}" in result.stdout, result.stdout
