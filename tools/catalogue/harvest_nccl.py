"""Stage 1 for NCCL: read every WARN/INFO/VERSION format string from NVIDIA/nccl's src/ at one tag per minor release.

Usage: .venv/bin/python tools/catalogue/harvest_nccl.py --mirror /work/.mirror/NVIDIA+nccl/repo
Writes content/catalogue/harvest/nccl.tsv. TRACE is left out: it is compiled only into debug builds.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HARVEST_DIR, HarvestRow, c_format_argument, call_arguments, harvest_write, line_of, release_key  # noqa: E402

# One tag per minor release: the last patch of each 2.x minor from 2.4 on, plus the first stored 2.30 patch.
EXTRA_TAGS = ("v2.30.3-1",)
FIRST_MINOR = (2, 3)  # 2.3.7 too: old pastes still show its wording
SOURCE_SUFFIXES = (".cc", ".cu", ".cpp", ".c", ".h", ".hpp", ".cuh")

# macro → (severity, index of the format argument)
CALLS = {"WARN": ("WARN", 0), "INFO": ("INFO", 1), "INFO_LOC": ("INFO", 1), "INFO_LOC_FN": ("INFO", 4), "VERSION": ("VERSION", 0)}
CALL_RE = re.compile(r"\b(WARN|INFO|INFO_LOC|INFO_LOC_FN|VERSION)\s*\(")
# The version banner is a macro of literals and STR(number) pieces: numbers print as %d, the suffix as %s.
VERSION_DEFINE_RE = re.compile(r"#define\s+VERSION_STRING[ \t]+((?:\\\n|[^\n])*)")


def git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(mirror), *args], input=data, capture_output=True, check=True).stdout


def release_tags(mirror: Path) -> list[str]:
    """The last v2.<minor>.<patch>-<n> tag of every minor from FIRST_MINOR on, plus EXTRA_TAGS."""
    best: dict[tuple[int, int], tuple[tuple[int, ...], str]] = {}
    for tag in git(mirror, "tag").decode().split():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)-(\d+)", tag)
        if not m:
            continue
        key = tuple(int(x) for x in m.groups())
        minor = key[:2]
        if minor < FIRST_MINOR:
            continue
        if minor not in best or best[minor][0] < key:
            best[minor] = (key, tag)
    tags = {tag for _, tag in best.values()} | set(EXTRA_TAGS)
    return sorted(tags, key=release_key)


def tag_release(tag: str) -> str:
    return re.fullmatch(r"v(\d+\.\d+\.\d+)-\d+", tag).group(1)


def files_at(mirror: Path, tag: str) -> dict[str, str]:
    names = [
        n
        for n in git(mirror, "ls-tree", "-r", "--name-only", tag, "--", "src").decode().splitlines()
        if n.endswith(SOURCE_SUFFIXES)
    ]
    batch = git(mirror, "cat-file", "--batch", data="".join(f"{tag}:{n}\n" for n in names).encode())
    out: dict[str, str] = {}
    pos = 0
    for name in names:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        out[name] = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        pos = header_end + 1 + size + 1
    return out


def version_macros(text: str) -> str | None:
    m = VERSION_DEFINE_RE.search(text)
    if not m:
        return None
    body = re.sub(r"\bSTR\(\s*\w+\s*\)", '"%d"', m.group(1))
    body = body.replace("NCCL_SUFFIX", '"%s"')
    return c_format_argument(body.replace("\\\n", " "))


def macro_parameters(text: str, index: int) -> list[str]:
    """The parameters of the #define whose body holds `index` (lines joined by backslashes); [] outside one."""
    start = text.rfind("\n", 0, index) + 1
    while start > 1 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    m = re.match(r"\s*#\s*define\s+\w+\(([^)]*)\)", text[start:index])
    return [p.strip() for p in m.group(1).split(",") if p.strip() and p.strip() != "..."] if m else []


def harvest_file(release: str, tag: str, name: str, text: str) -> list[HarvestRow]:
    rows = []
    for m in CALL_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\b", text[line_start : m.start()]):
            continue  # the macro's own definition
        severity, index = CALLS[m.group(1)]
        parsed = call_arguments(text, m.end() - 1)
        if parsed is None or len(parsed[0]) <= index:
            continue
        argument = parsed[0][index]
        # Inside a macro, a parameter spliced into the format ("Call to " name, or #call) prints its text: a %s field.
        parameters = macro_parameters(text, m.start())
        if parameters:
            pattern = re.compile(r"#?\s*\b(?:" + "|".join(map(re.escape, parameters)) + r")\b")
            parts = re.split(r'("(?:[^"\\\n]|\\.)*")', argument)  # literals at odd indexes stay as they are
            argument = "".join(part if i % 2 else pattern.sub(' "%s" ', part) for i, part in enumerate(parts))
        fmt = c_format_argument(argument)
        if fmt is None:
            continue
        rows.append(HarvestRow(release, name, line_of(text, m.start()), severity, "printf", tag, fmt))
    banner = version_macros(text)
    if banner:
        rows.append(HarvestRow(release, name, line_of(text, text.index("VERSION_STRING")), "VERSION", "printf", tag, banner))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of an NVIDIA/nccl mirror")
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "nccl.tsv")
    args = parser.parse_args()
    rows: list[HarvestRow] = []
    for tag in release_tags(args.mirror):
        release = tag_release(tag)
        for name, text in files_at(args.mirror, tag).items():
            rows.extend(harvest_file(release, tag, name, text))
        print(tag, len(rows), file=sys.stderr)
    harvest_write(args.out, rows)


if __name__ == "__main__":
    main()
