"""Reads the pages and the API share: each query written once."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from kb.models import Case, Tag


def cases_listed(tags: list[tuple[str, str]] = ()) -> QuerySet[Case]:
    """Cases carrying every (facet, value) given; the triage guide first, then by title."""
    cases = Case.objects.prefetch_related("tags")
    for facet, value in tags:
        cases = cases.filter(tags__facet=facet, tags__value=value)
    return cases.distinct().order_by("-guide", "title")


def tags_by_facet() -> dict[str, list[tuple[str, int]]]:
    """Every tag some case carries, with how many cases carry it, by facet (framework, component, phase)."""
    facets: dict[str, list[tuple[str, int]]] = {}
    for tag in Tag.objects.annotate(n=Count("cases")).filter(n__gt=0).order_by("facet", "value"):
        facets.setdefault(tag.facet, []).append((tag.value, tag.n))
    order = ["framework", "component", "phase"]
    return dict(sorted(facets.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def case_tags(case: Case) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for tag in case.tags.all():
        tags.setdefault(tag.facet, []).append(tag.value)
    return tags


def cases_brief() -> list[Case]:
    """Every case's slug, title, `related` and guide flag, by title: what a case page needs of the other cases (its
    links both ways, its vote form's list), in one query."""
    return list(Case.objects.only("slug", "title", "related", "guide").order_by("title"))


def related_cases(case: Case, cases: list[Case]) -> list[Case]:
    """The cases this one names in `related`, in the author's order, from `cases` (cases_brief)."""
    by_slug = {other.slug: other for other in cases}
    return [by_slug[slug] for slug in dict.fromkeys(case.related) if slug in by_slug]


def linked_from(case: Case, cases: list[Case]) -> list[Case]:
    """Cases of `cases` (cases_brief) that name this one as related, and that it does not name back."""
    return [c for c in cases if case.slug in c.related and c.slug not in case.related]
