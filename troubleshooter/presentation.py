"""What the wizard's templates show, shaped from the engine's Step (the view-model half of the views, like
kb/result_view.py): answers with Change links and where they came from, the question with the current answer
selected, the leaf with its script and a sentence that says what the script does."""

from __future__ import annotations

import re
from typing import Callable

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer

from kb.content.rendering import code_blocks_focusable
from kb.models import Case, ContentState, case_url
from troubleshooter.echo import text_shown
from troubleshooter.engine import Step
from troubleshooter.library import library_published
from troubleshooter.links import script_url, state_url
from troubleshooter.rules import RULES, Rule
from troubleshooter.scripts import EXAMPLE_COMMANDS, ScriptSource, ScriptSummary, script_render, script_summary
from troubleshooter.state import State, state_pairs_for_form
from troubleshooter.tree_model import Question, Tree

STEP_TARGET = "#wizard-step"


def step_view_model(
    tree: Tree, resolved: Step, state: State, raw: dict[str, str], error: str | None, *, absolute: Callable[[str], str]
) -> dict:
    """What the step templates show: the answers so far, then the question (the one being changed, if any) or the leaf.

    `state` is canonical (state.state_resolve), so every link built here carries only answers that still matter."""
    changing = tree.question(state.change) if state.change else None
    question = changing or resolved.question
    answered = _answered_view(tree, resolved, state, skip=changing.id if changing else None)
    context = {
        "tree": tree,
        "step": resolved,
        "path": answered,
        "error": error,
        "target": STEP_TARGET,
        "tree_url": state_url(tree.id, State()),
        "back_url": _back_url(tree, resolved, state),
        "from_log_count": sum(1 for item in answered if item["from_log"]),
    }
    if question is None:
        context.update(leaf_view_model(tree, resolved, absolute=absolute))
        return context
    current = state.answers.get(question.id, "")
    context.update(
        question=question,
        changing=changing is not None,
        page_title=question.text,
        fields=sorted([(name, value) for name, value in state_pairs_for_form(state, question.id)] + [(question.id, None)]),
    )
    if question.kind == "choice":
        context["help"] = question.help
        context["options"] = [{"choice": c, "checked": c.id == current} for c in question.choices]
    else:
        rule = RULES[question.rule]
        context["help"] = value_help(question, rule)
        context["rule"] = rule
        context["current_value"] = text_shown(raw.get(question.id, ""), limit=300) if error else current
    return context


def _back_url(tree: Tree, resolved: Step, state: State) -> str | None:
    """Back, as GOV.UK Smart Answers has it on every page: the previous question on the path, with its answer
    selected and every later answer kept (the change view); None on the first question (Back is then the list)."""
    asked = [a.question.id for a in resolved.path]
    if state.change is not None:
        asked = asked[: asked.index(state.change)] if state.change in asked else []
    if not asked:
        return None
    return state_url(tree.id, State(state.answers, state.from_log, change=asked[-1]))


def _answered_view(tree: Tree, resolved: Step, state: State, *, skip: str | None) -> list[dict]:
    """The answers on the path, in the order they were asked, then those given ahead of it (by a log, or before
    an earlier answer changed), in tree order: each with where it came from and a link that changes it."""
    on_path = [(a.question, a.value) for a in resolved.path]
    seen = {q.id for q, _ in on_path}
    ahead = [(q, state.answers[q.id]) for q in tree.questions() if q.id in state.answers and q.id not in seen]
    items = []
    for question, value in on_path + ahead:
        if question.id == skip:
            continue
        items.append(
            {
                "question": question.text,
                "label": question.label_for(value),
                "ahead": question.id not in seen,
                "from_log": question.id in state.from_log,
                "change_url": state_url(tree.id, State(state.answers, state.from_log, change=question.id)),
            }
        )
    return items


def value_help(question: Question, rule: Rule) -> str:
    """The one help text of a free-value question: the tree's hint, what its rule accepts, and the example unless
    that text already names it (the rules' descriptions often do)."""
    hint = question.help.strip()
    if hint and not hint.endswith((".", "!", "?", ":")):
        hint += "."
    text = f"{hint} Give {rule.describe}." if hint else f"Give {rule.describe}."
    example = question.example or ""
    if example and not re.search(rf"(?<![\w.-]){re.escape(example)}(?![\w.-])", text):
        text += f" For example: `{example}`."
    return text


