"""The diagnosis as the site and the CLI serve it: rules from the database, JSON per DESIGN.md."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from diagnosis.engine import Diagnosis, log_diagnose
from diagnosis.reading import Source
from diagnosis.rules import Rules, rules_compile
from diagnosis import contract
from diagnosis.contract import Catalog
from diagnosis.job_files import JobInput
from kb.models import Case, ContentState, HarmlessLine, case_url

_cache: dict[str, Rules] = {}
CASE_RULE_FIELDS = ("slug", "signatures", "conditions", "frames", "steps", "guide")


def rules_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rule rows of the loaded content (cases, harmless lines): what the rules are compiled from, here and
    in the published rules snapshot (kb/content/rules_snapshot.py)."""
    harmless = [
        {"id": h["slug"], "title": h["title"], "pattern": h["pattern"], "flags": h["flags"], "why": h["why"]}
        for h in HarmlessLine.objects.values("slug", "title", "pattern", "flags", "why")
    ]
    return list(Case.objects.values(*CASE_RULE_FIELDS)), harmless


def rules_current() -> Rules:
    """Compiled rules of the loaded content, recompiled only when the content revision changes."""
    revision = ContentState.loaded_revision()
    if revision not in _cache:
        _cache.clear()
        _cache[revision] = rules_compile(*rules_rows())
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
    """A job read by diagnosis.job_files (an upload, an archive, a directory): its files with the ranks their paths
    name. The page, the API and the command line all diagnose a job through this one call."""
    return diagnosis_run(job.sources(), top=top, budget_s=budget_s, ranks=job.ranks())


def catalog_current(slugs: list[str] | None = None) -> Catalog:
    """Titles and addresses of the loaded cases (of `slugs` only, when given: a page shows a few)."""
    rows = Case.objects.all() if slugs is None else Case.objects.filter(slug__in=slugs)
    titles = dict(rows.values_list("slug", "title"))
    urls = {slug: case_url(slug) for slug in (titles if slugs is None else slugs)}
    return Catalog(titles=titles, case_urls=urls, harmless_url=reverse("kb:harmless_list"))


def diagnosis_json(diagnosis: Diagnosis, *, notes: list[str] | None = None) -> dict[str, Any]:
    """The contract's JSON (diagnosis.contract) with the loaded cases' titles and addresses."""
    slugs = {m.slug for m in diagnosis.matches} | {
        g["case"] for g in (diagnosis.rank_groups or {}).get("groups", []) if g.get("case")
    }
    return contract.diagnosis_json(diagnosis, catalog_current(sorted(slugs)), notes=notes)
