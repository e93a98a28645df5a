"""Stage 1 for Open MPI: the help texts (help-*.txt) that mpirun/orterun and the MPI libraries print, per release.

Usage: .venv/bin/python tools/catalogue/harvest_openmpi.py --mirror /work/.mirror/open-mpi+ompi/repo
Writes content/catalogue/harvest/openmpi.tsv.

A help file is a list of `[topic]` sections; opal_show_help prints a section's text with printf fields filled, line
for line, between two rules of dashes. Each section is one row, its text the format. In 5.x the run-time (PRRTE) is
a separate repository, so its texts (mpirun's own) are not among the 5.x rows.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from names_git import last_patch_tags  # noqa: E402
from common import HARVEST_DIR, HarvestRow, git, harvest_write  # noqa: E402

TOPIC = re.compile(r"^\[([^\]]+)\]\s*$")


def sections(text: str) -> list[tuple[int, str, str]]:
    """(line, topic, text) of every section; '#' lines are comments."""
    out: list[tuple[int, str, str]] = []
    topic: str | None = None
    start = 0
    body: list[str] = []

    def close() -> None:
        if topic is not None:
            message = "\n".join(body).strip("\n")
            if message.strip():
                out.append((start, topic, message))

    for number, line in enumerate(text.splitlines(), 1):
        m = TOPIC.match(line)
        if m:
            close()
            topic, start, body = m.group(1), number, []
        elif topic is not None and not line.startswith("#"):
            body.append(line.rstrip())
    close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of an open-mpi/ompi mirror")
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "openmpi.tsv")
    args = parser.parse_args()
    rows: list[HarvestRow] = []
    for tag in last_patch_tags(str(args.mirror), "4.0", "99.99"):
        names = [
            n
            for n in git(args.mirror, "ls-tree", "-r", "--name-only", tag).decode().splitlines()
            if re.search(r"(^|/)help-[^/]*\.txt$", n)
        ]
        for name in names:
            text = git(args.mirror, "show", f"{tag}:{name}").decode("utf-8", "replace")
            for line, _topic, message in sections(text):
                rows.append(HarvestRow(tag[1:], name, line, "unknown", "printf", tag, message))
        print(tag, len(rows), file=sys.stderr)
    harvest_write(args.out, rows)


if __name__ == "__main__":
    main()
