"""Read and validate every case file under content/cases/ (pure: no database, no Django)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.content.errors import ContentError, display_path
from kb.content.frontmatter import FrontMatter, front_matter_split
from kb.content.yamllines import YamlLineError
from kb.content.rendering import RenderedBody, body_render
from kb.content.schema import (
    OPTIONAL_SECTIONS,
    RENDERED_SECTIONS,
    REQUIRED_SECTIONS,
    case_front_matter_check,
)


@dataclass
class CaseDoc:
    """One validated case: its front matter, rendered body and where it came from."""

    slug: str
    meta: dict[str, Any]
    body: RenderedBody
    path: str
    front_matter: FrontMatter

    def line_of(self, yaml_path: tuple) -> int:
        return self.front_matter.line_of(yaml_path)

    @property
    def anchors(self) -> set[str]:
        return set(self.body.ids) | set(RENDERED_SECTIONS)


def case_paths(content_dir: Path) -> list[Path]:
    return sorted((content_dir / "cases").glob("*.md"))


def case_files_read(content_dir: Path) -> tuple[list[CaseDoc], list[ContentError]]:
    """Parse and validate every case; return the good ones and every problem found across all files."""
    docs: list[CaseDoc] = []
    errors: list[ContentError] = []
    for path in case_paths(content_dir):
        doc, problems = case_file_read(path, content_dir)
        errors += problems
        if doc is not None:
            docs.append(doc)
    errors += _cross_file_check(docs, {path.stem for path in case_paths(content_dir)})
    return docs, errors


def case_file_read(path: Path, content_dir: Path) -> tuple[CaseDoc | None, list[ContentError]]:
    shown = display_path(path, content_dir)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        return None, [ContentError(shown, line, "file is not valid UTF-8")]
    try:
        fm = front_matter_split(text)
    except YamlLineError as err:
        return None, [ContentError(shown, err.line, str(err))]
    errors = [ContentError(shown, fm.line_of(p), message) for p, message in case_front_matter_check(fm.data)]
    if errors:
        return None, errors
    slug = fm.data["slug"]
    if path.stem != slug:
        errors.append(ContentError(shown, fm.line_of(("slug",)), f"slug '{slug}' must equal the file name '{path.stem}'"))
    body = body_render(fm.body, fm.data.get("steps"))
    errors += _body_check(body, fm, shown)
    if errors:
        return None, errors
    return CaseDoc(slug=slug, meta=fm.data, body=body, path=shown, front_matter=fm), []


def _body_check(body: RenderedBody, fm: FrontMatter, shown: str) -> list[ContentError]:
    errors: list[ContentError] = []
    level2 = [s.id for s in body.sections if s.level == 2]
    for anchor in body.duplicate_ids:
        errors.append(ContentError(shown, body_line(fm, anchor), f"heading id '{anchor}' is used twice"))
    for anchor in RENDERED_SECTIONS:
        if anchor in body.ids:
            errors.append(
                ContentError(shown, body_line(fm, anchor), f"'#{anchor}' is rendered from the front matter; remove this heading")
            )
    for anchor, line in zip(body.level1_ids, _level1_lines(fm)):
        errors.append(
            ContentError(
                shown,
                line,
                f"a level-1 heading ('{anchor}'): case bodies start at level 2; a line that begins with '#' (such as an "
                "issue number a paragraph wrapped onto the start of a line) is read as a heading, so rewrap it",
            )
        )
    missing = [a for a in REQUIRED_SECTIONS if a not in level2]
    for anchor in missing:
        errors.append(ContentError(shown, fm.body_line, f"missing required section: a level-2 heading with {{#{anchor}}}"))
    present = [a for a in level2 if a in REQUIRED_SECTIONS]
    if not missing and present != list(REQUIRED_SECTIONS):
        errors.append(
            ContentError(shown, fm.body_line, f"required sections must come in this order: {', '.join(REQUIRED_SECTIONS)}")
        )
    steps = [s.id for s in body.fix_steps()]
    if not steps:
        errors.append(ContentError(shown, body_line(fm, "fix"), "the fix section needs at least one step heading {#fix-1}"))
    elif steps != [f"fix-{n}" for n in range(1, len(steps) + 1)]:
        errors.append(
            ContentError(
                shown, body_line(fm, steps[0]), f"fix steps must be numbered fix-1, fix-2, ... in order; found {', '.join(steps)}"
            )
        )
    for index, step in enumerate(fm.data.get("steps") or []):
        if step["anchor"] not in steps:
            errors.append(
                ContentError(
                    shown,
                    fm.line_of(("steps", index, "anchor")),
                    f"step '{step['anchor']}' is not a fix step of this case (it has {', '.join(steps) or 'none'})",
                )
            )
    allowed_level2 = set(REQUIRED_SECTIONS) | set(OPTIONAL_SECTIONS)
    for anchor in level2:
        if anchor not in allowed_level2 and anchor not in RENDERED_SECTIONS:
            errors.append(
                ContentError(
                    shown,
                    body_line(fm, anchor),
                    f"unknown level-2 section id '{anchor}' (allowed: {', '.join(sorted(allowed_level2))})",
                )
            )
    return errors


def _level1_lines(fm: FrontMatter) -> list[int]:
    """The file lines that begin with a single '#' outside fenced code: where Markdown found level-1 headings."""
    lines, fence = [], ""
    for number, line in enumerate(fm.body.split("\n")):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            fence = "" if fence and stripped.startswith(fence) else fence or stripped[:3]
        elif not fence and line.startswith("#") and not line.startswith("##"):
            lines.append(fm.body_line + number)
    return lines


def body_line(fm: FrontMatter, anchor: str, needle: str | None = None) -> int:
    """The file line of the heading `{#anchor}` (or of the first `needle`) in the body, for errors that point there."""
    match = re.search(re.escape(needle) if needle else r"\{#" + re.escape(anchor) + r"\}", fm.body)
    return fm.body_line + (fm.body[: match.start()].count("\n") if match else 0)


def _cross_file_check(docs: list[CaseDoc], file_slugs: set[str]) -> list[ContentError]:
    """Slugs and aliases are unique across all files; related cases exist. A case whose own file
    has errors still counts as existing here, so one broken file does not cascade into errors in the others.
    Links in the bodies are checked against the URLconf, outside this pure module (kb/content/links.py)."""
    errors: list[ContentError] = []
    owner: dict[str, CaseDoc] = {}
    for doc in docs:
        owner[doc.slug] = doc
    for doc in docs:
        for index, alias in enumerate(doc.meta.get("aliases") or []):
            if alias in owner and owner[alias] is not doc:
                errors.append(
                    ContentError(
                        doc.path,
                        doc.line_of(("aliases", index)),
                        f"alias '{alias}' is already the slug or alias of {owner[alias].path}",
                    )
                )
            owner.setdefault(alias, doc)
        for index, related in enumerate(doc.meta.get("related") or []):
            if related == doc.slug:
                errors.append(ContentError(doc.path, doc.line_of(("related", index)), "a case cannot be related to itself"))
            elif related not in file_slugs:
                errors.append(ContentError(doc.path, doc.line_of(("related", index)), f"related case '{related}' does not exist"))
    return errors
