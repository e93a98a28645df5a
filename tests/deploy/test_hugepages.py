"""Processes that read large logs start with glibc's huge-page tunable, once, and never override the user's."""

import subprocess
import sys
from pathlib import Path

from config.hugepages import TUNABLE, environ_with_huge_pages

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "import os, sys; sys.path.insert(0, '.'); from config.hugepages import restart_with_huge_pages;"
    " print('started', flush=True); restart_with_huge_pages(); print(os.environ.get('GLIBC_TUNABLES'))"
)


def _run(env: dict) -> list[str]:
    return subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True).stdout.split()


def test_a_process_starts_again_once_with_the_tunable():
    assert _run({"PATH": "/usr/bin:/bin"}) == ["started", "started", TUNABLE]


def test_tunables_the_user_set_are_kept_and_nothing_restarts():
    assert _run({"PATH": "/usr/bin:/bin", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == [
        "started",
        "glibc.malloc.arena_max=2",
    ]


def test_a_child_environment_gets_the_tunable_beside_what_it_had():
    env = environ_with_huge_pages({"DJANGO_SETTINGS_MODULE": "config.settings"})
    assert env == {"DJANGO_SETTINGS_MODULE": "config.settings", "GLIBC_TUNABLES": TUNABLE}


def test_only_a_large_input_is_worth_the_restart(tmp_path):
    from config.hugepages import LARGE_INPUT_BYTES, large_input_named

    small, large = tmp_path / "short.log", tmp_path / "job.log"
    small.write_text("exiting\n")
    with large.open("wb") as handle:
        handle.truncate(LARGE_INPUT_BYTES)
    assert not large_input_named([str(small), "--top", "3", "--json"])
    assert not large_input_named([str(tmp_path / "missing.log")])
    assert large_input_named([str(small), str(large)])
    assert large_input_named([str(tmp_path)])  # a torchrun --log-dir folder: its size is unknown
    assert large_input_named(["-"])  # standard input likewise


def test_a_short_log_is_answered_without_the_restart(tmp_path):
    """manage.py diagnose on a 3-line log starts once (30 ms less), a large log twice."""
    log = tmp_path / "short.log"
    log.write_text("exiting\n")
    probe = (
        "import os, runpy, sys; print('started', os.environ.get('GLIBC_TUNABLES'), flush=True);"
        f" sys.argv = ['manage.py', 'diagnose', {str(log)!r}, '--help']; runpy.run_path('manage.py', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert out.stdout.count("started") == 1


def test_the_bench_starts_commands_as_the_user_did():
    from config.hugepages import environ_as_the_user_started

    assert environ_as_the_user_started({"HOME": "/root", "GLIBC_TUNABLES": TUNABLE}) == {"HOME": "/root"}
    assert environ_as_the_user_started({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == {
        "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"
    }
