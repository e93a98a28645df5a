"""Stage 1 for NVIDIA's NCCL net plugin (Mellanox/nccl-rdma-sharp-plugins, shipped in HPC-X as libnccl-net.so).

Usage: .venv/bin/python tools/catalogue/harvest_ncclrdmasharp.py --mirror /work/.mirror/Mellanox+nccl-rdma-sharp-plugins/repo
Writes content/catalogue/harvest/ncclrdmasharp.tsv. The plugin logs through NCCL's own logger with NCCL's WARN and
INFO macros, so its src/ is read exactly as NCCL's is (harvest_nccl.harvest_file), at the last tag of each minor.
Its lines carry NCCL's prefix (`NCCL INFO Plugin Path : …`) but its own release numbers: a program of its own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HARVEST_DIR  # noqa: E402
from harvest_nccl import tags_harvest  # noqa: E402
from names_git import last_patch_tags  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of a nccl-rdma-sharp-plugins mirror")
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "ncclrdmasharp.tsv")
    args = parser.parse_args()
    tags = last_patch_tags(str(args.mirror), "1.0", "99.99")
    tags_harvest(args.mirror, {tag: tag.removeprefix("v") for tag in tags}, args.out)


if __name__ == "__main__":
    main()
