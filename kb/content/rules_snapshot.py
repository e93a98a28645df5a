"""The rules snapshot: what the engine matches and what a diagnosis links to, written into each published
build by `load_content` from the rows it has just written, so the command line can diagnose from the build
without starting Django or opening the database (start-up is most of the time on a short log).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.content.publish import current_build
from kb.diagnosis.contract import Catalog
from kb.diagnosis.rules import Rules, rules_compile

RULES_FILE = "rules.json"
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
    (build / RULES_FILE).write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")


def rules_snapshot_published(index_root: Path) -> bool:
    build = current_build(index_root)
    return build is not None and (build / RULES_FILE).is_file()


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
