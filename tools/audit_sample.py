"""Draw a random sample of checkable claims from content/ for an accuracy audit (issue 32, second audit).

Every claim a reviewer can check against a release is extracted with its file:line:

- range:  a `versions:` line (signature, harmless entry, fix step, tree node) of cases, harmless and trees;
- badge:  a `release:` line of an example ("PyTorch 2.4.1 (ProcessGroupNCCL.cpp)");
- name-range: a `versions:` line of content/names.yaml (the name and the releases that read it);
- name:   an environment variable, flag, MCA parameter or command named in cases, harmless, scripts and trees
          (kb/content/names.py, the extractor the allow-list test uses; one per name and file);
- prose:  a version statement in a case body or a script part ("from 2.3", "NCCL 2.18+", "PyTorch 2.4.1"; the
          extractor is kb/content/prose.py, which the prose range check and `make claims` use too).

Usage: python tools/audit_sample.py [--seed N] [--n 100] [--all]. The seed is printed with the population size
so that the sample can be drawn again; --all prints the whole population.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kb.content.names import content_names  # noqa: E402
from kb.content.prose import file_units, statements  # noqa: E402

CONTENT = ROOT / "content"
DEFAULT_SEED = 20261128

_VERSIONS = re.compile(r"^\s*(?:-\s+)?versions:\s*(.*)$")
_VERSIONS_INLINE = re.compile(r"\bversions:\s*(\{[^}]*\}|\"[^\"]*\"|'[^']*')")
_RELEASE = re.compile(r"\brelease:\s*(\"[^\"]*\"|'[^']*'|[^,}\n]+)")


@dataclass(frozen=True)
class Claim:
    kind: str
    file: str
    line: int
    text: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _front_matter_end(lines: list[str]) -> int:
    """Index of the closing '---' of a case's front matter (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return i
    return 0


def _yaml_claims(path: Path, lines: list[str], stop: int | None = None) -> list[Claim]:
    out: list[Claim] = []
    for number, line in enumerate(lines[:stop], start=1):
        m = _VERSIONS.match(line)
        if m and m.group(1).strip():
            out.append(Claim("range", _rel(path), number, line.strip()))
        elif (m := _VERSIONS_INLINE.search(line)) and not line.lstrip().startswith("#"):
            out.append(Claim("range", _rel(path), number, m.group(0)))
        elif m := _VERSIONS.match(line):  # a block mapping on the next lines
            block = [s.strip() for s in lines[number : number + 4] if re.match(r"^\s+[a-z-]+:\s*\S", s)]
            out.append(Claim("range", _rel(path), number, "versions: " + "; ".join(block[:3])))
        for r in _RELEASE.finditer(line):
            out.append(Claim("badge", _rel(path), number, "release: " + r.group(1).strip()))
    return out


def _prose_claims(path: Path) -> list[Claim]:
    """Version statements in a case body or a script file (kb/content/prose.py, the extractor the checks share)."""
    return [
        Claim("prose", st.file, st.line, f"…{st.context(60)}… [{st.phrase}]") for st in statements(file_units(path, _rel(path)))
    ]


def population() -> list[Claim]:
    claims: list[Claim] = []
    for path in sorted((CONTENT / "cases").glob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        end = _front_matter_end(lines)
        claims += _yaml_claims(path, lines, end)
        claims += _prose_claims(path)
    for folder in ("harmless", "trees"):
        for path in sorted((CONTENT / folder).glob("*.yaml")):
            claims += _yaml_claims(path, path.read_text(encoding="utf-8").splitlines())
    for path in sorted((CONTENT / "scripts").glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        claims += [c for c in _yaml_claims(path, lines) if c.kind == "range"]
        claims += _prose_claims(path)
    names = CONTENT / "names.yaml"
    current = ""
    for number, line in enumerate(names.read_text(encoding="utf-8").splitlines(), start=1):
        if m := re.match(r"^- name:\s*(.+)$", line):
            current = m.group(1).strip()
        elif (m := re.match(r"^\s+versions:\s*(.+)$", line)) and current:
            claims.append(Claim("name-range", _rel(names), number, f"{current}: {m.group(1).strip()}"))
    for occurrence in content_names(CONTENT):
        claims.append(Claim("name", occurrence.file, occurrence.line, f"{occurrence.kind} {occurrence.name}"))
    return claims


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--all", action="store_true", help="print the whole population instead of a sample")
    args = parser.parse_args(argv)
    claims = population()
    by_kind: dict[str, int] = {}
    for c in claims:
        by_kind[c.kind] = by_kind.get(c.kind, 0) + 1
    print(f"# population {len(claims)} claims: " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    if args.all:
        chosen = claims
    else:
        print(f"# seed {args.seed}, sample {args.n} (random.Random(seed).sample, in population order)")
        chosen = sorted(random.Random(args.seed).sample(claims, args.n), key=claims.index)
    for i, c in enumerate(chosen, start=1):
        print(f"{i}\t{c.kind}\t{c.where()}\t{c.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
