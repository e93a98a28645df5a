"""Wizard views: parse the query, call the pure engine and composer, render.

One URL per step serves the full page, or, for htmx requests, only the step panel
(`_step.html`); htmx history restores get the full page. A bad state answers 400 with a message
and still shows the step without the bad answer, never a 500. A valid state whose URL is not canonical
(an answer no longer on the path, as a submitted form leaves behind, or keys out of order) is
redirected to its canonical URL, so the address bar and every link hold only answers that still matter.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.views.decorators.vary import vary_on_headers
from django.views.decorators.http import require_safe

from kb.report_views import wizard_vote_context
from kb.htmx import HtmxHttpRequest, error_page, page_or_fragment
from troubleshooter.engine import StateError, tree_step
from troubleshooter.library import Library, library_published
from troubleshooter.links import state_url, step_url
from troubleshooter.presentation import script_text, step_view_model
from troubleshooter.state import State, state_parse, state_resolve
from troubleshooter.tree_model import Tree


@require_safe
def index(request: HtmxHttpRequest) -> HttpResponse:
    """The starting points: every tree, with its first question's answers as direct links; the trees that
    diagnose come before the one that prepares the next capture."""
    library = library_published()
    if not library.trees:
        return _unavailable(request)
    trees = []
    for tree in sorted(library.trees.values(), key=lambda t: (t.purpose != "diagnose", t.title)):
        start = tree.question(tree.start)
        starts = [{"label": c.label, "help": c.help, "url": step_url(tree.id, {start.id: c.id})} for c in start.choices]
        trees.append({"tree": tree, "url": step_url(tree.id, {}), "question": start.text, "starts": starts})
    return TemplateResponse(request, "troubleshooter/index.html", {"trees": trees})


@vary_on_headers("HX-Request")  # a fragment for htmx, a page (or the canonical redirect) otherwise
@require_safe
def step(request: HtmxHttpRequest, tree_id: str) -> HttpResponse:
    """One step of a tree, named by the answers in the query."""
    library = library_published()
    if not library.trees:
        return _unavailable(request)
    tree = _tree_or_404(library, tree_id)
    try:
        state, error = state_parse(dict(request.GET.lists())), None
    except StateError as err:
        state, error = State(), str(err)
    resolved, canonical, state_error = state_resolve(tree, state)
    error = error or state_error
    canonical_url = state_url(tree.id, canonical)
    if error is None and request.get_full_path() != canonical_url:
        return HttpResponseRedirect(canonical_url)
    context = step_view_model(tree, resolved, canonical, state.answers, error, absolute=request.build_absolute_uri)
    if resolved.leaf is not None and canonical.change is None:  # "Did this fix it?" on the outcome, like results and case pages
        context["vote"] = wizard_vote_context(request, resolved.leaf.case, request.get_full_path())
    return page_or_fragment(
        request, "troubleshooter/step.html", "troubleshooter/_step.html", context, status=400 if error else 200
    )


@require_safe
def script(request: HtmxHttpRequest, tree_id: str) -> HttpResponse:
    """fix.sh for a state that reached a leaf, as a download."""
    library = library_published()
    if not library.trees:
        return _unavailable(request)
    tree = _tree_or_404(library, tree_id)
    try:
        resolved = tree_step(tree, state_parse(dict(request.GET.lists())).answers)
    except StateError as err:
        return HttpResponseBadRequest(f"{err}\n", content_type="text/plain; charset=utf-8")
    if resolved.leaf is None:
        return HttpResponseBadRequest(
            f"These answers do not reach a diagnosis yet, so there is no script. Next question: {resolved.question.text}\n",
            content_type="text/plain; charset=utf-8",
        )
    response = HttpResponse(script_text(tree, resolved, absolute=request.build_absolute_uri), content_type="text/x-shellscript")
    response["Content-Disposition"] = 'attachment; filename="fix.sh"'
    return response


UNAVAILABLE = (
    "The troubleshooter is unavailable: this site has no published content to walk. The site's error log says "
    "what is wrong; running python manage.py load_content on the server publishes it."
)


def _unavailable(request: HtmxHttpRequest) -> HttpResponse:
    """No published trees (no build, or one that lost its snapshot): a 503 that says so, not an empty list."""
    return error_page(request, 503, "Troubleshooter unavailable", UNAVAILABLE)


def _tree_or_404(library: Library, tree_id: str) -> Tree:
    tree = library.trees.get(tree_id)
    if tree is None:
        raise Http404(f"There is no troubleshooter called '{tree_id}'.")
    return tree
