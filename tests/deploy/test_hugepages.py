"""gunicorn's workers start with glibc's huge-page tunable, never overriding the user's; the command line never
starts twice (it marks its heap itself, diagnosis/heap.py)."""

import subprocess
import sys
from pathlib import Path

from config.hugepages import TUNABLE, environ_with_huge_pages
import pytest

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

REPO = Path(__file__).resolve().parents[2]


def test_a_child_environment_gets_the_tunable_beside_what_it_had():
    env = environ_with_huge_pages({"DJANGO_SETTINGS_MODULE": "config.settings"})
    assert env == {"DJANGO_SETTINGS_MODULE": "config.settings", "GLIBC_TUNABLES": TUNABLE}


def test_tunables_the_user_set_are_kept():
    env = environ_with_huge_pages({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert env == {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}


def test_the_command_line_starts_once_whatever_the_size_of_its_log(tmp_path):
    """manage.py diagnose used to start again with the tunable for a log of 8 MB or more (10-20 ms)."""
    short, large = tmp_path / "short.log", tmp_path / "job.log"
    short.write_text("exiting\n")
    with large.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024)
    for log in (short, large, tmp_path):
        probe = (
            "import os, runpy, sys; print('started', os.environ.get('GLIBC_TUNABLES'), flush=True);"
            f" sys.argv = ['manage.py', 'diagnose', {str(log)!r}, '--help']; runpy.run_path('manage.py', run_name='__main__')"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=REPO, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
        )
        assert out.stdout.split()[:2] == ["started", "None"]
        assert out.stdout.count("started") == 1
