"""The project's own labelled logs (tests/fixtures/logs/**/expected.yaml): run the engine over them, score
it, and say how far its confidence can be trusted (a reliability table: confidence band → share right).

Used by the test suite (one test per log) and by `manage.py reliability` (`make score`). No database: the rules
are compiled from content/ files, the message catalogue included, as the site serves them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kb.content.cases import case_files_read
from kb.content.harmless import harmless_files_read
from diagnosis.catalogue import Catalogue
from diagnosis.engine import CONFIDENT, Diagnosis, log_diagnose
from diagnosis.readers.catalogue import content_messages
from diagnosis.rules import Rules, rules_compile

BANDS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.01))
# The parsed catalogue, kept under the digest of its files (git-ignored, like the rest of var/).
CACHE_DIR = Path(__file__).resolve().parents[1] / "var" / "cache"


@dataclass(frozen=True)
class Entry:
    path: Path
    primary: str | None
    acceptable: tuple[str, ...]
    category: str
    group: str
    source: str
    note: str

    @property
    def id(self) -> str:
        return f"{self.group}/{self.path.name}"


def corpus_entries(root: Path) -> list[Entry]:
    """Every labelled log under `root`, from each folder's expected.yaml."""
    entries = []
    for expected in sorted(root.rglob("expected.yaml")):
        group = str(expected.parent.relative_to(root))
        for item in yaml.safe_load(expected.read_text(encoding="utf-8")) or []:
            entries.append(
                Entry(
                    path=expected.parent / item["file"],
                    primary=item.get("primary"),
                    acceptable=tuple(item.get("acceptable") or ()),
                    category=item.get("category") or group,
                    group=group,
                    source=str(item.get("source") or ""),
                    note=str(item.get("note") or ""),
                )
            )
    return entries


def content_rules(content_dir: Path) -> Rules:
    """The rules the site would serve from `content_dir`: cases, harmless lines and the message catalogue."""
    docs, errors = case_files_read(content_dir)
    harmless, harmless_errors = harmless_files_read(content_dir)
    if errors or harmless_errors:
        raise ValueError("content is invalid: " + "; ".join(str(e) for e in errors + harmless_errors))
    return rules_compile([{**d.meta, "slug": d.slug} for d in docs], [h.meta for h in harmless], _messages(Path(content_dir)))


@functools.lru_cache(maxsize=2)
def _messages(content_dir: Path) -> Catalogue | None:
    """Read once per process: the tests score hundreds of logs with the same catalogue."""
    return content_messages(content_dir, CACHE_DIR)


@dataclass
class Verdict:
    entry: Entry
    first: str | None  # the first confident match
    top3: list[tuple[str, float]]
    ok: bool


def entry_diagnose(entry: Entry, rules: Rules) -> Diagnosis:
    return log_diagnose([(entry.path.name, entry.path.read_bytes())], rules, top=3)


def entry_verdict(entry: Entry, diagnosis: Diagnosis) -> Verdict:
    """Right when the first confident match is the primary case (or, with no primary, when the first three
    hold an acceptable case, or, for a negative, when nothing is confident)."""
    confident = [m.slug for m in diagnosis.matches if m.confidence >= CONFIDENT]
    first = confident[0] if confident else None
    top3 = [(m.slug, m.confidence) for m in diagnosis.matches[:3]]
    if entry.primary:
        ok = first == entry.primary
    elif entry.acceptable:
        ok = any(slug in entry.acceptable for slug, _ in top3) and (first is None or first in entry.acceptable)
    else:
        ok = first is None
    return Verdict(entry=entry, first=first, top3=top3, ok=ok)


def corpus_score(verdicts: list[Verdict]) -> dict[str, Any]:
    """top1, hit3 and neg as the shared scorer counts them, per category and overall, and the reliability
    of the first match's confidence by band."""

    def shares(items: list[Verdict]) -> dict[str, Any]:
        with_primary = [v for v in items if v.entry.primary]
        with_cases = [v for v in items if v.entry.acceptable]
        negatives = [v for v in items if not v.entry.acceptable]
        return {
            "n": len(items),
            "top1": _share(sum(v.first == v.entry.primary for v in with_primary), len(with_primary)),
            "hit3": _share(sum(any(s in v.entry.acceptable for s, _ in v.top3) for v in with_cases), len(with_cases)),
            "neg": _share(sum(v.first is None for v in negatives), len(negatives)),
        }

    categories = sorted({v.entry.category for v in verdicts})
    bands = []
    for low, high in BANDS:
        inside = [v for v in verdicts if v.top3 and low <= v.top3[0][1] < high]
        right = sum(
            1
            for v in inside
            if v.top3[0][0] in (v.entry.acceptable or ()) and (v.entry.primary is None or v.top3[0][0] == v.entry.primary)
        )
        bands.append(
            {"band": f"{low:.1f}–{min(high, 1.0):.1f}", "n": len(inside), "right": right, "share": _share(right, len(inside))}
        )
    confident = [v for v in verdicts if v.first is not None]
    confident_right = sum(
        1 for v in confident if v.first in v.entry.acceptable and (v.entry.primary is None or v.first == v.entry.primary)
    )
    return {
        "all": shares(verdicts),
        "by_category": {c: shares([v for v in verdicts if v.entry.category == c]) for c in categories},
        "bands": bands,
        "confident_precision": _share(confident_right, len(confident)),
        "confident_n": len(confident),
    }


def _share(right: int, total: int) -> float | None:
    return round(right / total, 3) if total else None
