"""Wizard views: parse the query, call the pure engine and composer, render.

One URL per step serves the full page, or, for htmx requests, only the step panel
(`_step.html`); htmx history restores get the full page. A bad state answers 400 with a message
and still shows the step without the bad answer, never a 500.
"""
from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe
from django_htmx.middleware import HtmxDetails
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer

from kb.content.rendering import code_blocks_focusable
from kb.models import Case, ContentState
from troubleshooter.content import library_published
from troubleshooter.engine import StateError, Step, step_resolve, text_shown, tree_step
from troubleshooter.links import script_url, step_url
from troubleshooter.rules import RULES
from troubleshooter.scripts import EXAMPLE_COMMANDS, ScriptSource, script_render
from troubleshooter.trees import Tree

STEP_TARGET = "#wizard-step"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_safe
def index(request: HtmxHttpRequest) -> TemplateResponse:
    """The starting points: every tree, with its first question's answers as direct links."""
    library = library_published()
    trees = []
    for tree in sorted(library.trees.values(), key=lambda t: t.title):
        start = tree.question(tree.start)
        starts = [{"label": c.label, "help": c.help, "url": step_url(tree.id, {start.id: c.id})} for c in start.choices]
        trees.append({"tree": tree, "url": step_url(tree.id, {}), "question": start.text, "starts": starts})
    return TemplateResponse(request, "troubleshooter/index.html", {"trees": trees})


@require_safe
def step(request: HtmxHttpRequest, tree_id: str) -> TemplateResponse:
    """One step of a tree, named by the answers in the query."""
    tree = _tree_or_404(tree_id)
    try:
        answers, error = _query_answers(request), None
    except StateError as err:
        answers, error = {}, str(err)
    resolved, state_error = step_resolve(tree, answers)
    error = error or state_error
    context = _step_context(request, tree, resolved, answers, error)
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    template = "troubleshooter/_step.html" if partial else "troubleshooter/step.html"
    response = TemplateResponse(request, template, context, status=400 if error else 200)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_safe
def script(request: HtmxHttpRequest, tree_id: str) -> HttpResponse:
    """fix.sh for a state that reached a leaf, as a download."""
    tree = _tree_or_404(tree_id)
    try:
        resolved = tree_step(tree, _query_answers(request))
    except StateError as err:
        return HttpResponseBadRequest(f"{err}\n", content_type="text/plain; charset=utf-8")
    if resolved.leaf is None:
        return HttpResponseBadRequest("These answers do not reach a diagnosis yet, so there is no script. "
                                      f"Next question: {resolved.question.text}\n", content_type="text/plain; charset=utf-8")
    response = HttpResponse(_script_text(request, tree, resolved), content_type="text/x-shellscript")
    response["Content-Disposition"] = 'attachment; filename="fix.sh"'
    return response


def _tree_or_404(tree_id: str) -> Tree:
    tree = library_published().trees.get(tree_id)
    if tree is None:
        raise Http404(f"There is no troubleshooter called '{tree_id}'.")
    return tree


def _query_answers(request: HttpRequest) -> dict[str, str]:
    """The query as answers; a question answered twice is a tampered or hand-made URL."""
    answers: dict[str, str] = {}
    for key, values in request.GET.lists():
        if len(values) != 1:
            raise StateError(f"'{text_shown(key)}' is answered {len(values)} times in this link; each question takes one answer.")
        answers[key] = values[0]
    return answers


def _step_context(request: HttpRequest, tree: Tree, resolved: Step, raw: dict[str, str], error: str | None) -> dict:
    answers = resolved.answers
    path = [{"question": a.question.text, "label": a.label,
             "change_url": step_url(tree.id, {k: v for k, v in answers.items() if k != a.question.id})}
            for a in resolved.path]
    context = {"tree": tree, "step": resolved, "path": path, "error": error, "target": STEP_TARGET,
               "tree_url": step_url(tree.id, {})}
    question = resolved.question
    if question is not None:
        context["page_title"] = question.text
        if question.kind == "choice":
            context["options"] = [{"choice": c, "url": step_url(tree.id, {**answers, question.id: c.id})} for c in question.choices]
        else:
            context["fields"] = sorted([(k, v, False) for k, v in answers.items() if k != question.id] + [(question.id, "", True)])
            context["rule"] = RULES[question.rule]
            context["rejected"] = text_shown(raw.get(question.id, ""), limit=300) if error else ""
    else:
        context.update(_leaf_context(request, tree, resolved))
    return context


def _leaf_context(request: HttpRequest, tree: Tree, resolved: Step) -> dict:
    leaf = resolved.leaf
    case = Case.objects.filter(slug=leaf.case).first()
    titles = {s["id"]: s["title"] for s in case.fix_steps()} if case else {}
    case_path = f"/kb/{leaf.case}/"
    on_path = _path_answers(resolved)
    return {
        "page_title": leaf.title,
        "leaf": leaf,
        "case_url": case_path,
        "case_title": case.title if case else leaf.case,
        "fix_steps": [{"id": s, "title": titles.get(s, s), "url": f"{case_path}#{s}"} for s in leaf.fix_steps],
        # Pygments escapes every character of the script, values from the URL included.
        "script_html": mark_safe(code_blocks_focusable(
            highlight(_script_text(request, tree, resolved), BashLexer(), HtmlFormatter(cssclass="highlight")))),
        "download_url": script_url(tree.id, on_path),
        "example_command": EXAMPLE_COMMANDS[resolved.roles["launcher"]],
    }


def _script_text(request: HttpRequest, tree: Tree, resolved: Step) -> str:
    """The same text for the page and the download: built only from the answers on the path to the leaf."""
    leaf = resolved.leaf
    case_url = request.build_absolute_uri(f"/kb/{leaf.case}/")
    source = ScriptSource(case_url=case_url, fix_step_urls=tuple(f"{case_url}#{s}" for s in leaf.fix_steps),
                          wizard_url=request.build_absolute_uri(step_url(tree.id, _path_answers(resolved))),
                          revision=ContentState.loaded_revision())
    return script_render(resolved, library_published().parts, source)


def _path_answers(resolved: Step) -> dict[str, str]:
    return {a.question.id: a.value for a in resolved.path}
