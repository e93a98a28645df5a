"""An example's `file:line` agrees with the release its badge names (second audit of issue 32).

An example such as `include/socket.h:403 NCCL WARN Connect to … failed : …` labelled "NCCL 2.8.4" says that
2.8.4 prints this message at that line. The message harvest (content/catalogue/harvest/<program>.tsv) has, for each
harvested release, the file and line of every message call read from the sources. When the badge's release was
harvested and the harvest has the example's message in the example's file in that release, one of those rows must
be at the example's line, or the line before it: a call that spans two lines is reported at its second line by
compilers that give a macro the line where its invocation ends.

Not judged: strings read from binaries (their harvest line is a rank in the string table, not a source line);
messages printed by a macro defined in another file (NCCL's SYSCHECK family: the harvest has the macro's line);
Python traceback lines (`File "…", line N`: not message calls); releases that were not harvested. Pure: no Django.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

from kb.content.frontmatter import front_matter_split
from kb.content.ranges import Problem
from kb.content.yamllines import yaml_file_read

ROOT = Path(__file__).resolve().parents[2]
HARVEST_DIR = ROOT / "content" / "catalogue" / "harvest"
# Badge word -> harvest program.
PROGRAMS = {"nccl": "nccl", "deepspeed": "deepspeed", "pytorch": "torch"}
_BADGE = re.compile(r"^\s*(PyTorch|NCCL|DeepSpeed)\s+v?(\d+\.\d+(?:\.\d+)*)\b")
# `misc/socket.cc:535 NCCL WARN`, `launch.py:321:main]`, `api.py:869]`: a source file and line as a logger prints it.
_LOCATION = re.compile(r"(?<![\w/.])([A-Za-z0-9_][A-Za-z0-9_./-]*\.(?:cc|cu|cpp|h|hpp|py)):(\d+)\b")
_CONVERSION = re.compile(r"%[-+ #0-9.*]*[a-zA-Z]|%\([a-z_]+\)[a-z]|\{[^{}]*\}")
SPAN = 1  # lines after the call's first line that still count as the call


@cache
def harvest(program: str, harvest_dir: Path = HARVEST_DIR) -> dict[str, list[tuple[str, int, str]]]:
    """release -> [(file, line, format)] of the source rows (binary strings left out)."""
    out: dict[str, list[tuple[str, int, str]]] = {}
    with open(harvest_dir / f"{program}.tsv", encoding="utf-8", newline="") as f:
        csv.field_size_limit(1 << 30)
        for row in csv.DictReader(f, delimiter="\t"):
            if "#" in row["file"]:
                continue
            out.setdefault(row["release"], []).append((row["file"], int(row["line"]), row["format"]))
    return out


def _literals(fmt: str) -> list[str]:
    """The literal runs of a format, unescaped, that are long enough to identify it in a line."""
    text = fmt.replace("\\n", " ").replace("\\t", " ").replace("\\\\", "\\").replace("%%", "%")
    return [p.strip() for p in _CONVERSION.split(text) if len(p.strip()) >= 6]


def example_problems(shown: str, line: int, example: object, harvest_dir: Path = HARVEST_DIR) -> list[Problem]:
    if not isinstance(example, dict):
        return []
    badge = _BADGE.match(str(example.get("release", "")))
    if not badge:
        return []
    program, release = PROGRAMS[badge.group(1).lower()], badge.group(2)
    rows = harvest(program, harvest_dir).get(release)
    if rows is None:
        return []
    text = str(example.get("text", ""))
    problems = []
    for location in _LOCATION.finditer(text):
        file, number = location.group(1), int(location.group(2))
        calls = [
            (f, n)
            for f, n, fmt in rows
            if (f == file or f.endswith("/" + file)) and (lits := _literals(fmt)) and all(lit in text for lit in lits)
        ]
        if calls and not any(n <= number <= n + SPAN for _, n in calls):
            where = ", ".join(sorted({f"{f}:{n}" for f, n in calls}))
            problems.append(
                Problem(
                    shown,
                    line,
                    f"example labelled {badge.group(0).strip()} shows {file}:{number}, but {release} prints it at {where}",
                )
            )
    return problems


def example_line_problems(content_dir: Path, harvest_dir: Path = HARVEST_DIR) -> list[Problem]:
    """Every example with a release badge in content/cases (signatures) and content/harmless."""
    base = content_dir.parent
    problems: list[Problem] = []
    for path in sorted((content_dir / "cases").glob("*.md")):
        fm = front_matter_split(path.read_text(encoding="utf-8"))
        shown = str(path.relative_to(base))
        for i, signature in enumerate(fm.data.get("signatures") or []):
            for k, example in enumerate(signature.get("examples") or []):
                problems += example_problems(shown, fm.line_of(("signatures", i, "examples", k)), example, harvest_dir)
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        doc = yaml_file_read(path, str(path.relative_to(base)))
        for k, example in enumerate(doc.data.get("examples") or []):
            problems += example_problems(doc.path, doc.line_of(("examples", k)), example, harvest_dir)
    return problems
