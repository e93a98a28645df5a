"""Score one labelled paste set (tests/fixtures/pastes/<set>/expected.yaml) with the shared scorer, as a user's
command line would answer it: `manage.py diagnose FILE --json --top 3` per paste, from the published build.

    .venv/bin/python tools/paste_set_score.py tests/fixtures/pastes/heldout6 [-v]

The set's expected.yaml (file, primary, acceptable) becomes the scorer's corpus.yaml in a temporary folder beside
links to the pastes, so the same scorer that runs on ../shared/eval-dev and on hidden sets scores it: top1, hit3,
negatives, the share of failures given a confident answer, and how many of those answers were right. Run
`make run` (or `manage.py load_content`) first: the command line answers from the published build.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCORER = ROOT.parent / "shared" / "eval-dev" / "score.py"


def corpus_write(paste_set: Path, folder: Path) -> int:
    """corpus.yaml for the scorer, and a link to each paste; returns the number of entries."""
    entries = yaml.safe_load((paste_set / "expected.yaml").read_text(encoding="utf-8"))
    corpus = []
    for entry in entries:
        (folder / entry["file"]).symlink_to((paste_set / entry["file"]).resolve())
        corpus.append(
            {
                "id": Path(entry["file"]).stem,
                "file": entry["file"],
                "acceptable": list(entry.get("acceptable") or []),
                "primary": entry.get("primary"),
            }
        )
    (folder / "corpus.yaml").write_text(yaml.safe_dump(corpus, sort_keys=False), encoding="utf-8")
    return len(corpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paste_set", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if not SCORER.exists():
        print(f"the shared scorer is not at {SCORER}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        count = corpus_write(args.paste_set, Path(tmp))
        print(f"{args.paste_set}: {count} pastes")
        command = [sys.executable, str(SCORER), tmp, "--project", str(ROOT)] + (["-v"] if args.verbose else [])
        return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
