"""Compile the signatures from case front matter into something that scans megabytes quickly.

Each pattern is matched per line (it is compiled with MULTILINE and may not cross a newline), but it
is run over the whole text at once so the regex engine, not a Python loop, walks the log. A
pattern's longest required literal is checked with `in` first: most signatures are absent from most
logs and cost one substring search.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

try:
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]


@dataclass(frozen=True)
class Signature:
    case: str
    id: str
    description: str
    weight: float
    anchor: bool
    regex: re.Pattern
    literal: str  # must occur in any line the pattern matches ('' when none could be derived)
    ignorecase: bool


def signatures_compile(cases: Iterable[dict]) -> list[Signature]:
    """From `[{"slug": ..., "signatures": [...]}, ...]` (front matter or database rows) to Signatures."""
    compiled: list[Signature] = []
    for case in cases:
        for sig in case["signatures"]:
            ignorecase = "ignorecase" in (sig.get("flags") or [])
            flags = re.MULTILINE | (re.IGNORECASE if ignorecase else 0)
            pattern = _line_bound(sig["pattern"])
            compiled.append(Signature(
                case=case["slug"], id=sig["id"], description=sig["description"], weight=float(sig["weight"]),
                anchor=bool(sig.get("anchor", False)), regex=re.compile(pattern, flags),
                literal=required_literal(sig["pattern"], ignorecase), ignorecase=ignorecase,
            ))
    return compiled


def _line_bound(pattern: str) -> str:
    """Keep a whole-text match inside one line: '.' already stops at '\\n'; bare \\s and negated classes
    are made to stop there too."""
    pattern = pattern.replace(r"\s", r"[^\S\n]")
    return re.sub(r"\[\^(?!\\S)", "[^\\n", pattern)


def required_literal(pattern: str, ignorecase: bool = False) -> str:
    """The longest run of literal characters every match must contain, for a fast `in` pre-check."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ""
    best = ""
    run: list[str] = []
    for op, arg in parsed:
        if op == sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        best = max(best, "".join(run), key=len)
        run = []
        if op == sre_parse.SUBPATTERN:
            inner = required_literal_items(arg[-1])
            best = max(best, inner, key=len)
    best = max(best, "".join(run), key=len)
    return best.lower() if ignorecase else best


def required_literal_items(items) -> str:
    best, run = "", []
    for op, arg in items:
        if op == sre_parse.LITERAL:
            run.append(chr(arg))
        else:
            best = max(best, "".join(run), key=len)
            run = []
    return max(best, "".join(run), key=len)


@dataclass(frozen=True)
class Hit:
    signature: Signature
    offset: int
    end: int
    groups: dict[str, str]


def signature_hits(text: str, signatures: list[Signature], *, per_signature: int = 3,
                   lowered: str | None = None) -> Iterator[tuple[Signature, list[Hit], int]]:
    """For each signature present in `text`: its first few hits and the total number of matching lines."""
    lowered_text = lowered
    for sig in signatures:
        if sig.literal:
            if sig.ignorecase:
                if lowered_text is None:
                    lowered_text = text.lower()
                if sig.literal not in lowered_text:
                    continue
            elif sig.literal not in text:
                continue
        hits: list[Hit] = []
        total = 0
        for match in sig.regex.finditer(text):
            total += 1
            if len(hits) < per_signature:
                groups = {k: v for k, v in match.groupdict().items() if v is not None}
                hits.append(Hit(signature=sig, offset=match.start(), end=match.end(), groups=groups))
        if total:
            yield sig, hits, total
