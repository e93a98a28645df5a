"""Stage 1 of the NCCL names catalogue: harvest the environment variables each NCCL release reads, from git tags.

Why from tags: NCCL ships as a library without sources in most wheels; the repository at the release tag is the
source of what that release reads. One tag per minor release (its last patch), v2.4 to v2.30.

Rules (src/ only, at each tag; names_README.md in this folder gives the commands):
- `NCCL_PARAM(Name, "SUFFIX", default)` defines a parameter read from the variable "NCCL_" + SUFFIX
  (src/include/param.h: ncclLoadParam("NCCL_" env, ...)). The macro pastes the string as written, so 2.14-2.15's
  NCCL_PARAM(AllocP2pNetLLBuffers, "NCCL_ALLOC_P2P_NET_LL_BUFFERS", 0) really read NCCL_NCCL_ALLOC_P2P_NET_LL_BUFFERS.
- `DEFINE_NCCL_PARAM(name, type, KEY, ...)` (2.30's param registry, src/include/param/param.h) reads KEY.
- a literal "NCCL_X" passed to a reader: getenv, getEnvFunc (debug.cc from 2.28), ncclGetEnv, ncclGetLevel (NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL),
  getNthreads (NCCL_NTHREADS), or os.environ.get in the build's Python generators. Literals in log or error
  messages are not reads.

Usage: .venv/bin/python tools/catalogue/names_nccl.py /work/.mirror/NVIDIA+nccl/repo
Writes content/catalogue/names/harvest/nccl.tsv.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kb.content.names_catalogue import HarvestRow, release_key, write_harvest  # noqa: E402

HARVEST = ROOT / "content/catalogue/names/harvest/nccl.tsv"
FIRST_MINOR, LAST_MINOR = 4, 30
_TAG = re.compile(r"^v2\.(\d+)\.(\d+)-(\d+)$")
_PARAM = re.compile(r'\bNCCL_PARAM\(\s*\w+\s*,\s*"([A-Z0-9_]+)"')
_DEFINE = re.compile(r"\bDEFINE_NCCL_PARAM\(\s*\w+\s*,[^,]+,\s*(NCCL_[A-Z0-9_]+)\s*,")
_READER = re.compile(r"\b(?:getenv|getEnvFunc|ncclGetEnv|ncclGetLevel|getNthreads|environ\.get)\s*\(([^;{}]*)")
_LITERAL = re.compile(r'"(NCCL_[A-Z0-9_]*[A-Z0-9])"')


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def release_tags(repo: str) -> list[str]:
    """The last patch tag of each minor release 2.FIRST_MINOR .. 2.LAST_MINOR."""
    last: dict[int, tuple[tuple[int, int], str]] = {}
    for tag in git(repo, "tag").split():
        match = _TAG.match(tag)
        if match and FIRST_MINOR <= int(match.group(1)) <= LAST_MINOR:
            minor, patch, build = map(int, match.groups())
            if minor not in last or (patch, build) > last[minor][0]:
                last[minor] = ((patch, build), tag)
    return [last[m][1] for m in sorted(last)]


def reads(text: str) -> set[str]:
    """Every NCCL variable one source file reads, by the rules above."""
    names = {"NCCL_" + suffix for suffix in _PARAM.findall(text)} | set(_DEFINE.findall(text))
    for call in _READER.finditer(text):
        names.update(_LITERAL.findall(call.group(1)))
    return names


def harvest_tag(repo: str, tag: str) -> list[HarvestRow]:
    release = re.sub(r"^v|-\d+$", "", tag)
    files = git(repo, "grep", "-l", "-E", r'NCCL_PARAM\(|"NCCL_', tag, "--", "src").split()
    rows = []
    for spec in files:
        path = spec.split(":", 1)[1]
        if path == "src/include/param.h":
            continue  # the macro's definition, not a parameter
        for name in reads(git(repo, "show", spec)):
            rows.append(HarvestRow(release, "env", name, path, ""))
    return rows


def main() -> None:
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/NVIDIA+nccl/repo"
    rows: list[HarvestRow] = []
    for tag in release_tags(repo):
        found = harvest_tag(repo, tag)
        print(f"nccl {tag}: {len({r.name for r in found})} names", file=sys.stderr)
        rows += found
    write_harvest(HARVEST, sorted(rows, key=lambda r: release_key(r.release)), "nccl")


if __name__ == "__main__":
    main()