def leaf_view_model(tree: Tree, resolved: Step, *, absolute: Callable[[str], str]) -> dict:
    """A diagnosis: the case, its fix steps, and the script (a sentence on what it does, highlighted, downloadable)."""
    leaf = resolved.leaf
    case = Case.objects.filter(slug=leaf.case).first()
    titles = {s["id"]: s["title"] for s in case.fix_steps()} if case else {}
    case_path = case_url(leaf.case)
    on_path = path_answers(resolved)
    summary = script_summary(resolved, library_published().parts)
    return {
        "page_title": leaf.title,
        "leaf": leaf,
        "case_url": case_path,
        "case_title": case.title if case else leaf.case,
        "fix_steps": [{"id": s, "title": titles.get(s, s), "url": f"{case_path}#{s}"} for s in leaf.fix_steps],
        # Pygments escapes every character of the script, values from the URL included.
        "script_html": mark_safe(
            code_blocks_focusable(
                highlight(script_text(tree, resolved, absolute=absolute), BashLexer(), HtmlFormatter(cssclass="highlight"))
            )
        ),
        "script_summary": script_summary_html(
            summary, EXAMPLE_COMMANDS[resolved.roles["launcher"]], mpirun=resolved.roles["launcher"] == "mpirun"
        ),
        "download_url": script_url(tree.id, on_path),
    }


def script_summary_html(summary: ScriptSummary, command: str, *, mpirun: bool) -> SafeString:
    """One sentence: what `./fix.sh CMD` exports (or that it sets nothing) and what `./fix.sh --check` runs.

    Issue 11: a script that exports nothing must not claim to apply settings."""
    iface = summary.mpi_interface
    if summary.exports:
        does = format_html("exports {}", _code_list(summary.exports))
        if mpirun:
            does = format_html(
                "{}, passes {} to every rank with <code>-x</code>", does, "it" if len(summary.exports) == 1 else "them"
            )
        if iface:
            does = format_html("{} and pins Open MPI’s TCP traffic to <code>{}</code>", does, iface)
    elif iface:
        does = format_html("sets no environment variable but pins Open MPI’s TCP traffic to <code>{}</code>", iface)
    else:
        does = None
    first = format_html(" after {}", _words_list(summary.actions)) if summary.actions else ""
    if does is not None:
        run = format_html("<code>./fix.sh {}</code> {}{}, prints what else to change and runs your command", command, does, first)
    else:
        run = format_html(
            "<code>./fix.sh {}</code> sets no environment variable: {}it prints the changes to make in "
            "your code, flags or platform, then runs your command as it is",
            command,
            format_html("{}, ", _words_list(summary.actions)) if summary.actions else "",
        )
    if summary.check_count:
        checks = format_html(
            "<code>./fix.sh --check</code> changes nothing: it runs {} read-only check{} with {}",
            summary.check_count,
            "" if summary.check_count == 1 else "s",
            _code_list(summary.check_tools),
        )
    else:
        checks = format_html("<code>./fix.sh --check</code> changes nothing: it only lists what the script would set")
    return format_html("{}; {}.", run, checks)


def _code_list(items: tuple[str, ...]) -> SafeString:
    codes = [format_html("<code>{}</code>", item) for item in items]
    return _joined(codes)


def _words_list(items: tuple[str, ...]) -> SafeString:
    return _joined([format_html("{}", item) for item in items])


def _joined(items: list[SafeString]) -> SafeString:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return items[0] if items else mark_safe("")
    return format_html("{} and {}", format_html_join(", ", "{}", ((item,) for item in items[:-1])), items[-1])


def script_text(tree: Tree, resolved: Step, *, absolute: Callable[[str], str]) -> str:
    """The same text for the page and the download: built only from the answers on the path to the leaf."""
    leaf = resolved.leaf
    source = ScriptSource(
        case_url=absolute(case_url(leaf.case)),
        fix_step_urls=tuple(absolute(case_url(leaf.case, step)) for step in leaf.fix_steps),
        wizard_url=absolute(state_url(tree.id, State(path_answers(resolved)))),
        revision=ContentState.loaded_revision(),
    )
    return script_render(resolved, library_published().parts, source)


def path_answers(resolved: Step) -> dict[str, str]:
    return {a.question.id: a.value for a in resolved.path}
