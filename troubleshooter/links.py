"""URLs into the wizard: one place that turns a state into a link, for views, templates and the diagnosis page."""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlencode

from django.urls import reverse

from troubleshooter.facts import answers_from_facts
from troubleshooter.library import library_published
from troubleshooter.state import State, state_from_facts, state_query


def state_url(tree_id: str, state: State) -> str:
    """The wizard page for a state, its query sorted so equal states share one URL."""
    base = reverse("troubleshooter:step", args=[tree_id])
    query = state_query(state)
    return f"{base}?{urlencode(query)}" if query else base


def step_url(tree_id: str, answers: Mapping[str, str]) -> str:
    """The wizard page for answers the user gave."""
    return state_url(tree_id, State(dict(answers)))


def script_url(tree_id: str, answers: Mapping[str, str]) -> str:
    return f"{reverse('troubleshooter:script', args=[tree_id])}?{urlencode(sorted(answers.items()))}"


def wizard_url_for_facts(facts: Mapping[str, Any], revision: str | None = None) -> str | None:
    """Where the log-diagnosis page sends the user: the tree the facts answer best, with those answers filled in.

    The link is canonical (only answers on the path or still ahead of it) and marks every answer as read from the
    log, so the wizard opens at the first unanswered question and lists what the log answered. None when no tree
    is available. `revision`: the served revision, as `library_published` takes it."""
    library = library_published(revision)
    trees = [library.trees[tree_id] for tree_id in sorted(library.trees) if library.trees[tree_id].purpose == "diagnose"]
    if not trees:
        return None
    # a tree with a leaf for the diagnosed case first, then the one whose questions the facts answer most (the first
    # by id on a tie)
    tree = max(
        trees,
        key=lambda t: (any(leaf.case == facts.get("case") for leaf in t.leaves()), len(answers_from_facts(t, dict(facts)))),
    )
    return state_url(tree.id, state_from_facts(tree, facts))


def capture_url_for_facts(facts: Mapping[str, Any], revision: str | None = None) -> str | None:
    """The tree that records what the next hang needs (`purpose: capture`), with what the log already answers
    (the stacks and Flight Recorder dumps it holds, its launcher and PyTorch), so the script it ends in asks
    only for what is missing. None when no such tree is loaded. `revision`: as `library_published` takes it."""
    trees = library_published(revision).trees
    tree = next((trees[tree_id] for tree_id in sorted(trees) if trees[tree_id].purpose == "capture"), None)
    return state_url(tree.id, state_from_facts(tree, facts)) if tree is not None else None
