"""Render a case body from Markdown to clean HTML and read its section structure.

Headings keep the explicit ids authors give them ({#fix-1}), so anchors stay stable when the
wording of a heading changes. The HTML is cleaned with nh3 even though content is trusted:
a mistake in a content file must not become script on the page.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import markdown
import nh3

_ALLOWED_TAGS = {
    "a",
    "abbr",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
_ALLOWED_ATTRIBUTES = {
    "*": {"class", "id"},
    "a": {"href", "title"},
    "td": {"align"},
    "th": {"align"},
}
_HEADING_RE = re.compile(r'<h([2-6]) id="([^"]+)">(.*?)</h\1>', re.S)
_TAG_RE = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    level: int


@dataclass(frozen=True)
class RenderedBody:
    html: str
    sections: list[Section]
    duplicate_ids: list[str]

    @property
    def ids(self) -> list[str]:
        return [section.id for section in self.sections]

    def fix_steps(self) -> list[Section]:
        return [s for s in self.sections if re.fullmatch(r"fix-\d+", s.id)]


def code_blocks_focusable(html_text: str) -> str:
    """Wide code blocks scroll sideways; keyboard users can only scroll what can take focus."""
    return html_text.replace("<pre>", '<pre tabindex="0">')


def body_render(text: str) -> RenderedBody:
    """Markdown to cleaned HTML, plus the list of headings that carry ids."""
    md = markdown.Markdown(
        extensions=["toc", "attr_list", "fenced_code", "codehilite", "admonition", "tables"],
        extension_configs={
            "toc": {"permalink": "#", "permalink_title": "Link to this section", "toc_depth": "2-3"},
            "codehilite": {"guess_lang": False, "css_class": "highlight"},
        },
        output_format="html",
    )
    raw = md.convert(text)
    clean = nh3.clean(raw, tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES, link_rel="noopener noreferrer")
    clean = code_blocks_focusable(clean)
    sections: list[Section] = []
    seen: set[str] = set()
    duplicates: list[str] = []
    for level, anchor, inner in _HEADING_RE.findall(clean):
        title = html.unescape(_TAG_RE.sub("", inner)).rstrip("#").strip()
        if anchor in seen:
            duplicates.append(anchor)
        seen.add(anchor)
        sections.append(Section(id=anchor, title=title, level=int(level)))
    return RenderedBody(html=clean, sections=sections, duplicate_ids=duplicates)
