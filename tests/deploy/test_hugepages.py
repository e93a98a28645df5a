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
