"""Hooks other apps register when Django starts, so kb never imports them (the way
`django.core.checks.register` works): content checks that `validate_content` and `load_content` run with
the cases', and the link from a diagnosis into a troubleshooter."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from kb.content.cases import CaseDoc
from kb.content.errors import ContentError

ContentCheck = Callable[[Path, list[CaseDoc]], list[ContentError]]
FactsLink = Callable[[Mapping[str, Any]], "str | None"]

_content_checks: list[ContentCheck] = []
_facts_links: list[FactsLink] = []


def content_check_register(check: ContentCheck) -> ContentCheck:
    if check not in _content_checks:
        _content_checks.append(check)
    return check


def facts_link_register(link: FactsLink) -> FactsLink:
    if link not in _facts_links:
        _facts_links.append(link)
    return link


def content_checks_run(content_dir: Path, docs: list[CaseDoc]) -> list[ContentError]:
    return [error for check in _content_checks for error in check(content_dir, docs)]


def facts_link(facts: Mapping[str, Any]) -> str | None:
    """Where a diagnosis can continue with its facts (the first registered app that offers a link)."""
    for link in _facts_links:
        url = link(facts)
        if url:
            return url
    return None
