"""The diagnosis as the site serves it: the rules and the catalog of the served content revision, compiled once per
revision, handed to `diagnosis.diagnose`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from django.conf import settings

from django.urls import reverse

import diagnosis
from diagnosis import Catalog, Result
from diagnosis.job_files import JobInput
from diagnosis.reading import Source
from diagnosis.catalogue import Catalogue
from diagnosis.readers.catalogue import content_messages
from diagnosis.rules import Rules, rules_compile
from kb.content.rules_snapshot import rules_snapshot_read
from kb.models import Case, ContentState, HarmlessLine, case_url

CASE_RULE_FIELDS = ("slug", "signatures", "conditions", "frames", "steps", "guide")


@dataclass(frozen=True)
class Served:
    """What a diagnosis of the served revision needs: its compiled rules and the catalog its answers link to."""

    revision: str
    rules: Rules
    catalog: Catalog

    @cached_property
    def cases_to_name(self) -> tuple[dict[str, str], ...]:
        """The cases a vote can name as "it was another case": every case but the triage guides, by title. From
        the catalog and rules a paste has in memory already, so its vote form asks the database nothing."""
        cases = sorted((title, slug) for slug, title in self.catalog.titles.items() if slug not in self.rules.guides)
        return tuple({"slug": slug, "title": title} for title, slug in cases)


_cache: dict[str, Served] = {}


def rules_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rule rows of the loaded content (cases, harmless lines): what the rules are compiled from, here and
    in the published rules snapshot (kb/content/rules_snapshot.py)."""
    harmless = [
        {"id": h["slug"], "title": h["title"], "pattern": h["pattern"], "flags": h["flags"], "why": h["why"]}
        for h in HarmlessLine.objects.values("slug", "title", "pattern", "flags", "why")
    ]
    return list(Case.objects.values(*CASE_RULE_FIELDS)), harmless


def messages_current() -> Catalogue | None:
    """The served content's message catalogue, its diagnostic entries (the parsed YAML kept in var/cache)."""
    return content_messages(Path(settings.CONTENT_DIR), Path(settings.BASE_DIR) / "var" / "cache")


def catalog_current() -> Catalog:
    """Titles, summaries, sections and addresses of every loaded case."""
    rows = list(Case.objects.values_list("slug", "title", "summary", "sections"))
    return Catalog(
        titles={slug: title for slug, title, _, _ in rows},
        case_urls={slug: case_url(slug) for slug, _, _, _ in rows},
        harmless_url=reverse("kb:harmless_list"),
        summaries={slug: summary for slug, _, summary, _ in rows},
        sections={slug: [{"id": s["id"], "title": s["title"]} for s in sections] for slug, _, _, sections in rows},
    )


def served_current(revision: str | None = None) -> Served:
    """The served revision's rules and catalog, read again only when the content revision changes: from the rules
    snapshot its published build holds (the one source the command line reads too), else, for a build published by
    an older release, compiled from the database's rows. `revision`: the served revision as the request read it
    already (a request reads it once); None reads it."""
    if revision is None:
        revision = ContentState.loaded_revision()
    if revision not in _cache:
        _cache.clear()
        snapshot = rules_snapshot_read(Path(settings.SEARCH_INDEX_DIR))
        if snapshot is not None and snapshot.revision == revision:
            _cache[revision] = Served(revision, snapshot.rules, snapshot.catalog)
        else:
            _cache[revision] = Served(revision, rules_compile(*rules_rows(), messages=messages_current()), catalog_current())
    return _cache[revision]


def rules_current() -> Rules:
    """Compiled rules of the loaded content."""
    return served_current().rules


def diagnosis_run(sources: list[tuple[str, Source]], *, revision: str | None = None, **options: Any) -> Result:
    """Diagnose sources with the served rules, and name the answer from the served catalog (of `revision`, as
    `served_current` takes it). `options`: diagnosis.diagnose's (top, budget_s, workers, context, and what reading
    the files said: ranks, notes, unpickled)."""
    served = served_current(revision)
    return diagnosis.diagnose(sources, served.rules, served.catalog, **options)


def job_diagnosis_run(job: JobInput, *, revision: str | None = None, **options: Any) -> Result:
    """A job read by diagnosis.job_files (an upload, an archive, a directory): its files with what their paths and
    contents said. The page and the API diagnose a job through this one call."""
    return diagnosis_run(job.sources(), revision=revision, **job.read_facts(), **options)
