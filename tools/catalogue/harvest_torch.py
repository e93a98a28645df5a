"""Stage 1 for PyTorch: message templates from release wheels (Linux x86_64, CUDA builds).

Usage: .venv/bin/python tools/catalogue/harvest_torch.py /tmp/torchlinux/torch-*.whl
Writes content/catalogue/harvest/torch.tsv.

Python modules are read by AST (pysource.py): templates with their fields. C++ (ProcessGroupNCCL, ProcessGroupGloo,
TCPStore, gloo's transport, c10's CUDA errors, CudaIPCTypes' warning) is read from the shared libraries' string tables, since the wheel
ships no C++ source: a string literal there is a piece of a message (c10::str joins pieces and values at run time),
so these rows are style `pieces`, and their file is the library plus the nearest translation unit (.cpp/.cc/.cu path) that
precedes them in the string table (the linker keeps one object file's literals together, so that path names the file that holds them
in nearly every case; it is an attribution, not a certainty).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HARVEST_DIR, HarvestRow, harvest_write  # noqa: E402
from pysource import python_messages  # noqa: E402

# Python modules read, and whether their INFO lines are kept (launcher progress lines are diagnostic: they date
# restarts and rendezvous; elsewhere INFO is noise).
PY_WITH_INFO = re.compile(
    r"^torch/distributed/(elastic/.*|run\.py|launch\.py|launcher/.*|distributed_c10d\.py|rendezvous\.py|c10d_logger\.py)$"
)
PY_WARN_ONLY = re.compile(
    r"^torch/(utils/data/.*|utils/cpp_extension\.py|utils/file_baton\.py|multiprocessing/.*|distributed/utils\.py)$"
)

# libtorch_cuda_cpp.so and libtorch_cuda_cu.so: 1.13's split of libtorch_cuda.so (CudaIPCTypes.cpp is in the _cu half).
LIBRARIES = ("libtorch_cpu.so", "libtorch_cuda.so", "libtorch_cuda_cpp.so", "libtorch_cuda_cu.so", "libc10_cuda.so", "libc10.so")
# A path as the build left it (../torch/…, /__w/pytorch/pytorch/torch/…); `strings` may glue the byte before it on
# (2.1.2's `@../torch/csrc/CudaIPCTypes.cpp`): no path starts with one character and then ../ or /.
SOURCE_PATH = re.compile(
    r"^(?:[^./]?\.\./|[^/]?/\S*?/)?((?:torch|third_party|c10|aten|caffe2)/[\w./+-]+\.(?:cpp|cc|c|h|hpp|cu|cuh))$"
)
# c10d, gloo and c10's CUDA and error units; torch/csrc/CudaIPCTypes.cpp warns when a process that shared CUDA
# tensors (a DataLoader worker, a multiprocessing producer) dies before its consumers released them.
KEEP_REGION = re.compile(
    r"(distributed/c10d/|third_party/gloo/|c10/cuda/|c10/util/(Exception|Backtrace|Logging)\.cpp|torch/csrc/CudaIPCTypes\.cpp)"
)
# Small units whose type names (mangled, emitted after their literals) end their region: the next unit's pieces can
# come before its path (torch/csrc/cuda/comm.cpp's scatter/gather messages follow CudaIPCTypes.cpp's).
CLOSED_BY_TYPEINFO = re.compile(r"torch/csrc/CudaIPCTypes\.cpp$")
MANGLED = re.compile(r"^(_Z|N\d|St\d|\*N|PF|FS|ZN|_GLOBAL__)")
MIN_PIECE = 12
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")
# A region ends this many table entries after its path even when no other path follows (the last object file of a
# library is followed by data such as CUDA fat binaries, whose bytes read as strings).
MAX_REGION = 2000


def wheel_release(path: Path) -> str:
    return re.match(r"torch-(\d+\.\d+\.\d+)", path.name).group(1)


def python_rows(wheel: zipfile.ZipFile, release: str, source: str) -> list[HarvestRow]:
    rows = []
    for name in sorted(wheel.namelist()):
        if not name.endswith(".py"):
            continue
        keep_info = bool(PY_WITH_INFO.match(name))
        if not keep_info and not PY_WARN_ONLY.match(name):
            continue
        text = wheel.read(name).decode("utf-8", "replace")
        module = name[: -len(".py")].removesuffix("/__init__").replace("/", ".")
        for msg in python_messages(text, keep_info=keep_info, module=module):
            rows.append(HarvestRow(release, name, msg.line, msg.severity, msg.style, source, msg.format))
    return rows


def is_message_piece(text: str) -> bool:
    """A string-table entry that reads as (part of) a sentence a user sees, not a symbol, path or name."""
    if len(text) < MIN_PIECE or not text.isascii() or MANGLED.match(text) or SOURCE_PATH.match(text):
        return False
    if "INTERNAL ASSERT FAILED" in text or "please report a bug to PyTorch" in text:
        return False
    words = re.findall(r"[A-Za-z]{2,}", text)
    readable = sum(ch.isalnum() or ch in " .,:;'()[]{}%=_-/<>" for ch in text) / len(text)
    return len(words) >= 2 and " " in text.strip() and readable >= 0.9 and text.lstrip()[:1] != '"'


def library_rows(wheel_path: Path, member: str, release: str) -> list[HarvestRow]:
    """Message pieces of one shared library, each attributed to the source path preceding it."""
    unzip = subprocess.Popen(["unzip", "-p", str(wheel_path), member], stdout=subprocess.PIPE)
    strings = subprocess.Popen(["strings", "-n", "8"], stdin=unzip.stdout, stdout=subprocess.PIPE)
    unzip.stdout.close()
    rows = []
    current: str | None = None
    current_at = 0
    library = member.rsplit("/", 1)[-1]
    index = 0
    for raw in strings.stdout:
        index += 1
        text = raw.decode("ascii", "replace").rstrip("\n")
        m = SOURCE_PATH.match(text)
        if m:
            if not m.group(1).endswith(HEADER_SUFFIXES):  # a header's literals sit inside the including file's
                current, current_at = m.group(1), index
            continue
        if current and CLOSED_BY_TYPEINFO.search(current) and MANGLED.match(text):
            current = None  # the unit's type names close its literals: what follows is the next unit's
            continue
        if current and index - current_at <= MAX_REGION and KEEP_REGION.search(current) and is_message_piece(text):
            # the line column holds the string's rank in the table: stable for a given binary, and it keeps order
            rows.append(HarvestRow(release, f"{library}#{current}", index, "unknown", "pieces", wheel_path.name, text))
    strings.wait()
    unzip.wait()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "torch.tsv")
    args = parser.parse_args()
    rows: list[HarvestRow] = []
    for wheel_path in sorted(args.wheels):
        release = wheel_release(wheel_path)
        with zipfile.ZipFile(wheel_path) as wheel:
            rows.extend(python_rows(wheel, release, wheel_path.name))
            members = [n for n in wheel.namelist() if n.startswith("torch/lib/") and n.rsplit("/", 1)[-1] in LIBRARIES]
        for member in sorted(members):
            rows.extend(library_rows(wheel_path, member, release))
        print(wheel_path.name, len(rows), file=sys.stderr)
    harvest_write(args.out, rows)


if __name__ == "__main__":
    main()
