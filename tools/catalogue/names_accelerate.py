"""Stage 1 of the accelerate names catalogue: `accelerate launch` flags in each release, from git tags.

Why: content tells users which `accelerate launch` flags to pass; the argparse parser at the release tag is what it
accepts. One tag per minor release (its last patch), v0.20 to the latest v1.x. Rule: every long option string of an
`add_argument(...)` call in src/accelerate/commands/launch.py (AST).

Usage: .venv/bin/python tools/catalogue/names_accelerate.py /work/.mirror/huggingface+accelerate/repo
Writes content/catalogue/names/harvest/accelerate.tsv.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import launcher_flags  # noqa: E402

from kb.content.names_catalogue import write_harvest  # noqa: E402

HARVEST = ROOT / "content/catalogue/names/harvest/accelerate.tsv"
LAUNCH = "src/accelerate/commands/launch.py"


def main() -> None:
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/huggingface+accelerate/repo"
    rows = launcher_flags(repo, LAUNCH, "0.20", "1.99", "accelerate")
    write_harvest(HARVEST, rows, "accelerate")


if __name__ == "__main__":
    main()
