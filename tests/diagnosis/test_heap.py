"""The engine asks the C library to keep freed memory, so a large text's pages are reused, not faulted in again, and
the kernel to back that memory with huge pages."""

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from diagnosis.heap import freed_memory_kept

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_glibc_accepts_keeping_freed_memory_for_the_next_text():
    assert freed_memory_kept() is True


# A fresh process: which part of the heap a text lands in depends on what the process allocated before.
HUGE_PAGE_PROBE = """
import re, sys
sys.path.insert(0, '.')
from diagnosis.heap import freed_memory_kept
freed_memory_kept()
text = b'x' * (40 << 20)
middle = id(text) + (20 << 20)
for match in re.finditer(r'^([0-9a-f]+)-([0-9a-f]+) .*?VmFlags: ([^\\n]*)', open('/proc/self/smaps').read(), re.S | re.M):
    if int(match.group(1), 16) <= middle < int(match.group(2), 16):
        print(match.group(3))
"""


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or not Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size").exists(),
    reason="transparent huge pages are Linux's; mallopt glibc's",
)
def test_a_large_text_lands_on_memory_marked_for_huge_pages_without_the_glibc_tunable():
    """Without GLIBC_TUNABLES a process's heap is on 4 KB pages: the command line's workers mark theirs (`hg`)."""
    flags = subprocess.run(
        [sys.executable, "-c", HUGE_PAGE_PROBE],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "hg" in flags
