"""What the wizard's templates show, shaped from the engine's Step (the view-model half of the views, like
kb/presentation.py): answers with Change links, the question's options or fields, the leaf with its script."""
from __future__ import annotations

from typing import Callable

from django.urls import reverse
from django.utils.safestring import mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer

from kb.content.rendering import code_blocks_focusable
from kb.models import Case, ContentState
from troubleshooter.echo import text_shown
from troubleshooter.engine import Step
from troubleshooter.library import library_published
from troubleshooter.links import script_url, step_url
from troubleshooter.rules import RULES
from troubleshooter.scripts import EXAMPLE_COMMANDS, ScriptSource, script_render, script_sets_anything
from troubleshooter.tree_model import Tree

STEP_TARGET = "#wizard-step"


def step_view_model(tree: Tree, resolved: Step, raw: dict[str, str], error: str | None, *,
                    absolute: Callable[[str], str]) -> dict:
    """What the step templates show: the answers so far with their Change links, then the question or the leaf."""
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
        context.update(leaf_view_model(tree, resolved, absolute=absolute))
    return context


def leaf_view_model(tree: Tree, resolved: Step, *, absolute: Callable[[str], str]) -> dict:
    """A diagnosis: the case, its fix steps, and the script (highlighted, with its download link)."""
    leaf = resolved.leaf
    case = Case.objects.filter(slug=leaf.case).first()
    titles = {s["id"]: s["title"] for s in case.fix_steps()} if case else {}
    case_path = reverse("kb:case_detail", args=[leaf.case])
    on_path = path_answers(resolved)
    return {
        "page_title": leaf.title,
        "leaf": leaf,
        "case_url": case_path,
        "case_title": case.title if case else leaf.case,
        "fix_steps": [{"id": s, "title": titles.get(s, s), "url": f"{case_path}#{s}"} for s in leaf.fix_steps],
        # Pygments escapes every character of the script, values from the URL included.
        "script_html": mark_safe(code_blocks_focusable(
            highlight(script_text(tree, resolved, absolute=absolute), BashLexer(), HtmlFormatter(cssclass="highlight")))),
        "download_url": script_url(tree.id, on_path),
        "example_command": EXAMPLE_COMMANDS[resolved.roles["launcher"]],
        # A script that exports nothing must not claim to apply settings (issue 11).
        "sets_anything": script_sets_anything(resolved, library_published().parts),
    }


def script_text(tree: Tree, resolved: Step, *, absolute: Callable[[str], str]) -> str:
    """The same text for the page and the download: built only from the answers on the path to the leaf."""
    leaf = resolved.leaf
    case_url = absolute(reverse("kb:case_detail", args=[leaf.case]))
    source = ScriptSource(case_url=case_url, fix_step_urls=tuple(f"{case_url}#{s}" for s in leaf.fix_steps),
                          wizard_url=absolute(step_url(tree.id, path_answers(resolved))),
                          revision=ContentState.loaded_revision())
    return script_render(resolved, library_published().parts, source)


def path_answers(resolved: Step) -> dict[str, str]:
    return {a.question.id: a.value for a in resolved.path}
