"""Checks that other apps run on content during a load (the troubleshooter validates its trees here).

Kept in one hook so `load_content` stays all-or-nothing across cases and trees.
"""
from __future__ import annotations

from django.conf import settings

from kb.content.cases import CaseDoc
from kb.content.errors import ContentError


def extra_content_checks(docs: list[CaseDoc]) -> list[ContentError]:
    from troubleshooter.content import trees_check  # imported here: kb must not need the troubleshooter to import
    return trees_check(settings.CONTENT_DIR, docs)
