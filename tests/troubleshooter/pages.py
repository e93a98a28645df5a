"""Walking a tree's pages through the Django test client, for the fixture tree's tests and the real trees' smoke test."""

from __future__ import annotations

from urllib.parse import urlencode

import html5lib

from tests.kb.html_checks import assert_valid_html
from troubleshooter.engine import tree_step
from troubleshooter.tree_model import Tree, tree_walk

HTMX = {"HTTP_HX_REQUEST": "true"}


def assert_valid_fragment(content: bytes) -> None:
    html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parseFragment(content.decode())


def state_url(tree: Tree, answers: dict[str, str]) -> str:
    return f"/troubleshoot/{tree.id}/?" + urlencode(sorted(answers.items()))


def every_page_renders(client, tree: Tree) -> None:
    """One state per leaf, and every prefix of it: each question page and each diagnosis page once, as a page and as
    an htmx partial, answers 200 with valid HTML; and every leaf is reached."""
    seen_leaves, seen_questions = set(), set()
    for state in tree_walk(tree):
        leaf = tree_step(tree, state).leaf.id
        if leaf in seen_leaves:
            continue
        seen_leaves.add(leaf)
        path = [a.question.id for a in tree_step(tree, state).path]
        for cut in range(len(path) + 1):
            answers = {k: state[k] for k in path[:cut]}
            step = tree_step(tree, answers)
            key = step.question.id if step.question else step.leaf.id
            if key in seen_questions:
                continue
            seen_questions.add(key)
            for partial in (False, True):
                response = client.get(state_url(tree, answers), **(HTMX if partial else {}))
                assert response.status_code == 200, (answers, response.content[:300])
                (assert_valid_fragment if partial else assert_valid_html)(response.content)
    assert seen_leaves == {leaf.id for leaf in tree.leaves()}
