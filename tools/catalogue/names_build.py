"""Stage 2 of the names catalogue: content/catalogue/names/harvest/<program>.tsv -> content/catalogue/names/<program>.yaml.

Pure and deterministic (kb.content.names_catalogue.build); tests/kb/content/test_names_catalogue.py checks that the committed
YAML is what this writes, so the catalogue cannot drift from its harvest.

Usage: .venv/bin/python tools/catalogue/names_build.py [program ...]   (default: every harvested program)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kb.content.names_catalogue import CATALOGUE_DIR, PROGRAMS, build  # noqa: E402


def main() -> None:
    programs = sys.argv[1:] or [p for p in PROGRAMS if (CATALOGUE_DIR / "harvest" / f"{p}.tsv").exists()]
    for program in programs:
        text = build(CATALOGUE_DIR / "harvest" / f"{program}.tsv", program, PROGRAMS[program][2])
        (CATALOGUE_DIR / f"{program}.yaml").write_text(text, encoding="utf-8")
        print(f"{program}: {text.count(chr(10) + '- {name: ')} names", file=sys.stderr)


if __name__ == "__main__":
    main()
