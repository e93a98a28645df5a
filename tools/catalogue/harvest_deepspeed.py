"""Stage 1 for DeepSpeed: launcher and op-builder messages from deepspeedai/DeepSpeed, one tag per minor release.

Usage: .venv/bin/python tools/catalogue/harvest_deepspeed.py --mirror /work/.mirror/deepspeedai+DeepSpeed/repo
Writes content/catalogue/harvest/deepspeed.tsv. Python is read by AST (pysource.py), as for PyTorch.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import last_patch_tags  # noqa: E402
from common import HARVEST_DIR, HarvestRow, git, harvest_write  # noqa: E402
from pysource import python_messages  # noqa: E402

# The launcher's INFO lines date restarts and name the world it starts; elsewhere only warnings, errors, raises.
WITH_INFO = re.compile(r"^deepspeed/launcher/[^/]+\.py$")
WARN_ONLY = re.compile(r"^(op_builder/[^/]+\.py|deepspeed/comm/[^/]+\.py|deepspeed/elasticity/[^/]+\.py)$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of a deepspeedai/DeepSpeed mirror")
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "deepspeed.tsv")
    args = parser.parse_args()
    rows: list[HarvestRow] = []
    for tag in last_patch_tags(str(args.mirror), "0.8", "99.99"):
        release = tag[1:]
        names = [
            n
            for n in git(args.mirror, "ls-tree", "-r", "--name-only", tag, "--", "deepspeed", "op_builder").decode().splitlines()
            if WITH_INFO.match(n) or WARN_ONLY.match(n)
        ]
        for name in names:
            text = git(args.mirror, "show", f"{tag}:{name}").decode("utf-8", "replace")
            module = name[: -len(".py")].removesuffix("/__init__").replace("/", ".")
            for msg in python_messages(text, keep_info=bool(WITH_INFO.match(name)), module=module, keep_asserts=True):
                rows.append(HarvestRow(release, name, msg.line, msg.severity, msg.style, tag, msg.format))
        print(tag, len(rows), file=sys.stderr)
    harvest_write(args.out, rows)


if __name__ == "__main__":
    main()
