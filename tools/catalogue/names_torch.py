"""Stage 1 of the PyTorch names catalogue: harvest (release, kind, name, file, alias_of) rows from release wheels.

Why by script from wheels: the knowledge base's release ranges must be what each release really reads, not what a
page remembers (issue 32). Each release's wheels are downloaded from PyPI, read, and deleted (disk).

Sources per release (names_README.md in this folder gives the commands):

- macOS arm64 wheel (small; no CUDA code):
  - Python, every `torch/**.py` but the test helpers under torch/testing/: a string literal that is an environment-variable name (kb.content.names.is_env_name)
    on a line that reads the environment (`environ`, `getenv`, `get_env`). `torch/distributed/**.py`: every long
    option string of an `add_argument(...)` call (AST), kind flag: torchrun (run.py), the older launch.py, and the
    Flight Recorder analyzer (torchfrtrace, flight_recorder/components/config_manager.py).
  - C++ headers under `torch/include/torch/csrc/distributed/`: every string literal that is a name. A brace list of
    two or more such literals (`std::vector<std::string> X = {"A", "B"}` or `getCvarBool({"A", "B"}, ...)`) is a
    cvar list: c10d/Utils.hpp's getCvar* read env[0] and warn "Environment variable env[i] is deprecated; use env[0]
    instead" for i > 0, so B is a deprecated alias of A.
  - `torch/lib/*.dylib`: every NUL-delimited string literal that is a name (what `strings` shows as a whole line).
    Two such literals stored one after the other, "A\\0B\\0", are taken as a cvar list {A, B} (A current) only when
    A starts with TORCH_, A != B and both end with the same two `_`-words (TORCH_FR_BUFFER_SIZE then
    TORCH_NCCL_TRACE_BUFFER_SIZE): Apple's linker keeps an initializer list's literals in source order, and the
    two-word rule keeps unrelated neighbours out.
- manylinux x86_64 wheel (with CUDA): NUL-delimited literals of libtorch_cuda.so and libtorch_cpu.so, for code that
  the macOS build does not compile (ProcessGroupNCCL.cpp, NCCLUtils.cpp). GNU ld merges a literal into the tail of a
  longer one (NCCL_BLOCKING_WAIT inside TORCH_NCCL_BLOCKING_WAIT), so absence there proves nothing: a name counts
  as read when any source of the release has it.

Usage: .venv/bin/python tools/catalogue/names_torch.py [--release 2.8.0 ...] [--no-linux]
Writes content/catalogue/names/harvest/torch.tsv (rows of releases not harvested this run are kept).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import add_argument_flags  # noqa: E402

from kb.content.names import is_env_name  # noqa: E402
from kb.content.names_catalogue import HarvestRow, read_harvest, write_harvest  # noqa: E402

RELEASES = (
    "1.13.1",
    "2.0.1",
    "2.1.2",
    "2.2.2",
    "2.3.1",
    "2.4.1",
    "2.5.1",
    "2.6.0",
    "2.7.1",
    "2.8.0",
    "2.9.1",
    "2.10.0",
    "2.11.0",
    "2.12.1",
    "2.13.0",
    "2.14.1",
    "2.15.0",
)
HARVEST = ROOT / "content/catalogue/names/harvest/torch.tsv"
PLATFORMS = {
    "macos": ("macosx_11_0_arm64", "macosx_12_0_arm64", "macosx_13_0_arm64", "macosx_14_0_arm64", "macosx_15_0_arm64"),
    "linux": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"),
}
TEST_CODE = "torch/testing/"  # the test suite's helpers set and read variables; the release does not
LINUX_LIBS = ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_cpu.so")

_PY_READS = re.compile(r"environ|getenv|get_env")
_QUOTED = re.compile(r"""["']([A-Z][A-Z0-9_]*)["']""")
_CXX_LITERAL = re.compile(r'"([A-Z][A-Z0-9_]*)"')
_BRACE_LIST = re.compile(r'\{\s*("[A-Z][A-Z0-9_]*"(?:\s*,\s*"[A-Z][A-Z0-9_]*")+)\s*,?\s*\}')
_C_STRING = re.compile(rb"(?<=\x00)([A-Z][A-Z0-9_]{2,100})\x00")
CHUNK = 64 << 20


def download(release: str, platform: str, into: Path) -> Path:
    """One wheel of `release` for `platform`, from PyPI via pip (cp311, or cp310 for releases without cp311). A
    machine-wide pip config (this host constrains installs to torch<=2.14.1) is not loaded: the wheel is
    only read and deleted, never installed."""
    for python in ("3.11", "3.10"):
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             *(a for tag in PLATFORMS[platform] for a in ("--platform", tag)),
             "--python-version", python, f"torch=={release}", "-d", str(into), "-q"],
            capture_output=True, text=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
        )  # fmt: skip
        wheels = sorted(into.glob(f"torch-{release}-*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
    raise SystemExit(f"no {platform} wheel for torch {release}: {done.stderr.strip()[-400:]}")


def python_rows(release: str, path: str, text: str) -> Iterator[HarvestRow]:
    for line in text.splitlines():
        if _PY_READS.search(line):
            for name in _QUOTED.findall(line):
                if is_env_name(name):
                    yield HarvestRow(release, "env", name, path, "")
    if path.startswith("torch/distributed/") and "add_argument" in text:
        yield from (HarvestRow(release, "flag", flag, path, "") for flag in add_argument_flags(text))


def header_rows(release: str, path: str, text: str) -> Iterator[HarvestRow]:
    code = re.sub(r"//[^\n]*", "", text)
    for name in _CXX_LITERAL.findall(code):
        if is_env_name(name):
            yield HarvestRow(release, "env", name, path, "")
    for match in _BRACE_LIST.finditer(code):
        names = _CXX_LITERAL.findall(match.group(1))
        if all(is_env_name(n) for n in names):
            yield from (HarvestRow(release, "env", old, path, names[0]) for old in names[1:] if old != names[0])


def _same_tail(a: str, b: str) -> bool:
    return a != b and a.split("_")[-2:] == b.split("_")[-2:] and len(a.split("_")) > 2 and len(b.split("_")) > 2


def binary_literals(stream, pairs: bool) -> tuple[set[str], set[tuple[str, str]]]:
    """NUL-delimited name literals of a binary read in chunks, and (when `pairs`) adjacent cvar-list pairs."""
    names: set[str] = set()
    adjacent: set[tuple[str, str]] = set()
    tail = b"\x00"
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        data = tail + chunk
        cut = data.rfind(b"\x00")
        previous, previous_end = "", -1
        for match in _C_STRING.finditer(data, 0, cut + 1):
            name = match.group(1).decode()
            if not is_env_name(name):
                previous_end = -1
                continue
            names.add(name)
            if pairs and match.start() == previous_end and previous.startswith("TORCH_") and _same_tail(previous, name):
                adjacent.add((previous, name))
            previous, previous_end = name, match.end()
        tail = data[cut:]
    return names, adjacent


def harvest_macos(release: str, wheel: Path) -> Iterator[HarvestRow]:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = info.filename
            if path.endswith(".py") and path.startswith("torch/") and not path.startswith(TEST_CODE):
                yield from python_rows(release, path, archive.read(info).decode("utf-8", "replace"))
            elif path.startswith("torch/include/torch/csrc/distributed/") and path.endswith((".hpp", ".h")):
                yield from header_rows(release, path, archive.read(info).decode("utf-8", "replace"))
            elif path.startswith("torch/lib/") and path.endswith(".dylib"):
                with archive.open(info) as stream:
                    names, adjacent = binary_literals(stream, pairs=True)
                yield from (HarvestRow(release, "env", n, path, "") for n in names)
                yield from (HarvestRow(release, "env", old, path, new) for new, old in adjacent)


def harvest_linux(release: str, wheel: Path) -> Iterator[HarvestRow]:
    with zipfile.ZipFile(wheel) as archive:
        present = set(archive.namelist())
        for path in LINUX_LIBS:
            if path in present:
                with archive.open(path) as stream:
                    names, _ = binary_literals(stream, pairs=False)
                yield from (HarvestRow(release, "env", n, path, "") for n in names)


def harvest(release: str, linux: bool) -> list[HarvestRow]:
    rows: list[HarvestRow] = []
    for platform in ("macos", "linux") if linux else ("macos",):
        scratch = Path(tempfile.mkdtemp(prefix=f"names-torch-{release}-"))
        try:
            wheel = download(release, platform, scratch)
            rows += (harvest_macos if platform == "macos" else harvest_linux)(release, wheel)
        finally:
            shutil.rmtree(scratch)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", help="harvest only these releases (default: all of RELEASES)")
    parser.add_argument("--no-linux", action="store_true", help="skip the manylinux wheel (its CUDA libraries)")
    args = parser.parse_args()
    releases = args.release or list(RELEASES)
    kept = [r for r in read_harvest(HARVEST) if r.release not in releases] if HARVEST.exists() else []
    for release in releases:
        rows = harvest(release, linux=not args.no_linux)
        print(f"torch {release}: {len({(r.kind, r.name) for r in rows})} names", file=sys.stderr, flush=True)
        kept += rows
        write_harvest(HARVEST, kept, "torch")


if __name__ == "__main__":
    main()
