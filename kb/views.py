"""Pages of the knowledge base. Each view parses the request, calls a function that knows nothing of HTTP,
and renders one template: the full page, or for htmx requests its `_fragment`."""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers
from django.templatetags.static import static
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_safe, require_http_methods

from config.database import failure_response
from kb.diagnose import job_diagnosis_run
from kb.context import account_kind
from kb.extensions import facts_link
from diagnosis.job_files import JobFile, JobInput, size_text
from kb.log_input import REFUSED, LogTooLarge, job_from_request, refusal
from kb.htmx import error_page, page_or_fragment, wants_fragment
from kb import page_cache
from kb.content.publish import served_build
from kb.forms import MAX_QUERY_CHARS, SearchForm, TagFilterForm, query_is_keywords  # noqa: F401 (MAX_QUERY_CHARS: kept importable from here)
from kb.models import Alias, Case, ContentState, HarmlessLine
from kb.search.index import IndexMissing, search as text_search, search_results
from kb.result_view import snapshot_view
from kb.report_views import case_ballot, case_feedback_context, result_context
from kb.reports.store import case_page_state
from kb.selectors import case_tags, cases_brief, cases_listed, linked_from, related_cases, tags_by_facet

SEARCH_PAGE_HITS = 20


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "kb/home.html",
        {"cases": cases_listed(), "limit": size_text(settings.KB_MAX_LOG_BYTES), "revision": ContentState.loaded_revision()},
    )


@vary_on_headers("HX-Request", "HX-Target")  # the answer depends on htmx and on which box asked
@require_http_methods(["GET", "HEAD", "POST"])
def search(request: HttpRequest) -> HttpResponse:
    """/search?q= : a stable, linkable URL. Words are a text search that says where each page mentions them;
    a query shaped like a log line (or several lines) is also diagnosed, like a paste into the box.

    The site's own search boxes POST (with CSRF), since people paste log lines into them and a log may hold a
    token: words are redirected to the GET URL (linkable, as a wiki needs), a log is answered in place, so it
    never reaches a URL, the browser's history or an access log."""
    if request.method == "POST":
        return _search_posted(request)
    form = SearchForm(request.GET)
    if not form.is_valid():
        return error_page(request, 400, "Query too long", form.errors["q"][0])
    query = form.query
    if query.strip() and form.is_keyword_search:
        return _keyword_page(request, query)
    context = {"query": query, "limit": size_text(settings.KB_MAX_LOG_BYTES)}
    if query.strip():
        job = JobInput(files=[JobFile(name="query", data=query.encode("utf-8", errors="replace"))])
        context.update(_results(request, query, job, pasted="\n" in query.strip()))
    # search-as-you-type asks for words; a log-shaped query gets the diagnosis fragment
    fragment = "kb/_search_hits.html" if not query.strip() else "kb/_results.html"
    return page_or_fragment(request, "kb/search.html", fragment, context)


def _keyword_page(request: HttpRequest, query: str) -> HttpResponse:
    """A keyword search's page, or its hits for htmx, rendered once per worker for each (content revision, served
    build, query as typed, fragment or page) and reused: kb.search.index caches the hits, but rendering them was most
    of a 2 ms request. The query is kept as typed, since the page shows it so. `search` sends Vary: HX-Request."""
    revision = ContentState.loaded_revision()
    fragment = wants_fragment(request)
    audience = account_kind(request)
    key = ("search", str(served_build(settings.SEARCH_INDEX_DIR, revision)), query, fragment, audience)
    page = page_cache.get(revision, key)
    if page is None:
        try:
            context = {"query": query, "limit": size_text(settings.KB_MAX_LOG_BYTES), **_keyword_results(query, revision)}
        except IndexMissing:
            return _search_unavailable(request)
        page = page_cache.keep(
            revision,
            key,
            page_cache.rendered("kb/_search_hits.html" if fragment else "kb/search.html", context, audience=audience),
        )
    return page_cache.response(request, page)


