"""The diagnosis as the site and the CLI serve it: signatures from the database, JSON per DESIGN.md."""
from __future__ import annotations

from typing import Any

from kb.diagnosis.engine import Diagnosis, log_diagnose
from kb.diagnosis.signatures import Signature, signatures_compile
from kb.models import Case, ContentState

_cache: dict[str, list[Signature]] = {}


def signatures_current() -> list[Signature]:
    """Compiled signatures of the loaded content, recompiled only when the content revision changes."""
    revision = ContentState.loaded_revision()
    if revision not in _cache:
        _cache.clear()
        _cache[revision] = signatures_compile(Case.objects.values("slug", "signatures"))
    return _cache[revision]


def diagnosis_run(sources: list[tuple[str, bytes | str]], *, top: int = 5) -> Diagnosis:
    return log_diagnose(sources, signatures_current(), top=top)


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """The contract of DESIGN.md ("Diagnosis contract"), plus the rank verdict when ranks reported."""
    titles = dict(Case.objects.filter(slug__in=[m.slug for m in diagnosis.matches]).values_list("slug", "title"))
    matches = []
    for match in diagnosis.matches:
        matches.append({
            "slug": match.slug,
            "title": titles.get(match.slug, match.slug),
            "score": match.score,
            "confidence": match.confidence,
            "url": f"/kb/{match.slug}/",
            "evidence": [_evidence_json(e) for e in match.evidence],
            "signals": match.signals,
        })
    body: dict[str, Any] = {"matches": matches, "facts": diagnosis.facts, "stats": diagnosis.stats}
    if diagnosis.verdict:
        body["ranks"] = {"summary": diagnosis.verdict.summary, "behind": diagnosis.verdict.behind,
                         "silent": diagnosis.verdict.silent, "disagree": diagnosis.verdict.disagree,
                         "table": diagnosis.verdict.table}
    return body


def _evidence_json(evidence) -> dict[str, Any]:
    item = {"line": evidence.line, "text": evidence.text, "signal": evidence.signal, "match": list(evidence.span)}
    if evidence.source:
        item["file"] = evidence.source
    return item
