"""Hooks other apps register when Django starts, so kb never imports them (the way
`django.core.checks.register` works): content checks that `validate_content` and `load_content` run with
the cases', and the link from a diagnosis into a troubleshooter. Hooks are registered by dotted path and imported
on first use, so starting Django (the command line's start-up) does not import the other app's modules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from kb.content.cases import CaseDoc
    from kb.content.errors import ContentError

ContentCheck = Callable[[Path, "list[CaseDoc]"], "list[ContentError]"]
FactsLink = Callable[[Mapping[str, Any], str], "str | None"]  # (facts, the served revision) -> a link or None

_content_checks: list[str] = []  # dotted paths of ContentCheck functions
_facts_links: dict[str, list[str]] = {}  # purpose -> dotted paths of FactsLink functions


def content_check_register(dotted_path: str) -> None:
    if dotted_path not in _content_checks:
        _content_checks.append(dotted_path)


def facts_link_register(dotted_path: str, purpose: str = "wizard") -> None:
    """`purpose`: "wizard" (continue the diagnosis with its answers) or "capture" (what to record next time)."""
    links = _facts_links.setdefault(purpose, [])
    if dotted_path not in links:
        links.append(dotted_path)


def content_checks_run(content_dir: Path, docs: list[CaseDoc]) -> list[ContentError]:
    checks: list[ContentCheck] = [import_string(path) for path in _content_checks]
    return [error for check in checks for error in check(content_dir, docs)]


def facts_link(facts: Mapping[str, Any], purpose: str = "wizard", *, revision: str) -> str | None:
    """Where a diagnosis can continue with its facts, for a purpose (the first registered app that offers one), in
    the content of `revision`: the served revision as the request read it."""
    for path in _facts_links.get(purpose, []):
        link: FactsLink = import_string(path)
        url = link(facts, revision)
        if url:
            return url
    return None
