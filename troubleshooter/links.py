"""URLs into the wizard: one place that turns a state into a link, for views, templates and the diagnosis page."""
from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlencode

from django.urls import reverse

from troubleshooter.library import library_published
from troubleshooter.facts import answers_from_facts


def state_query(answers: Mapping[str, str]) -> list[tuple[str, str]]:
    """Answers as URL query pairs, sorted by question id so equal states have equal URLs."""
    return sorted(answers.items())


def step_url(tree_id: str, answers: Mapping[str, str]) -> str:
    """The wizard page for a state; answers sorted by question id so equal states share one URL."""
    base = reverse("troubleshooter:step", args=[tree_id])
    return f"{base}?{urlencode(state_query(answers))}" if answers else base


def script_url(tree_id: str, answers: Mapping[str, str]) -> str:
    return f"{reverse('troubleshooter:script', args=[tree_id])}?{urlencode(state_query(answers))}"


def wizard_url_for_facts(facts: Mapping[str, Any]) -> str | None:
    """Where the log-diagnosis page sends the user: the tree the facts answer best, with those answers filled in.

    The wizard then skips every question the log already answered. None when no tree is available."""
    library = library_published()
    best: tuple[int, str, dict[str, str]] | None = None
    for tree_id in sorted(library.trees):
        answers = answers_from_facts(library.trees[tree_id], dict(facts))
        if best is None or len(answers) > best[0]:
            best = (len(answers), tree_id, answers)
    if best is None:
        return None
    return step_url(best[1], best[2])
