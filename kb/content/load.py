"""Write validated content into the database and publish its index and snapshot, all or nothing."""

from __future__ import annotations

import datetime
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from kb.content.cases import CaseDoc, case_files_read, case_paths
from kb.content.revision import content_revision
from kb.content.errors import ContentError, ContentInvalid
from kb.content.harmless import HarmlessDoc, harmless_files_read
from kb.content.links import case_links_check
from kb.content.prose_ranges import prose_range_problems
from kb.extensions import content_checks_run
from kb.models import Alias, Case, ContentState, HarmlessLine, Tag
from kb.content.publish import (
    build_complete,
    build_dir_new,
    build_revision,
    build_swap,
    index_locked,
    served_build,
    snapshot_write,
)
from kb.content.rules_snapshot import rules_snapshot_write
from kb.diagnose import catalog_current, messages_current, rules_rows
from kb.search.index import index_write


@dataclass(frozen=True)
class LoadReport:
    revision: str
    created: int
    updated: int
    deleted: int
    total: int
    skipped: bool = False  # this revision was already loaded and published


LOAD_LOCK = 727_164_001  # PostgreSQL advisory lock key: one content load at a time across app servers


def content_load(*, content_dir: Path, index_dir: Path, force: bool = False) -> LoadReport:
    """Validate every file first; only when all are valid, build the new index and snapshot, write the
    database (upsert by slug, delete what vanished) and commit, then publish the build.

    Other apps' registered content checks (the troubleshooter's trees) can veto the load with their own
    file:line errors, so one command validates all content before anything is written. Loads are
    serialised (an advisory lock on PostgreSQL, an immediate write lock on SQLite, and a lock on the index
    folder that also covers the swap), and a revision that is already loaded and published is not loaded again
    unless `force`: its build is swapped in if a killed load left it unswapped, and stray builds are removed.
    """
    docs, harmless, errors = content_check(content_dir)
    if errors:
        raise ContentInvalid(errors)
    revision = content_revision(content_dir)
    with index_locked(index_dir):
        build = None
        try:
            with transaction.atomic():
                _loads_serialise()
                served = served_build(index_dir, ContentState.loaded_revision())
                if (
                    not force
                    and ContentState.loaded_revision() == revision
                    and served is not None
                    and build_revision(served) == revision
                    and build_complete(served)  # a build from before the rules snapshot existed is built again
                ):
                    build_swap(index_dir, served)  # completes a swap a killed load left undone; removes strays
                    return LoadReport(revision=revision, created=0, updated=0, deleted=0, total=len(docs), skipped=True)
                build = build_dir_new(index_dir, revision)
                index_write(build, docs, harmless)
                snapshot_write(build, content_dir)
                created, updated, deleted = content_rows_write(docs, harmless, revision)
                cases, harmless_rows = rules_rows()
                rules_snapshot_write(
                    build,
                    revision=revision,
                    cases=cases,
                    harmless=harmless_rows,
                    catalog=catalog_current(),
                    messages=messages_current(),
                )
        except BaseException:
            if build is not None:
                shutil.rmtree(build, ignore_errors=True)  # the database rolled back: nothing may point here
            raise
        build_swap(index_dir, build)  # after the commit; until then the site serves the build of the old revision
    return LoadReport(revision=revision, created=created, updated=updated, deleted=deleted, total=len(docs))


def _loads_serialise() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOAD_LOCK])


def content_check(content_dir: Path) -> tuple[list[CaseDoc], list[HarmlessDoc], list[ContentError]]:
    """Read and validate every content file (cases, the harmless list, the version statements of case prose that
    the names catalogue decides, and the checks other apps registered in kb.extensions); the one sequence both
    `validate_content` and `load_content` run."""
    docs, errors = case_files_read(content_dir)
    errors += case_links_check(docs, {path.stem for path in case_paths(content_dir)})
    harmless, harmless_errors = harmless_files_read(content_dir)
    errors += harmless_errors
    errors += prose_range_problems(content_dir)
    if not errors:
        errors += content_checks_run(content_dir, docs)
    return docs, harmless, errors


def content_rows_write(docs: list[CaseDoc], harmless: list[HarmlessDoc], revision: str) -> tuple[int, int, int]:
    """The database half of a load: cases, tags, aliases, harmless entries and the revision (call inside a
    transaction; `content_load` does)."""
    counts = _write_cases(docs)
    _write_harmless(harmless)
    ContentState.objects.all().delete()
    ContentState.objects.create(revision=revision)
    return counts


def json_ready(value: Any) -> Any:
    """The value with its dates as ISO strings: a claim's `source.checked` is a YAML date, and JSON fields
    store only JSON types."""
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_ready(item) for item in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def _write_harmless(docs: list[HarmlessDoc]) -> None:
    HarmlessLine.objects.exclude(slug__in=[d.slug for d in docs]).delete()
    for doc in docs:
        meta = doc.meta
        HarmlessLine.objects.update_or_create(
            slug=doc.slug,
            defaults={
                "title": meta["title"],
                "pattern": meta["pattern"],
                "flags": meta.get("flags") or [],
                "printed_by": meta["printed_by"],
                "versions": meta.get("versions") or {},
                "why": meta["why"],
                "instead": meta["instead"],
                "examples": meta["examples"],
                "references": meta["references"],
                "source_path": doc.path,
            },
        )


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
                "signatures": json_ready(meta["signatures"]),
                "related": meta.get("related") or [],
                "references": meta["references"],
                "sections": [{"id": s.id, "title": s.title, "level": s.level} for s in doc.body.sections],
                "body_html": doc.body.html,
                "last_reviewed": meta["last_reviewed"],
                "source_path": doc.path,
                "conditions": meta.get("conditions") or [],
                "frames": json_ready(meta.get("frames") or []),
                "steps": json_ready(meta.get("steps") or []),
                "guide": bool(meta.get("guide")),
                "do_first": meta.get("do_first") or [],
                "reviewed_against": meta.get("reviewed_against") or {},
            },
        )
        created += was_created
        updated += not was_created
        tags = [
            Tag.objects.get_or_create(facet=facet, value=value)[0] for facet, values in meta["tags"].items() for value in values
        ]
        case.tags.set(tags)
        for alias in meta.get("aliases") or []:
            Alias.objects.create(slug=alias, case=case)
    Tag.objects.filter(cases__isnull=True).delete()
    return created, updated, deleted
