"""Wizard pages of the real trees in content/trees: one smoke test per tree (every question and every outcome renders),
and the behaviours that need the real content loaded (the order of the published trees, a refused load, a vote on a
real case). What the views do with any tree is checked on the fixture tree in test_views.py."""

from __future__ import annotations

import re

import html5lib
import pytest

from tests.troubleshooter.pages import every_page_renders
from troubleshooter.engine import tree_step
from troubleshooter.links import step_url
from troubleshooter.tree_model import tree_walk

pytestmark = pytest.mark.django_db

REAL_TREES = ["capture", "hang"]


def hrefs(content: bytes) -> list[str | None]:
    return [el.get("href") for el in html5lib.parse(content, namespaceHTMLElements=False).iter("a")]


@pytest.fixture(autouse=True)
def _content(loaded_content):
    """Every page here shows case titles from the database."""


def test_the_real_trees_are_the_ones_these_tests_walk(library):
    assert sorted(library.trees) == REAL_TREES


@pytest.mark.parametrize("tree_id", REAL_TREES)
def test_every_question_and_every_leaf_of_a_real_tree_renders_as_valid_html(client, library, tree_id):
    """The smoke test of each real tree: one state per leaf, and every prefix of it, as a page and as a partial."""
    tree = library.trees[tree_id]
    every_page_renders(client, tree)


def test_the_index_lists_the_diagnosing_trees_before_the_capture_tree(client):
    links = hrefs(client.get("/troubleshoot/").content)
    assert links.index("/troubleshoot/hang/") < links.index("/troubleshoot/capture/")


def test_a_tree_the_last_load_refused_does_not_reach_the_wizard(client, settings, content_copy, tmp_path, library):
    """Regression (robustness probe): the wizard read content/ live, so an invalid tree that load_content
    had refused ("nothing was changed") broke /troubleshoot/hang/ at once."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    hang = library.trees["hang"]
    first_question = hang.question(hang.start).text
    settings.CONTENT_DIR = content_copy
    settings.SEARCH_INDEX_DIR = tmp_path / "published"
    call_command("load_content", verbosity=0)
    (content_copy / "trees" / "hang.yaml").write_text("id: hang\nnodes: [broken\n")
    with pytest.raises(CommandError):
        call_command("load_content", verbosity=0)
    response = client.get("/troubleshoot/hang/")
    assert response.status_code == 200 and first_question in response.content.decode()


def test_a_troubleshooter_outcome_asks_did_this_fix_it_and_counts_the_vote(client, library):
    from kb.reports.store import case_feedback

    state = next(iter(tree_walk(library.trees["hang"])))
    leaf = tree_step(library.trees["hang"], state).leaf
    page = client.get(step_url("hang", state)).content.decode()
    assert "Did this fix it?" in page and 'name="target" value="wizard"' in page
    ballot = re.search(r'name="ballot" value="([^"]+)"', page).group(1)
    ref = re.search(r'name="ref" value="([^"]+)"', page).group(1)
    response = client.post("/vote", {"target": "wizard", "ballot": ballot, "ref": ref, "answer": "yes"})
    assert response.status_code in (200, 302) and case_feedback(leaf.case)["yes"] == 1
