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

from names_git import launcher_flags  # noqa: E402

from kb.content.names_catalogue import write_harvest  # noqa: E402

HARVEST = ROOT / "content/catalogue/names/harvest/deepspeed.tsv"
LAUNCHER = "deepspeed/launcher/runner.py"


def main() -> None:
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/deepspeedai+DeepSpeed/repo"
    rows = launcher_flags(repo, LAUNCHER, "0.5", "0.99", "deepspeed")
    write_harvest(HARVEST, rows, "deepspeed")


if __name__ == "__main__":
    main()
