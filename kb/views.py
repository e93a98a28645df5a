"""Pages of the knowledge base. Each view parses the request, calls a function that knows nothing of HTTP,
and renders one template: the full page, or for htmx requests its `_fragment`."""
from __future__ import annotations

import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.views.decorators.http import require_safe, require_http_methods

from kb.diagnose import diagnosis_run
from kb.extensions import facts_link
from kb.log_input import LogTooLarge, NoLog, limit_text, log_from_request
from kb.models import Alias, Case, ContentState, HarmlessLine, Tag
from kb.search.index import IndexMissing, search as text_search
from kb.presentation import body_with_step_versions, result_snapshot, snapshot_view
from kb.report_views import case_feedback_context, result_context

MAX_QUERY_CHARS = 4000
_TAG_PARAM_RE = re.compile(r"^(framework|component|phase):([a-z0-9-]+)$")


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    cases = Case.objects.prefetch_related("tags")
    return render(request, "kb/home.html", {"cases": cases, "limit": limit_text(settings.KB_MAX_LOG_BYTES),
                                            "revision": ContentState.loaded_revision()})


@require_safe
def search(request: HttpRequest) -> HttpResponse:
    """/search?q= : a stable, linkable URL. Diagnoses the query text and runs text search on it."""
    query = request.GET.get("q", "")
    if len(query) > MAX_QUERY_CHARS:
        return _error(request, 400, "Query too long",
                      f"A search link can carry at most {MAX_QUERY_CHARS} characters. Paste longer logs into the box on the home page.")
    context = {"query": query, "limit": limit_text(settings.KB_MAX_LOG_BYTES)}
    if query.strip():
        # A multi-line query (a pasted log in a link) is a diagnosis, like a paste into the box.
        sources = [("query", query.encode("utf-8", errors="replace"))]
        context.update(_results(request, query, sources, pasted="\n" in query.strip()))
    template = "kb/_results.html" if request.htmx else "kb/search.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
def diagnose(request: HttpRequest) -> HttpResponse:
    """POST a pasted log or an uploaded file; results come back as a page, or as the results fragment for htmx."""
    if request.method == "GET":
        return render(request, "kb/search.html", {"query": "", "limit": limit_text(settings.KB_MAX_LOG_BYTES)})
    try:
        sources = log_from_request(request)
    except LogTooLarge as err:
        return _error(request, 413, "Log too large", f"{err} Trim it to the part around the first error, or split it per rank.")
    except NoLog as err:
        return _error(request, 400, "Nothing to diagnose", str(err))
    head = sources[0][1][:2000].decode("utf-8", errors="replace")
    context = {"query": "", "pasted": True, "limit": limit_text(settings.KB_MAX_LOG_BYTES)}
    context.update(_results(request, head, sources, pasted=True))
    template = "kb/_results.html" if request.htmx else "kb/search.html"
    return render(request, template, context)


def _results(request: HttpRequest, search_text: str, sources: list[tuple[str, bytes]], *, pasted: bool) -> dict:
    """Diagnose, search, and shape the answer-first result; a paste (not a search link) also counts
    towards the case's numbers, or, when nothing explained it, towards the curators' templates."""
    diagnosis = diagnosis_run(sources, budget_s=settings.KB_DIAGNOSIS_BUDGET_S)
    try:
        hits = text_search(search_text, index_dir=settings.SEARCH_INDEX_DIR, limit=5)
    except IndexMissing:
        hits = []
    wizard_url = facts_link(diagnosis.facts) if diagnosis.facts else None
    snapshot = result_snapshot(diagnosis, sources, hits=hits, wizard_url=wizard_url)
    context = {"result": snapshot_view(snapshot), "hits": snapshot["hits"], "wizard_url": wizard_url}
    context.update(result_context(request, snapshot, sources, pasted=pasted))
    return context


@require_safe
def case_list(request: HttpRequest) -> HttpResponse:
    cases = Case.objects.prefetch_related("tags")
    selected = []
    for raw in request.GET.getlist("tag"):
        match = _TAG_PARAM_RE.match(raw)
        if not match:
            return _error(request, 400, "Bad tag filter",
                          f"'{raw}' is not a tag. Tags look like framework:megatron-lm or phase:init.")
        facet, value = match.groups()
        selected.append((facet, value))
        cases = cases.filter(tags__facet=facet, tags__value=value)
    facets: dict[str, list[str]] = {}
    for tag in Tag.objects.all():
        facets.setdefault(tag.facet, []).append(tag.value)
    context = {"cases": cases.distinct(), "facets": facets, "selected": [f"{f}:{v}" for f, v in selected]}
    return render(request, "kb/case_list.html", context)


@require_safe
def harmless_list(request: HttpRequest) -> HttpResponse:
    """Messages that look like failures and are not: one section per entry, anchored by its id."""
    return render(request, "kb/harmless_list.html", {"entries": HarmlessLine.objects.all()})


@require_safe
def case_detail(request: HttpRequest, slug: str) -> HttpResponse:
    case = Case.objects.prefetch_related("tags").filter(slug=slug).first()
    if case is None:
        alias = Alias.objects.select_related("case").filter(slug=slug).first()
        if alias is not None:
            return HttpResponsePermanentRedirect(alias.case.get_absolute_url())
        raise Http404(f"No case is called '{slug}'.")
    related = list(Case.objects.filter(slug__in=case.related))
    related.sort(key=lambda c: case.related.index(c.slug))
    linked_from = [c for c in Case.objects.only("slug", "title", "related") if case.slug in c.related]
    tags: dict[str, list[str]] = {}
    for tag in case.tags.all():
        tags.setdefault(tag.facet, []).append(tag.value)
    toc = [s for s in case.sections if s["level"] == 2] + [{"id": "references", "title": "References", "level": 2}]
    context = {"case": case, "related": related, "linked_from": [c for c in linked_from if c.slug not in case.related],
               "tags": tags, "toc": toc, "body_html": body_with_step_versions(case.body_html, case.steps)}
    context.update(case_feedback_context(request, case))  # "Did this fix it?" and the honest counts
    return render(request, "kb/case_detail.html", context)


def _error(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    template = "kb/_error.html" if getattr(request, "htmx", False) else "error.html"
    return render(request, template, {"title": title, "message": message}, status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = str(exception) if exception and str(exception) and "resolve" not in str(exception) else \
        "There is no page at this address."
    words = " ".join(re.findall(r"[a-z0-9]+", request.path.lower()))
    try:
        hits = text_search(words, index_dir=settings.SEARCH_INDEX_DIR, limit=5) if words else []
    except Exception:  # a broken index must not turn a 404 into a 500
        hits = []
    return render(request, "404.html", {"message": message, "hits": hits}, status=404)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "error.html", {"title": "Bad request", "message": "The request could not be understood."}, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    return render(request, "error.html", {"title": "Something went wrong",
                                          "message": "The error has been logged. Please try again."}, status=500)
