"""Stage 1 of the TransformerEngine names catalogue: the environment variables each release reads, from git tags.

Why from tags: TE's variables (NVTE_*, UB_*) are read in Python, C++ and the build scripts; the repository at the
release tag is the source. One tag per minor release (its last patch), v0.8 to the latest v2.x.

Rule (transformer_engine/, setup.py and build_tools/ at each tag, tests and examples left out): a literal NAME
passed to a reader: os.getenv, os.environ.get / .setdefault / [..], `"NAME" in os.environ`, and getenv in C++
(std::getenv, getenv<T>, transformer_engine::getenv<T>). Literals in messages or enum names are not reads. A read
through a variable (cuda_runtime.cpp's search_paths list) is missed.

Usage: .venv/bin/python tools/catalogue/names_transformer_engine.py /work/.mirror/NVIDIA+TransformerEngine/repo
Writes content/catalogue/names/harvest/transformer-engine.tsv.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import git, last_patch_tags, show  # noqa: E402

from kb.content.names_catalogue import HarvestRow, write_harvest  # noqa: E402

HARVEST = ROOT / "content/catalogue/names/harvest/transformer-engine.tsv"
SCOPE = ("transformer_engine", "setup.py", "build_tools")
SUFFIXES = (".py", ".cpp", ".cc", ".cu", ".h", ".hpp", ".cuh")
_CALL = re.compile(
    r"""(?:\bgetenv(?:\s*<[^<>()]*>)?|\benviron\.get|\benviron\.setdefault|\benviron)\s*[(\[]\s*["']([A-Z][A-Z0-9_]*)["']"""
)
_IN_ENVIRON = re.compile(r"""["']([A-Z][A-Z0-9_]*)["']\s+(?:not\s+)?in\s+os\.environ\b""")


def reads(text: str) -> set[str]:
    """Every variable one source file reads, by the rule above."""
    return set(_CALL.findall(text)) | set(_IN_ENVIRON.findall(text))


def in_scope(path: str) -> bool:
    parts = path.split("/")
    return path.endswith(SUFFIXES) and "tests" not in parts and "examples" not in parts


def harvest_tag(repo: str, tag: str) -> list[HarvestRow]:
    release = tag.lstrip("v")
    files = git(repo, "grep", "-l", "-E", "getenv|environ", tag, "--", *SCOPE).split()
    rows = []
    for spec in files:
        path = spec.split(":", 1)[1]
        if in_scope(path):
            rows += [HarvestRow(release, "env", name, path, "") for name in reads(show(repo, tag, path) or "")]
    return rows


def main() -> None:
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/NVIDIA+TransformerEngine/repo"
    rows: list[HarvestRow] = []
    for tag in last_patch_tags(repo, "0.8", "2.99"):
        found = harvest_tag(repo, tag)
        print(f"transformer-engine {tag}: {len({r.name for r in found})} names", file=sys.stderr)
        rows += found
    write_harvest(HARVEST, rows, "transformer-engine")


if __name__ == "__main__":
    main()
