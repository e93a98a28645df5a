"""The rules snapshot: what the engine matches and what a diagnosis links to, written into each published
build by `load_content` from the rows it has just written, so the command line can diagnose from the build
without starting Django or opening the database (start-up is most of the time on a short log).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.content.publish import RULES_FILE, current_build
from kb.diagnosis.contract import Catalog
from kb.diagnosis.rules import Rules, rules_compile

FORMAT = 1


@dataclass(frozen=True)
class RulesSnapshot:
    revision: str
    rules: Rules
    catalog: Catalog


def rules_snapshot_write(build: Path, *, revision: str, cases: list[dict], harmless: list[dict], catalog: Catalog) -> None:
    """`cases` and `harmless` are the rows the database now holds, as kb.diagnose.rules_current reads them."""
    body = {
        "format": FORMAT,
        "revision": revision,
        "cases": cases,
        "harmless": harmless,
        "titles": catalog.titles,
        "case_urls": catalog.case_urls,
        "harmless_url": catalog.harmless_url,
    }
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
    catalog = Catalog(titles=body["titles"], case_urls=body["case_urls"], harmless_url=body["harmless_url"])
    return RulesSnapshot(revision=body["revision"], rules=rules_compile(body["cases"], body["harmless"]), catalog=catalog)
