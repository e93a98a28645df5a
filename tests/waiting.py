"""Waiting in tests for something another process does, without sleeping a fixed time."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(condition: Callable[[], object], seconds: float = 15) -> object:
    """The condition's value once it is true, or its last value after `seconds` (a busy machine is slow, not broken)."""
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value
