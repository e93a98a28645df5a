"""Write validated content into the database and the search index, all or nothing."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from kb.content.cases import CaseDoc, case_files_read, content_revision
from kb.content.errors import ContentInvalid
from kb.models import Alias, Case, ContentState, Tag
from kb.search.index import index_build


@dataclass(frozen=True)
class LoadReport:
    revision: str
    created: int
    updated: int
    deleted: int
    total: int


def content_load(*, content_dir: Path, index_dir: Path, extra_checks=None) -> LoadReport:
    """Validate every file first; only when all are valid, upsert by slug, delete vanished cases, rebuild the index.

    `extra_checks(docs)` lets other apps (the troubleshooter's trees) veto the load with their own
    file:line errors, so one command validates all content before anything is written.
    """
    docs, errors = case_files_read(content_dir)
    if extra_checks is not None and not errors:
        errors += extra_checks(docs)
    if errors:
        raise ContentInvalid(errors)
    revision = content_revision(content_dir)
    with transaction.atomic():
        created, updated, deleted = _write_cases(docs)
        ContentState.objects.all().delete()
        ContentState.objects.create(revision=revision)
        # The index is built inside the transaction: if it fails, the database rolls back too.
        index_build(docs, index_dir)
    return LoadReport(revision=revision, created=created, updated=updated, deleted=deleted, total=len(docs))


def _write_cases(docs: list[CaseDoc]) -> tuple[int, int, int]:
    created = updated = 0
    keep = {doc.slug for doc in docs}
    stale = Case.objects.exclude(slug__in=keep)
    deleted = stale.count()
    stale.delete()
    Alias.objects.all().delete()
    for doc in docs:
        meta = doc.meta
        case, was_created = Case.objects.update_or_create(
            slug=doc.slug,
            defaults={
                "title": meta["title"],
                "summary": meta["summary"],
                "applies_to": meta["applies_to"],
                "symptoms": meta["symptoms"],
                "signatures": meta["signatures"],
                "related": meta.get("related") or [],
                "references": meta["references"],
                "sections": [{"id": s.id, "title": s.title, "level": s.level} for s in doc.body.sections],
                "body_html": doc.body.html,
                "last_reviewed": meta["last_reviewed"],
                "source_path": doc.path,
            },
        )
        created += was_created
        updated += not was_created
        tags = [Tag.objects.get_or_create(facet=facet, value=value)[0]
                for facet, values in meta["tags"].items() for value in values]
        case.tags.set(tags)
        for alias in meta.get("aliases") or []:
            Alias.objects.create(slug=alias, case=case)
    Tag.objects.filter(cases__isnull=True).delete()
    return created, updated, deleted
