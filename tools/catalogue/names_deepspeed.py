"""Stage 1 of the DeepSpeed names catalogue: the `deepspeed` launcher's flags in each release, from git tags.

Why: content tells users which `deepspeed` flags to pass; the launcher's argparse parser at the release tag is what
it accepts. One tag per minor release (its last patch), v0.5 to v0.19. Rule: every long option string of an
`add_argument(...)` call in deepspeed/launcher/runner.py (AST).

Usage: .venv/bin/python tools/catalogue/names_deepspeed.py /work/.mirror/deepspeedai+DeepSpeed/repo
Writes content/catalogue/names/harvest/deepspeed.tsv.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import add_argument_flags, last_patch_tags, show  # noqa: E402

from kb.content.names_catalogue import HarvestRow, write_harvest  # noqa: E402

HARVEST = ROOT / "content/catalogue/names/harvest/deepspeed.tsv"
LAUNCHER = "deepspeed/launcher/runner.py"


def main() -> None:
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/deepspeedai+DeepSpeed/repo"
    rows: list[HarvestRow] = []
    for tag in last_patch_tags(repo, "0.5", "0.99"):
        text = show(repo, tag, LAUNCHER)
        flags = add_argument_flags(text) if text else []
        print(f"deepspeed {tag}: {len(set(flags))} flags", file=sys.stderr)
        rows += [HarvestRow(tag.lstrip("v"), "flag", flag, LAUNCHER, "") for flag in flags]
    write_harvest(HARVEST, rows, "deepspeed")


if __name__ == "__main__":
    main()
