"""The engine asks the C library to keep freed memory, so a large text's pages are reused, not faulted in again."""

import platform

import pytest

from kb.diagnosis.heap import freed_memory_kept


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_glibc_accepts_keeping_freed_memory_for_the_next_text():
    assert freed_memory_kept() is True
