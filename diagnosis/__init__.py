"""Log diagnosis: pure Python, no Django. A job's logs in, one Result out.

`diagnose` is the one way in: the site, the API and the command line call it, and render the Result it returns
(diagnosis/result.py). The package imports nothing outside itself but the standard library and its pinned
speed-ups (tests/diagnosis/test_package_boundary.py)."""

from __future__ import annotations

from typing import Any, Sequence

from diagnosis.engine import log_diagnose, sources_split
from diagnosis.evidence import SourceText
from diagnosis.reading import Source
from diagnosis.result import Catalog, Result, result_build
from diagnosis.rules import Rules


def diagnose(
    sources: Sequence[tuple[str, Source]],
    rules: Rules,
    catalog: Catalog,
    *,
    top: int = 5,
    budget_s: float | None = None,
    workers: int = 1,
    ranks: dict[str, int] | None = None,
    notes: list[str] | None = None,
    context: bool = False,
    unpickled: dict[str, Any] | None = None,
) -> Result:
    """Diagnose one job's files (name, data: bytes, text, a path or a binary file object) against `rules`, and name
    and link the answer from `catalog`. `context`: keep the logs' text held in memory as lines, so each evidence row
    shows the lines around it and the odd ranks' own lines (a page asks for it; the JSON and the text need neither).
    `ranks` and `unpickled` come from diagnosis.job_files (JobInput.ranks, JobInput.unpickled) when the files were."""
    sources = list(sources)
    diagnosis = log_diagnose(sources, rules, top=top, budget_s=budget_s, workers=workers, ranks=ranks, unpickled=unpickled)
    texts = None
    if context:
        logs, _ = sources_split(sources)
        if logs and all(isinstance(data, (bytes, bytearray, str)) for _, data in logs):
            texts = SourceText.decoded(logs)
    return result_build(diagnosis, catalog, rules=rules, texts=texts, notes=notes)


__all__ = ["Catalog", "Result", "diagnose"]
