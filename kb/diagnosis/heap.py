"""Keep freed memory in the process, so that the next large text reuses pages instead of faulting them in.

glibc serves each allocation over its mmap threshold (at most 32 MiB by default) with a fresh mapping and gives it
back to the kernel when it is freed; the next such allocation then faults in every page again. A 50 MB log's
text is one such allocation. On this project's 2-core machine decoding it took 27-30 ms on fresh 4 KB pages, 8-9 ms
on fresh huge pages (config/hugepages.py, as the command line and gunicorn run) and 4 ms on reused ones; each
window of a larger file paid the same again. Raising the thresholds keeps that memory in the heap for the next
window or the next request, so a process holds on to about its largest diagnosis's peak (a gunicorn worker is
budgeted for that anyway: config/serve.py).
"""

from __future__ import annotations

import ctypes
import functools

REUSE_BYTES = 256 * 1024 * 1024  # allocations up to this size come from the heap; this much free memory is kept
_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


@functools.lru_cache(maxsize=1)
def freed_memory_kept() -> bool:
    """Ask the C library to keep freed memory up to REUSE_BYTES (once per process); False where it is not
    glibc or refuses, and then nothing changes but speed."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError, TypeError):  # no C library to ask (Windows), or no mallopt in it (macOS)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, REUSE_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, REUSE_BYTES))
