"""The virtualenv holds exactly the versions requirements*.txt pin: a bump (nh3, setuptools past the 65.5 that
Python's venv ships) is only real once the environment the tests run in has it."""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pins() -> list[tuple[str, str]]:
    found = []
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                package, pinned = line.split("==", 1)
                found.append((package.strip(), pinned.strip()))
    return found


@pytest.mark.parametrize("package, pinned", pins(), ids=[p for p, _ in pins()])
def test_the_virtualenv_has_the_pinned_version(package, pinned):
    try:
        installed = version(package)
    except PackageNotFoundError:
        installed = None
    assert installed == pinned, f"{package}: {installed} installed, {pinned} pinned; run make install-dev"
