"""Keep freed memory in the process, on huge pages, so that the next large text reuses pages instead of faulting them in.

glibc serves each allocation over its mmap threshold (at most 32 MiB by default) with a fresh mapping and gives it
back to the kernel when it is freed; the next such allocation then faults in every page again. A 50 MB log's
text is one such allocation. On this project's 2-core machine decoding it took 27-30 ms on fresh 4 KB pages, 8-9 ms
on fresh huge pages and 4 ms on reused ones; each window of a larger file paid the same again. Raising the
thresholds keeps that memory in the heap for the next window or the next request, so a process holds on to about
its largest diagnosis's peak (a gunicorn worker is budgeted for that anyway: config/serve.py).

Huge pages: glibc asks for them with its `glibc.malloc.hugetlb=1` tunable, which it reads only when a process starts
(gunicorn's workers are started with it, config/hugepages.py). A process already running, the command line and its
workers above all, marks the first HUGE_HEAP_BYTES of its heap for them instead: it takes that much from the heap,
asks the kernel for huge pages there and frees it, so the large texts that follow are placed in it. Starting the
command line again with the tunable used to cost 10-20 ms of its 0.6 s on a 600 MB log.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

REUSE_BYTES = 256 * 1024 * 1024  # allocations up to this size come from the heap; this much free memory is kept
_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


@functools.lru_cache(maxsize=1)
def freed_memory_kept() -> bool:
    """Ask the C library to keep freed memory up to REUSE_BYTES (once per process); False where it is not
    glibc or refuses, and then nothing changes but speed."""
    try:
        libc = ctypes.CDLL(None)  # the C library the interpreter runs on
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # no C library to ask (Windows), or no mallopt in it (macOS)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    kept = bool(mallopt(_M_MMAP_THRESHOLD, REUSE_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, REUSE_BYTES))
    if kept:
        heap_on_huge_pages(libc)
    return kept


# Below REUSE_BYTES, so that freeing it keeps it in the heap; above what a worker of the command line holds at its
# peak (118-140 MB on a 600 MB log, cli.WORKER_BYTES).
HUGE_HEAP_BYTES = 160 * 1024 * 1024
_MADV_HUGEPAGE = 14  # Linux's
_HUGE_PAGE_SIZE = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")


def heap_on_huge_pages(libc: ctypes.CDLL) -> bool:
    """Mark the next HUGE_HEAP_BYTES of the heap for transparent huge pages (see the module's docstring); False where
    the kernel has none or refuses. Nothing is touched: pages are faulted in, huge, when a text first uses them."""
    try:
        page = int(_HUGE_PAGE_SIZE.read_text())
    except (OSError, ValueError):  # not Linux, or a kernel without transparent huge pages
        return False
    malloc, free, madvise = libc.malloc, libc.free, libc.madvise
    malloc.argtypes, malloc.restype = (ctypes.c_size_t,), ctypes.c_void_p
    free.argtypes, free.restype = (ctypes.c_void_p,), None
    madvise.argtypes, madvise.restype = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int), ctypes.c_int
    block = malloc(HUGE_HEAP_BYTES)
    if not block:
        return False
    try:
        start = -(-block // page) * page  # the first huge page wholly inside the block
        return madvise(start, (block + HUGE_HEAP_BYTES - start) // page * page, _MADV_HUGEPAGE) == 0
    finally:
        free(block)
