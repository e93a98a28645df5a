"""How much memory this machine has left for a new process: sizes the site's workers (config/serve.py) and the
command line's (kb/cli.py). A module of its own, so the command line's start-up does not import the server's
launcher (subprocess, signal, shutil: 13 ms)."""

from __future__ import annotations

import os
from pathlib import Path


def memory_available_bytes() -> int:
    """MemAvailable, or less where a cgroup (a container, a systemd slice) caps this process's memory."""
    available = None
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            available = int(line.split()[1]) * 1024
    if available is None:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    cgroup = Path("/sys/fs/cgroup")
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            available = min(available, int(limit) - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(0, available)
