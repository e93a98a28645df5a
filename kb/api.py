"""JSON API. These endpoints only read: the diagnose POST changes nothing on the server, so it is
CSRF-exempt for scripts and CI jobs (see README, "API")."""

from __future__ import annotations

from typing import Callable

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe, require_POST

from kb.diagnose import job_diagnosis_run
from kb.forms import MAX_QUERY_CHARS, SearchForm
from kb.log_input import REFUSED, job_from_request, refusal
from kb.models import Case
from kb.search.index import IndexMissing, search_results
from kb.selectors import case_tags


def answers_json(view: Callable) -> Callable:
    """Marks a view whose refusals are JSON, including the request guard's (config/guards.py), which runs
    before the view and must not answer a script with an HTML page."""
    view.answers_json = True  # type: ignore[attr-defined]
    return view


@answers_json
@require_safe
def case_json(request: HttpRequest, slug: str) -> JsonResponse:
    case = Case.objects.prefetch_related("tags").filter(slug=slug).first()
    if case is None:
        return JsonResponse({"error": f"no case '{slug}'"}, status=404)
    tags = case_tags(case)
    return JsonResponse(
        {
            "slug": case.slug,
            "title": case.title,
            "summary": case.summary,
            "url": case.get_absolute_url(),
            "aliases": list(case.aliases.values_list("slug", flat=True)),
            "tags": tags,
            "applies_to": case.applies_to,
            "symptoms": case.symptoms,
            "signatures": case.signatures,
            "related": case.related,
            "references": case.references,
            "sections": case.sections,
            "fix_steps": case.fix_steps(),
            "last_reviewed": case.last_reviewed.isoformat(),
        },
        json_dumps_params={"ensure_ascii": False},
    )


@answers_json
@csrf_exempt
@require_POST
def diagnose(request: HttpRequest) -> JsonResponse:
    """A raw body (a log, or a .tar.gz/.zip of a job's logs), a form field `log`, or uploaded files `file`."""
    try:
        job = job_from_request(request, allow_raw_body=True)
    except REFUSED as err:
        refused = refusal(err)
        return JsonResponse(refused.json(), status=refused.status)
    try:
        top = max(1, min(int(request.GET.get("top", 5)), 20))
    except ValueError:
        return JsonResponse({"error": "top must be a whole number"}, status=400)
    result = job_diagnosis_run(job, top=top, budget_s=settings.KB_DIAGNOSIS_BUDGET_S)
    return JsonResponse(result.to_json(), json_dumps_params={"ensure_ascii": False})


@answers_json
@require_safe
def search(request: HttpRequest) -> JsonResponse:
    form = SearchForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"error": f"q is limited to {MAX_QUERY_CHARS} characters"}, status=400)
    query = form.query
    try:
        found = search_results(query, index_dir=settings.SEARCH_INDEX_DIR, limit=10)
    except IndexMissing:
        return JsonResponse({"error": "the search index is missing or cannot be read; run load_content"}, status=503)
    return JsonResponse(
        {
            "query": query,
            "total": found.total,
            "suggestion": found.suggestion,
            "results": [
                {
                    "slug": h.slug,
                    "title": h.title,
                    "summary": h.summary,
                    "score": h.score,
                    "url": h.url,
                    "section": h.section_id,
                    "section_title": h.section_title,
                    "section_url": h.target_url,
                    "relevance": h.relevance,
                    "words_matched": h.words_matched,
                    "words_total": h.words_total,
                }
                for h in found.hits
            ],
        }
    )
