"""All trees and script parts of content/, checked together and against the cases.

`trees_check` is registered with kb.extensions (troubleshooter/apps.py): `load_content` and `validate_content` run it, so
a tree naming a missing case, fix step or script part stops the load with file:line. Views use
`library_published`: the snapshot of the loaded revision, read once per build, only trees without problems.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from kb.content.cases import CaseDoc
from kb.content.errors import ContentError, display_path
from kb.content.publish import build_problem_log, published_snapshot
from kb.models import ContentState
from troubleshooter.parts import Part, part_file_read, part_paths
from troubleshooter.roles import ALWAYS_REQUIRED, ROLE_VALUES
from troubleshooter.tree_file import tree_file_read, tree_paths
from troubleshooter.tree_model import Leaf, Tree, tree_branches
from kb.content.yamllines import YamlDocument

logger = logging.getLogger(__name__)


@dataclass
class Library:
    trees: dict[str, Tree] = field(default_factory=dict)  # only trees without problems
    parts: dict[str, Part] = field(default_factory=dict)
    errors: list[ContentError] = field(default_factory=list)
    parsed: list[tuple[Tree, YamlDocument]] = field(default_factory=list)  # every tree that parsed, for cross-checks


def library_read(content_dir: Path) -> Library:
    """Read every tree and part file; check each tree's leaves against the parts and the roles on its paths."""
    library = Library()
    for path in part_paths(content_dir):
        shown = display_path(path, content_dir)
        parts, problems = part_file_read(path, shown)
        library.errors += [ContentError(shown, line, message) for line, message in problems]
        for part_id, part in parts.items():
            if part_id in library.parts:
                first = library.parts[part_id]
                library.errors.append(
                    ContentError(shown, part.line, f"part '{part_id}' is already defined in {first.path}:{first.line}")
                )
            library.parts[part_id] = part
    used: set[str] = set()
    for path in tree_paths(content_dir):
        shown = display_path(path, content_dir)
        tree, doc, problems = tree_file_read(path, shown)
        errors = [ContentError(shown, line, message) for line, message in problems]
        if tree is not None and doc is not None:
            library.parsed.append((tree, doc))
            errors += _tree_parts_check(tree, doc, library.parts)
            used |= {part_id for leaf in tree.leaves() for part_id in leaf.script}
        library.errors += errors
        if tree is not None and not errors:
            library.trees[tree.id] = tree
    for part in library.parts.values():
        if part.id not in used:
            library.errors.append(ContentError(part.path, part.line, f"part '{part.id}' is used by no leaf"))
    return library


def trees_check(content_dir: Path, docs: list[CaseDoc]) -> list[ContentError]:
    """Every content problem in trees and parts, including leaves that name a missing case or fix step."""
    library = library_read(content_dir)
    errors = list(library.errors)
    cases = {doc.slug: doc for doc in docs}
    for tree, doc in library.parsed:
        for leaf in tree.leaves():
            where = ("nodes", leaf.id)
            case = cases.get(leaf.case)
            if case is None:
                errors.append(
                    ContentError(
                        tree.path,
                        doc.line_of(where + ("case",)),
                        f"leaf '{leaf.id}' names case '{leaf.case}', which does not exist",
                    )
                )
                continue
            for index, step in enumerate(leaf.fix_steps):
                if step not in case.anchors:
                    errors.append(
                        ContentError(
                            tree.path, doc.line_of(where + ("fix_steps", index)), f"case '{leaf.case}' has no fix step #{step}"
                        )
                    )
    return sorted(set(errors))


def _tree_parts_check(tree: Tree, doc: YamlDocument, parts: dict[str, Part]) -> list[ContentError]:
    errors: list[ContentError] = []
    for leaf in tree.leaves():
        where = ("nodes", leaf.id)
        missing = [p for p in leaf.script if p not in parts]
        for index, part_id in enumerate(leaf.script):
            if part_id in missing:
                errors.append(
                    ContentError(tree.path, doc.line_of(where + ("script", index)), f"script part '{part_id}' does not exist")
                )
        if len(set(leaf.script)) != len(leaf.script):
            errors.append(ContentError(tree.path, doc.line_of(where + ("script",)), "a script part is listed twice"))
        if missing:
            continue
        errors += [
            ContentError(tree.path, doc.line_of(where + ("script",)), message)
            for message in _leaf_roles_problems(tree, leaf, [parts[p] for p in leaf.script])
        ]
    return errors


def _leaf_roles_problems(tree: Tree, leaf: Leaf, parts: list[Part]) -> list[str]:
    """A script may only read roles that every way to its leaf answers, with values that role can take."""
    problems: list[str] = []
    needed = set(ALWAYS_REQUIRED).union(*(part.roles() for part in parts))
    for trail, reached in tree_branches(tree):
        if reached.id != leaf.id:
            continue
        on_way = [tree.nodes[q].role for q, _ in trail if tree.nodes[q].role] + [
            tree.nodes[q].role for q in leaf.asks if tree.nodes[q].role
        ]
        twice = sorted({role for role in on_way if on_way.count(role) > 1})
        way = " > ".join(f"{q}={a}" for q, a in trail)
        if twice:
            problems.append(f"role(s) {', '.join(twice)} answered twice on the way {way} to leaf '{leaf.id}'")
            break
        provided = set(on_way)
        absent = sorted(needed - provided)
        if absent:
            problems.append(
                f"leaf '{leaf.id}' needs answers for role(s) {', '.join(absent)} on the way {way}; add them to its asks"
            )
            break
    for part in parts:
        for role in part.seconds_roles():
            if any(q.rule != "minutes" for q in tree.role_questions(role)):
                problems.append(f"part '{part.id}' uses @{role}.seconds@, but role '{role}' is not answered in minutes")
        if part.mpi_interface and any(q.rule != "interface" for q in tree.role_questions(part.mpi_interface)):
            problems.append(f"part '{part.id}' pins MPI to role '{part.mpi_interface}', which is not an interface question")
        for item in (*part.checks, *part.env, *part.actions, *part.instructions):
            for role, values in item.only.items():
                if role in ROLE_VALUES:
                    continue
                offered = {c.id for q in tree.role_questions(role) for c in q.choices}
                unknown = sorted(values - offered)
                if unknown:
                    problems.append(f"part '{part.id}' is limited to {role} in {unknown}, which no '{role}' question offers")
    return problems


_cache_lock = threading.Lock()
_cache: dict[Path, Library] = {}


def library_published(revision: str | None = None) -> Library:
    """The trees and parts of the loaded content revision, read from the snapshot `load_content` published
    (never from content/ live, so a file the last load refused cannot reach a page). Read once per build.
    `revision`: the served revision as the request read it already; None reads it."""
    if revision is None:
        revision = ContentState.loaded_revision()
    snapshot = published_snapshot(settings.SEARCH_INDEX_DIR, revision)
    if snapshot is None or not snapshot.is_dir():
        problem = f"no troubleshooter content is published in {settings.SEARCH_INDEX_DIR}: run python manage.py load_content"
        build_problem_log(logger, problem)
        return Library(errors=[ContentError("content", 1, problem)])
    with _cache_lock:
        cached = _cache.get(snapshot)
    if cached is not None:
        return cached
    library = library_read(snapshot)
    for error in library.errors:
        logger.warning("troubleshooter content problem in the published snapshot: %s", error)
    with _cache_lock:
        if len(_cache) > 4:
            _cache.clear()
        _cache[snapshot] = library
    return library
