"""The rules snapshot: what the engine matches and what a diagnosis links to, written into each published
build by `load_content` from the rows it has just written, so the command line can diagnose from the build
without starting Django or opening the database (start-up is most of the time on a short log). Beside it, the
Hyperscan database of the rules' literals and the literal groups derived from their patterns, made once here rather
than at every start.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kb.content.publish import RULES_FILE, current_build
from diagnosis.catalogue import Catalogue
from diagnosis.readers.catalogue import messages_dump, messages_load
from diagnosis.result import Catalog
from diagnosis.rules import Rules, rules_compile
from diagnosis.scan.literals import literal_database_dump, literal_database_load, literal_groups_dump, literal_groups_load

FORMAT = 1
LITERALS_FILE = "literals.hs"  # the compiled literal pass of these rules (diagnosis.scan.literals)
MESSAGES_FILE = "messages.hs"  # the message catalogue's literal database (diagnosis.catalogue)
GROUPS_FILE = "literal_groups.json"  # the literal groups derived from the rules' patterns (diagnosis.scan.literals)


@dataclass(frozen=True)
class RulesSnapshot:
    revision: str
    rules: Rules
    catalog: Catalog


def rules_snapshot_write(
    build: Path, *, revision: str, cases: list[dict], harmless: list[dict], catalog: Catalog, messages: Catalogue | None = None
) -> None:
    """`cases` and `harmless` are the rows the database now holds, as kb.diagnose.rules_current reads them; `messages`
    the diagnostic part of the message catalogue."""
    body = {
        "format": FORMAT,
        "revision": revision,
        "cases": cases,
        "harmless": harmless,
        "titles": catalog.titles,
        "case_urls": catalog.case_urls,
        "harmless_url": catalog.harmless_url,
        "summaries": catalog.summaries,
        "sections": catalog.sections,
        "messages": messages_dump(messages) if messages is not None else None,
    }
    rules = rules_compile(cases, harmless, messages)
    _build_file_write(build, GROUPS_FILE, literal_groups_dump())
    if messages is not None:
        _build_file_write(build, MESSAGES_FILE, messages.database_bytes())
    _literal_database_cached(build, rules)
    # Written last and renamed into place: a build that has this file is complete (kb.content.publish).
    written = build / f"{RULES_FILE}.tmp"
    written.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    os.replace(written, build / RULES_FILE)


def rules_snapshot_read(index_root: Path) -> RulesSnapshot | None:
    """The snapshot of the build the site serves; None before the first load, or for a build written by an
    older release (the caller then takes the database's rules)."""
    build = current_build(index_root)
    if build is None:
        return None
    try:
        body: dict[str, Any] = json.loads((build / RULES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if body.get("format") != FORMAT:
        return None
    catalog = Catalog(
        titles=body["titles"],
        case_urls=body["case_urls"],
        harmless_url=body["harmless_url"],
        summaries=body.get("summaries", {}),  # absent from builds published before the Result kept them
        sections=body.get("sections", {}),
    )
    groups_loaded = _build_file_load(build, GROUPS_FILE, literal_groups_load)
    database = _build_file_read(build, MESSAGES_FILE) if body.get("messages") else None
    rules = rules_compile(body["cases"], body["harmless"], messages_load(body.get("messages"), database))
    if not groups_loaded:  # a build published by an older release, or derived by other code: left for the next start
        _build_file_write(build, GROUPS_FILE, literal_groups_dump())
    _literal_database_cached(build, rules)
    return RulesSnapshot(revision=body["revision"], rules=rules, catalog=catalog)


def _literal_database_cached(build: Path, rules: Rules) -> None:
    """Load the build's literal database; if it is missing or was compiled from other literals (a build published
    by an older release, whose readers looked for other words), compile it and leave it for the next start."""
    if not _build_file_load(build, LITERALS_FILE, lambda dumped: literal_database_load(rules.literals, dumped)):
        _build_file_write(build, LITERALS_FILE, literal_database_dump(rules.literals))


def _build_file_load(build: Path, name: str, load: Callable[[bytes], bool]) -> bool:
    content = _build_file_read(build, name)
    return content is not None and load(content)


def _build_file_read(build: Path, name: str) -> bytes | None:
    try:
        return (build / name).read_bytes()
    except OSError:
        return None


def _build_file_write(build: Path, name: str, content: bytes | None) -> None:
    """Renamed into place, so a process starting meanwhile reads the old file or the whole new one."""
    if content is None:
        return
    import tempfile  # only when a file is written: 7 ms of every start otherwise (random, shutil, their codecs)

    written: str | None = None
    try:
        with tempfile.NamedTemporaryFile(dir=build, prefix=f"{name}.", delete=False) as handle:
            written = handle.name
            handle.write(content)
        os.replace(written, build / name)
    except OSError:  # a build this user may not write to, or a full disk: made again next time
        if written is not None:
            with contextlib.suppress(OSError):
                os.unlink(written)
