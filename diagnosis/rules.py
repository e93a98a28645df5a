"""Everything the engine matches, compiled once per content revision from case front matter and the
known-harmless list: line signatures, fact conditions, frame signatures, fix steps and guides."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Iterable

from diagnosis.catalogue import Catalogue
from diagnosis.readers import reader_literals
from diagnosis.conditions import Condition, conditions_compile
from diagnosis.readers.signatures import Signature, SignatureIndex, signatures_compile

DEFAULT_FRAME_DEPTH = 4


@dataclass(frozen=True)
class FrameSignature:
    case: str
    id: str
    description: str
    weight: float
    anchor: bool
    regex: re.Pattern
    depth: int


@dataclass(frozen=True)
class Step:
    anchor: str
    versions: dict[str, str]
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class HarmlessRule:
    id: str
    title: str
    why: str
    signature: Signature  # its pattern, compiled like a signature (case = "harmless")


@dataclass
class Rules:
    signatures: list[Signature]
    conditions: list[Condition] = field(default_factory=list)
    frames: list[FrameSignature] = field(default_factory=list)
    steps: dict[str, list[Step]] = field(default_factory=dict)
    guides: frozenset[str] = frozenset()
    harmless: list[HarmlessRule] = field(default_factory=list)
    messages: Catalogue | None = None  # the message catalogue (diagnosis/catalogue.py), when the content has one

    @functools.cached_property
    def literals(self) -> frozenset[tuple[str, bool]]:
        """Every literal any rule or reader looks for, so a scanner learns in one pass which occur."""
        signatures = self.signatures + [h.signature for h in self.harmless]
        found = {(lit, s.ignorecase) for s in signatures for group in s.prefilter for lit in group}
        return frozenset(found | reader_literals())

    @functools.cached_property
    def signature_index(self) -> SignatureIndex:
        """The case signatures indexed by a required literal, built once per revision's rules."""
        return SignatureIndex.build(self.signatures)


def rules_compile(cases: Iterable[dict], harmless: Iterable[dict] = (), messages: Catalogue | None = None) -> Rules:
    """From case front matter (or database rows with the same keys), harmless entries and the message catalogue to
    Rules."""
    cases = list(cases)
    frames = [
        FrameSignature(
            case=case["slug"],
            id=f["id"],
            description=f["description"],
            weight=float(f["weight"]),
            anchor=bool(f.get("anchor", False)),
            regex=re.compile(f["pattern"]),
            depth=int(f.get("depth") or DEFAULT_FRAME_DEPTH),
        )
        for case in cases
        for f in case.get("frames") or []
    ]
    steps = {
        case["slug"]: [
            Step(anchor=s["anchor"], versions=dict(s.get("versions") or {}), evidence=tuple(s.get("evidence") or ()))
            for s in case.get("steps") or []
        ]
        for case in cases
    }
    harmless = list(harmless)
    harmless_signatures = signatures_compile(
        [
            {
                "slug": "harmless",
                "signatures": [
                    {"id": h["id"], "description": h["title"], "pattern": h["pattern"], "weight": 0, "flags": h.get("flags")}
                    for h in harmless
                ],
            }
        ]
    )
    return Rules(
        signatures=signatures_compile(cases),
        conditions=conditions_compile(cases),
        frames=frames,
        steps=steps,
        guides=frozenset(case["slug"] for case in cases if case.get("guide")),
        harmless=[
            HarmlessRule(id=h["id"], title=h["title"], why=h["why"], signature=sig)
            for h, sig in zip(harmless, harmless_signatures)
        ],
        messages=messages,
    )