def _search_posted(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("q", "")
    if not query.strip() or query_is_keywords(query):
        if wants_fragment(request):  # search as you type: the hits in place, no navigation
            try:
                context = {"query": query, **(_keyword_results(query) if query.strip() else {})}
            except IndexMissing:
                return _search_unavailable(request)
            return page_or_fragment(request, "kb/search.html", "kb/_search_hits.html", context)
        url = reverse("kb:search") + (f"?{urlencode({'q': query.strip()})}" if query.strip() else "")
        response = HttpResponseRedirect(url)
        response.status_code = 303  # See Other: the browser GETs the search's own URL
        return response
    data = query.encode("utf-8", errors="replace")
    if len(data) > settings.KB_MAX_LOG_BYTES:
        refused = LogTooLarge(settings.KB_MAX_LOG_BYTES)
        return error_page(request, 413, refused.title, refused.help_text())
    context = {"query": "", "pasted": True, "limit": size_text(settings.KB_MAX_LOG_BYTES)}
    job = JobInput(files=[JobFile(name="pasted", data=data)])
    context.update(_results(request, query[:2000], job, pasted="\n" in query.strip()))
    return page_or_fragment(request, "kb/search.html", "kb/_results.html", context)


def _keyword_results(query: str, revision: str | None = None) -> dict:
    """The hits for a keyword search (IndexMissing when the index is missing or cannot be read), in the build of
    `revision` when the request has read it already."""
    found = search_results(query, index_dir=settings.SEARCH_INDEX_DIR, limit=SEARCH_PAGE_HITS, revision=revision)
    suggestion_url = f"{reverse('kb:search')}?{urlencode({'q': found.suggestion})}" if found.suggestion else ""
    return {
        "keyword": True,
        "found": found,
        "suggestion_url": suggestion_url,
        "browse_tags": tags_by_facet() if found.weak else {},
    }


@require_http_methods(["GET", "POST"])
def diagnose(request: HttpRequest) -> HttpResponse:
    """POST a pasted log, uploaded log files or an archive of a job's log folder; results come back as a page,
    or as the results fragment for htmx."""
    if request.method == "GET":
        return render(request, "kb/search.html", {"query": "", "limit": size_text(settings.KB_MAX_LOG_BYTES)})
    try:
        job = job_from_request(request)
    except REFUSED as err:
        refused = refusal(err)
        return _diagnose_refused(request, refused.status, refused.title, refused.page_message(), refused.field)
    context = {"query": "", "pasted": True, "limit": size_text(settings.KB_MAX_LOG_BYTES)}
    context.update(_results(request, None, job, pasted=True))
    return page_or_fragment(request, "kb/search.html", "kb/_results.html", context)


def _diagnose_refused(request: HttpRequest, status: int, title: str, message: str, field: str) -> HttpResponse:
    """A refused paste or upload, said next to the field it is about: without JavaScript the form again with the
    message tied to the field (aria-describedby, aria-invalid); for htmx the message in place of the results, which
    site.js ties to the field the same way (`data-error-for`)."""
    context = {"title": title, "message": message, "error_for": field}
    if wants_fragment(request):
        return page_or_fragment(request, "error.html", "kb/_error.html", context, status=status)
    context.update(query="", form_error=context.copy(), limit=size_text(settings.KB_MAX_LOG_BYTES))
    return render(request, "kb/search.html", context, status=status)


def _results(request: HttpRequest, search_text: str | None, job: JobInput, *, pasted: bool) -> dict:
    """Diagnose, search, and shape the answer-first result; a paste (not a search link) also counts
    towards the case's numbers, or, when nothing explained it, towards the curators' templates. `search_text`: what
    the text search looks for; None for the head of the first log, as the diagnosis decoded it.

    The served revision is read once, here, and everything the answer draws on (rules, index, troubleshooter
    links, the vote form's cases) is of that revision: with the paste's counter, the request's only statements."""
    revision = ContentState.loaded_revision()
    result = job_diagnosis_run(job, budget_s=settings.KB_DIAGNOSIS_BUDGET_S, context=True, revision=revision)
    if search_text is None:
        first = next(iter(result.texts.lines), None) if result.texts else None
        search_text = result.texts.text(first)[:2000] if result.texts else ""
    try:
        hits = text_search(search_text, index_dir=settings.SEARCH_INDEX_DIR, limit=5, revision=revision)
    except IndexMissing:
        hits = []
    wizard_url = facts_link(result.handoff_facts, revision=revision) if result.handoff_facts else None
    # Evidence that does not explain the hang: offer the script that records what the next run needs.
    capture_url = None if result.best_slug else facts_link(result.facts, "capture", revision=revision)
    snapshot = result.to_snapshot(hits=hits, wizard_url=wizard_url or "", capture_url=capture_url or "")
    context = {"result": snapshot_view(snapshot), "hits": snapshot["hits"], "wizard_url": wizard_url}
    context.update(result_context(request, snapshot, result, job.logs(), pasted=pasted, revision=revision))
    return context


@require_safe
def case_list(request: HttpRequest) -> HttpResponse:
    """The case list, `?tag=facet:value&tag=...`: cases carrying every tag given. An unset filter (`tag=`, as a form with
    an empty select sends it) is redirected to the same list without it, so filter URLs stay clean."""
    raw = request.GET.getlist("tag")
    if any(not t.strip() for t in raw) or len(set(raw)) != len(raw):
        kept = list(dict.fromkeys(t for t in raw if t.strip()))
        return HttpResponseRedirect(
            reverse("kb:case_list") + (f"?{urlencode([('tag', t) for t in kept], safe=':')}" if kept else "")
        )
    form = TagFilterForm(request.GET)
    if not form.is_valid():
        return error_page(request, 400, "Bad tag filter", form.first_error())
    pairs = form.pairs()
    selected = [f"{f}:{v}" for f, v in pairs]
    context = {
        "cases": cases_listed(pairs),
        "facets": tags_by_facet(),
        "selected": selected,
        "remove_links": [(key, _tags_url([k for k in selected if k != key])) for key in selected],
    }
    return render(request, "kb/case_list.html", context)


def _tags_url(keys: list[str]) -> str:
    return reverse("kb:case_list") + (f"?{urlencode([('tag', k) for k in keys], safe=':')}" if keys else "")


@require_safe
def harmless_list(request: HttpRequest) -> HttpResponse:
    """Messages that look like failures and are not: one section per entry, anchored by its id."""
    return render(request, "kb/harmless_list.html", {"entries": HarmlessLine.objects.all()})


@require_safe
def case_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A case page, rendered once per worker for each (content revision, slug, reader counts) and reused. The counts
    are read for every view (with the revision, in one query), so a vote or a paste counted by any worker shows on
    the next view from any worker; the CSRF token, og:url, the vote's ballot and return address are each request's
    own (kb/page_cache.py)."""
    revision, feedback = case_page_state(slug)
    audience = account_kind(request)
    key = ("case", slug, feedback, audience)
    page = page_cache.get(revision, key)
    if page is None:
        case = Case.objects.prefetch_related("tags").filter(slug=slug).first()
        if case is None:
            alias = Alias.objects.select_related("case").filter(slug=slug).first()
            if alias is not None:
                return HttpResponsePermanentRedirect(alias.case.get_absolute_url())
            # Rendered here rather than raised, so that `make run` (DEBUG on) shows this page too.
            return not_found(request, f"No case is called '{slug}'.")
        page = page_cache.keep(
            revision, key, page_cache.rendered("kb/case_detail.html", _case_context(case, feedback), audience=audience)
        )
    return page_cache.response(request, page, ballot=lambda: case_ballot(slug), next=request.get_full_path)


def _case_context(case: Case, feedback: dict) -> dict:
    """Everything a case page shows but the request's own values, which are holes (kb/page_cache.py)."""
    cases = cases_brief()
    related, linked = related_cases(case, cases), linked_from(case, cases)
    toc = _toc(case.sections) + [{"id": "references", "title": "References", "children": []}]
    if related or linked:
        toc.append({"id": "related", "title": "Related cases", "children": []})
    context = {
        "case": case,
        "related": related,
        "linked_from": linked,
        "tags": case_tags(case),
        "toc": toc,
        # the phone's one-line summary of "Applies to": each product once, in the case file's order
        "applies_software": list(dict.fromkeys(item["software"] for item in case.applies_to)),
        "edit_url": _edit_url(case),
    }
    # "Did this fix it?" and the honest counts
    context.update(
        case_feedback_context(case, feedback, others=cases, ballot=page_cache.hole("ballot"), next_url=page_cache.hole("next"))
    )
    return context


def _toc(sections: list[dict]) -> list[dict]:
    """Level-2 sections with their level-3 ones (causes, fix steps) nested under them."""
    toc: list[dict] = []
    for section in sections:
        if section["level"] == 2 or not toc:
            toc.append({"id": section["id"], "title": section["title"], "children": []})
        elif section["level"] == 3:
            toc[-1]["children"].append({"id": section["id"], "title": section["title"]})
    return toc


def _edit_url(case: Case) -> str:
    """KB_CONTENT_EDIT_URL (a setting or an environment variable) + the case file's path inside content/."""
    base = getattr(settings, "KB_CONTENT_EDIT_URL", None) or os.environ.get("KB_CONTENT_EDIT_URL", "")
    if not base:
        return ""
    path = case.source_path.replace("\\", "/")
    path = path.split("content/", 1)[1] if path.startswith("content/") or "/content/" in path else path
    return base.rstrip("/") + "/" + path.lstrip("/")


SEARCH_UNAVAILABLE = (
    "The search index of this site is missing or cannot be read, so no search can be answered now. Every case is "
    "still listed under All cases, and a pasted log is still diagnosed. The site's error log says what is wrong; "
    "running python manage.py load_content on the server rebuilds the index."
)


def _search_unavailable(request: HttpRequest) -> HttpResponse:
    """503, not an empty result: "no page mentions your words" would be a wrong answer, and a 500 a worse one."""
    return error_page(request, 503, "Search is unavailable", SEARCH_UNAVAILABLE)


def not_found(request: HttpRequest, exception: Exception | str | None = None) -> HttpResponse:
    message = (
        str(exception)
        if exception and str(exception) and "resolve" not in str(exception)
        else "There is no page at this address."
    )
    words = " ".join(re.findall(r"[a-z0-9]+", request.path.lower()))
    try:
        hits = text_search(words, index_dir=settings.SEARCH_INDEX_DIR, limit=5) if words else []
    except Exception:  # a broken index must not turn a 404 into a 500
        hits = []
    return render(request, "404.html", {"message": message, "hits": hits}, status=404)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, for browsers that do not read <link rel="icon">: the SVG under static/."""
    return HttpResponseRedirect(static("favicon.svg"))


def unknown_address(request: HttpRequest, path: str = "") -> HttpResponse:
    """The last URL pattern: any address no other pattern takes. It answers the site's own 404 page even
    with DEBUG on (Django's handler404 only serves when DEBUG is off), and keeps APPEND_SLASH's redirect,
    which a catch-all pattern would otherwise stop."""
    if not request.path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not unknown_address:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    return not_found(request)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "error.html", {"title": "Bad request", "message": "The request could not be understood."}, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    failure = failure_response(request, sys.exc_info()[1])  # the database or the temp space: 503, 507
    if failure is not None:
        return failure
    return render(
        request,
        "error.html",
        {"title": "Something went wrong", "message": "The error has been logged. Please try again."},
        status=500,
    )
