"""Transparent huge pages for the processes that read large logs (the command line, `make bench`, gunicorn).

Diagnosing a 50 MB log decodes it into a fresh 50 MB buffer and, for progress bars, cleans it into another.
Touching fresh memory 4 KB at a time is most of that cost: on the development machine (kernel THP in
`madvise` mode, as Debian and Ubuntu ship it) decoding 50 MB took 25 ms, and 8 ms with huge pages. glibc
(2.35 and later) asks the kernel for them for its large allocations when the tunable below is set; it reads
tunables when a process starts, so it must be in the environment a process starts with. Elsewhere (another
libc, THP off or `always`) the variable changes nothing.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Mapping

TUNABLE = "glibc.malloc.hugetlb=1"
# From this size an input's decoding pays for the restart (about 30 ms): on a 600 MB log huge pages saved 70 ms
# (850-1029 ms against 919-1113, in turns), while a 3-line log answered in 169-175 ms without it and 199-203 ms with.
LARGE_INPUT_BYTES = 8 * 1024 * 1024


def environ_with_huge_pages(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for a child process, with the tunable unless the user set GLIBC_TUNABLES themselves."""
    env = dict(environ)
    if sys.platform.startswith("linux") and "GLIBC_TUNABLES" not in env:
        env["GLIBC_TUNABLES"] = TUNABLE
    return env


def large_input_named(args: list[str]) -> bool:
    """Whether command-line arguments name an input worth huge pages: standard input or a folder (of unknown size),
    or a file of LARGE_INPUT_BYTES or more. Options and their values name no existing path and are passed over."""
    for arg in args:
        if arg == "-":
            return True
        try:
            status = os.stat(arg)
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(status.st_mode) or status.st_size >= LARGE_INPUT_BYTES:
            return True
    return False


def environ_as_the_user_started(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without the tunable this module added at a restart: what a command started from the user's
    shell gets (`make bench` times the command line as a user runs it, restart included)."""
    return {key: value for key, value in environ.items() if not (key == "GLIBC_TUNABLES" and value == TUNABLE)}


def restart_with_huge_pages() -> None:
    """Start this process again with the tunable (once: the restarted process finds it set). About 30 ms."""
    env = environ_with_huge_pages(os.environ)
    if env.get("GLIBC_TUNABLES") == os.environ.get("GLIBC_TUNABLES"):
        return
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
