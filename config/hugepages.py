"""Transparent huge pages for gunicorn's workers, which decode uploads of up to 50 MB.

Diagnosing a 50 MB log decodes it into a fresh 50 MB buffer and, for progress bars, cleans it into another.
Touching fresh memory 4 KB at a time is most of that cost: on the development machine (kernel THP in
`madvise` mode, as Debian and Ubuntu ship it) decoding 50 MB took 25 ms, and 8 ms with huge pages. glibc
(2.35 and later) asks the kernel for them for its large allocations when the tunable below is set; it reads
tunables when a process starts, so it must be in the environment a process starts with. Elsewhere (another
libc, THP off or `always`) the variable changes nothing. The command line, already running when it learns it reads
a large log, marks its heap for huge pages itself (diagnosis/heap.py).
"""

from __future__ import annotations

import sys
from typing import Mapping

TUNABLE = "glibc.malloc.hugetlb=1"


def environ_with_huge_pages(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for a child process, with the tunable unless the user set GLIBC_TUNABLES themselves."""
    env = dict(environ)
    if sys.platform.startswith("linux") and "GLIBC_TUNABLES" not in env:
        env["GLIBC_TUNABLES"] = TUNABLE
    return env
