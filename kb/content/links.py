"""Links in case bodies: each names a page of this site by the URLconf, so a renamed route or a moved case
is a content error, not a dead link. The one case check that asks Django (kb/content/cases.py stays pure)."""

from __future__ import annotations

from django.urls import Resolver404, resolve

from kb.content.cases import CaseDoc, body_line
from kb.content.errors import ContentError

# Besides other cases, a case may link to the case lists, the search and the troubleshooter.
_LINKABLE_VIEWS = {"kb:case_list", "kb:harmless_list", "kb:search"}


def case_links_check(docs: list[CaseDoc], file_slugs: set[str]) -> list[ContentError]:
    """Links to other cases must name an existing case and, when they carry one, an existing anchor.

    `file_slugs` holds every case file, valid or not, so one broken file does not cascade into link errors."""
    by_slug = {doc.slug: doc for doc in docs}
    errors: list[ContentError] = []
    for doc in docs:
        for path, _, anchor in (href.partition("#") for href in doc.body.links if href.startswith("/")):
            site_page, slug = _link_target(path)
            target = by_slug.get(slug) if slug else None
            line = body_line(doc.front_matter, "", needle=path)
            if not site_page:
                errors.append(
                    ContentError(
                        doc.path, line, f"link to '{path}' does not point at a page of this site (cases live at /kb/<slug>/)"
                    )
                )
            elif slug and target is None and slug not in file_slugs:
                errors.append(ContentError(doc.path, line, f"link to '{path}': there is no case '{slug}'"))
            elif target is not None and anchor and anchor not in target.anchors and anchor != "related":
                errors.append(ContentError(doc.path, line, f"link to '{path}#{anchor}': that case has no section '#{anchor}'"))
    return errors


def _link_target(path: str) -> tuple[bool, str | None]:
    """Whether a link path (query included) is a page a case may link to, and the case slug when it is a case."""
    try:
        match = resolve(path.split("?", 1)[0])
    except Resolver404:
        return False, None
    if match.view_name == "kb:case_detail":
        return True, match.kwargs["slug"]
    return match.view_name in _LINKABLE_VIEWS or match.namespace == "troubleshooter", None
