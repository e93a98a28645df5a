"""The diagnosis as the site and the CLI serve it: rules from the database, JSON per DESIGN.md."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from kb.diagnosis.engine import Diagnosis, log_diagnose
from kb.diagnosis.reading import Source
from kb.diagnosis.rules import Rules, rules_compile
from kb.diagnosis.verdict import MAX_GROUPS, failure_text
from kb.job_input import JobInput
from kb.models import Case, ContentState, HarmlessLine, case_url

_cache: dict[str, Rules] = {}
CASE_RULE_FIELDS = ("slug", "signatures", "conditions", "frames", "steps", "guide")


def rules_current() -> Rules:
    """Compiled rules of the loaded content, recompiled only when the content revision changes."""
    revision = ContentState.loaded_revision()
    if revision not in _cache:
        _cache.clear()
        harmless = [
            {"id": h["slug"], "title": h["title"], "pattern": h["pattern"], "flags": h["flags"], "why": h["why"]}
            for h in HarmlessLine.objects.values("slug", "title", "pattern", "flags", "why")
        ]
        _cache[revision] = rules_compile(Case.objects.values(*CASE_RULE_FIELDS), harmless)
    return _cache[revision]


def diagnosis_run(
    sources: list[tuple[str, Source]],
    *,
    top: int = 5,
    budget_s: float | None = None,
    workers: int = 1,
    ranks: dict[str, int] | None = None,
) -> Diagnosis:
    return log_diagnose(sources, rules_current(), top=top, budget_s=budget_s, workers=workers, ranks=ranks)


def job_diagnosis_run(job: JobInput, *, top: int = 5, budget_s: float | None = None) -> Diagnosis:
    """A job read by kb.job_input (an upload, an archive, a directory): its files with the ranks their paths
    name. The page, the API and the command line all diagnose a job through this one call."""
    return diagnosis_run(job.sources(), top=top, budget_s=budget_s, ranks=job.ranks())


def rank_groups_json(diagnosis: Diagnosis) -> dict[str, Any] | None:
    """Where every rank is, each group with the URL of the case and fix step its evidence supports."""
    if diagnosis.rank_groups is None:
        return None
    groups = []
    for group in diagnosis.rank_groups["groups"]:
        case = group["case"]
        urls = {"url": case_url(case), "fix_url": case_url(case, group["fix_step"])} if case else {"url": None, "fix_url": None}
        groups.append({**group, **urls})
    return {**diagnosis.rank_groups, "groups": groups}


def diagnosis_json(diagnosis: Diagnosis, *, notes: list[str] | None = None) -> dict[str, Any]:
    """The contract of DESIGN.md ("Diagnosis contract"), plus `kind` and `fix_step` per match, the rank
    verdict when ranks reported, where every rank is, the first failure, the known-harmless lines set aside,
    and `notes` on what was read (files skipped)."""
    titles = dict(Case.objects.filter(slug__in=[m.slug for m in diagnosis.matches]).values_list("slug", "title"))
    matches = []
    for match in diagnosis.matches:
        url = case_url(match.slug)
        matches.append(
            {
                "slug": match.slug,
                "title": titles.get(match.slug, match.slug),
                "kind": match.kind,
                "score": match.score,
                "confidence": match.confidence,
                "url": url,
                "fix_step": match.fix_step,
                "fix_url": case_url(match.slug, match.fix_step) if match.fix_step else None,
                "steps_not_for_your_versions": match.steps_not_for_versions,
                "evidence": [_evidence_json(e) for e in match.evidence],
                "signals": match.signals,
            }
        )
    body: dict[str, Any] = {"matches": matches, "facts": diagnosis.facts, "stats": diagnosis.stats}
    if diagnosis.verdict:
        verdict = diagnosis.verdict
        body["ranks"] = {
            "summary": verdict.summary,
            "behind": verdict.behind,
            "silent": verdict.silent,
            "disagree": verdict.disagree,
            "first_collective": verdict.first_collective,
            "object_collective": verdict.object_collective,
            "groups": verdict.groups[:MAX_GROUPS],
            "groups_total": len(verdict.groups),
            "table": verdict.table,
            "table_total": verdict.table_total,
        }
    where = rank_groups_json(diagnosis)
    if where is not None:
        body["rank_groups"] = where
    if diagnosis.failure:
        failure = diagnosis.failure
        body["first_failure"] = {
            "kind": failure.kind,
            "rank": failure.rank,
            "line": failure.line,
            "time": failure.time,
            "text": failure.text,
            "summary": failure_text(failure),
            **({"file": failure.source} if failure.source else {}),
        }
    if diagnosis.stack_groups:
        body["stacks"] = {"groups": diagnosis.stack_groups}
    if diagnosis.recorder is not None:
        recorder = diagnosis.recorder
        body["flight_recorder"] = {
            "summary": recorder.summary,
            "groups": recorder.groups,
            "version": recorder.version,
            "ranks": recorder.ranks,
            "process_groups": recorder.process_groups,
            "notes": recorder.notes,
        }
    harmless_url = reverse("kb:harmless_list")
    body["harmless"] = [
        {
            "line": h.line,
            "text": h.text,
            "why": h.why,
            "title": h.title,
            "url": f"{harmless_url}#{h.id}",
            **({"file": h.source} if h.source else {}),
        }
        for h in diagnosis.harmless
    ]
    if diagnosis.repairs:
        body["inputs"] = {"repairs": diagnosis.repairs}
    if notes:
        body.setdefault("inputs", {})["notes"] = list(notes)
    return body


def _evidence_json(evidence) -> dict[str, Any]:
    item = {"line": evidence.line, "text": evidence.text, "signal": evidence.signal, "match": list(evidence.span)}
    if evidence.source:
        item["file"] = evidence.source
    return item
