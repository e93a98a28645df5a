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


def related_cases(case: Case) -> list[Case]:
    """The cases this one names in `related`, in the author's order (slug and title: all a link needs)."""
    related = list(Case.objects.filter(slug__in=case.related).only("slug", "title"))
    related.sort(key=lambda c: case.related.index(c.slug))
    return related


def linked_from(case: Case) -> list[Case]:
    """Cases that name this one as related, and that it does not name back."""
    return [c for c in Case.objects.only("slug", "title", "related") if case.slug in c.related and c.slug not in case.related]
