"""Render a case body from Markdown to the HTML a case page shows, and read its section structure from the same tree.

Headings keep the explicit ids authors give them ({#fix-1}), so anchors stay stable when the
wording of a heading changes. Everything the page shows in the body is built here, once per load: each heading's
permalink with a name a screen reader can say, and each fix step's release range from the front matter; the
case page then prints the stored HTML as it is. The sections (level, anchor, title, plain text) are read from the
Markdown tree, so neither the search index nor a view parses the HTML again. The HTML is cleaned with nh3 even
though content is trusted: a mistake in a content file must not become script on the page.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as etree
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, NamedTuple

import markdown
import nh3
from markdown.extensions import Extension
from markdown.extensions.toc import escape_cdata
from markdown.treeprocessors import Treeprocessor
from markdown.util import AMP_SUBSTITUTE, HTML_PLACEHOLDER_RE

from diagnosis.versions import versions_text

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
    "a": {"href", "title", "data-section"},  # data-section: the permalink's section, which site.js names when it copies
    "span": {"aria-hidden"},  # the permalink's "#", which a screen reader skips for the section's name
    "td": {"align"},
    "th": {"align"},
}
SECTION_HEADINGS = ("h2", "h3", "h4", "h5", "h6")
PERMALINK_CLASS = "headerlink"
# Inline tags join their text to the words around them (`NCCL_<span>X</span>`); any other tag separates words.
INLINE_TAGS = frozenset({"span", "code", "em", "strong", "a", "kbd", "abbr", "sub", "sup", "del"})
_SPACES_RE = re.compile(r"[ \t\r\f\v]*\n[\s]*|[ \t\r\f\v]{2,}")


@dataclass(frozen=True)
class Section:
    """A heading with its id (h2 to h6), and the plain text that follows it up to the next heading: the h2 `#fix`
    holds only its introduction, `#fix-2` its step."""

    id: str
    title: str
    level: int
    text: str


@dataclass(frozen=True)
class RenderedBody:
    html: str
    sections: list[Section]
    duplicate_ids: list[str]
    # The whole body as plain text with every tag a space, as the search index's body field reads it.
    index_text: str
    links: list[str]  # the target of every link in the body, in page order
    # Level-1 headings (their ids): a case body starts at level 2, so one is a slip, often a wrapped line that begins
    # with an issue number ("#76101)"), which Markdown reads as a heading.
    level1_ids: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [section.id for section in self.sections]

    def fix_steps(self) -> list[Section]:
        return [s for s in self.sections if re.fullmatch(r"fix-\d+", s.id)]


def code_blocks_focusable(html_text: str) -> str:
    """Wide code blocks scroll sideways; keyboard users can only scroll what can take focus."""
    return html_text.replace("<pre>", '<pre tabindex="0">')


def body_render(text: str, steps: list[dict[str, Any]] | None = None) -> RenderedBody:
    """Markdown to the cleaned HTML a case page prints, plus its sections. `steps`: the front matter's, whose
    version ranges are shown in their headings ("PyTorch < 2.14 only")."""
    structure = _BodyStructure(steps or [])
    md = markdown.Markdown(
        extensions=["toc", "attr_list", "fenced_code", "codehilite", "admonition", "tables", structure],
        extension_configs={
            "toc": {"permalink": "#", "permalink_title": "", "toc_depth": "2-3"},  # named in _BodyStructure
            "codehilite": {"guess_lang": False, "css_class": "highlight"},
        },
        output_format="html",
    )
    raw = md.convert(text)
    clean = nh3.clean(raw, tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES, link_rel="noopener noreferrer")
    seen: set[str] = set()
    duplicates: list[str] = []
    for section in structure.sections:
        if section.id in seen:
            duplicates.append(section.id)
        seen.add(section.id)
    return RenderedBody(
        html=code_blocks_focusable(clean),
        sections=structure.sections,
        duplicate_ids=duplicates,
        index_text=structure.index_text,
        links=structure.links,
        level1_ids=structure.level1_ids,
    )


class Event(NamedTuple):
    """A tag opening or closing, or a run of text, in page order."""

    kind: str  # "open", "close" or "text"
    value: str  # the tag, or the text
    element: etree.Element | None = None  # the tree's element; None for text and for HTML kept out of the tree
    href: str | None = None  # an <a>'s link target


class _PlainText:
    """Two plain-text readings of a run of the body: `joined`, where inline tags join their text to the words around
    them (a search passage), and `spaced`, where every tag is a space (the index's body field)."""

    def __init__(self) -> None:
        self.joined: list[str] = []
        self.spaced: list[str] = []

    def add(self, event: Event) -> None:
        kind, value, *_ = event
        if kind == "text":
            self.joined.append(value)
            self.spaced.append(value)
            return
        self.spaced.append(" ")
        if value not in INLINE_TAGS:
            self.joined.append(" ")

    def joined_text(self) -> str:
        return _SPACES_RE.sub(lambda m: "\n" if "\n" in m.group() else " ", "".join(self.joined)).strip()


class _StashedHtml(HTMLParser):
    """The events of HTML that Python-Markdown keeps out of its tree (highlighted code blocks, raw HTML, entities)."""

    def __init__(self, structure: _BodyStructure, out: list[Event]) -> None:
        super().__init__(convert_charrefs=True)
        self.structure = structure
        self.events = out

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.events.append(Event("open", tag, href=dict(attrs).get("href") if tag == "a" else None))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(Event("close", tag))

    def handle_data(self, data: str) -> None:
        self.structure.text_events(data, self.events, decoded=True)


class _BodyStructure(Extension, Treeprocessor):
    """The last step on the Markdown tree, after toc has given every heading its id and "#" permalink and the
    backslash escapes are undone: reads the sections and the index's text, then names each permalink and puts each
    step's version range in its heading."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        Extension.__init__(self)
        self.steps = steps
        self.sections: list[Section] = []
        self.index_text = ""
        self.links: list[str] = []
        self.level1_ids: list[str] = []

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        Treeprocessor.__init__(self, md)
        md.treeprocessors.register(self, "body_structure", -10)

    def run(self, root: etree.Element) -> None:
        whole = _PlainText()
        links: list[str] = []
        found: list[tuple[etree.Element, _PlainText]] = []
        held = None  # a section heading or a permalink: text that belongs to no section's text
        for event in self.events(root)[1:-1]:  # the root is Python-Markdown's wrapper, not part of the body
            kind, tag, element, href = event
            if kind == "open" and href is not None:
                links.append(href)
            if kind == "open" and held is None and element is not None and (tag in SECTION_HEADINGS or _is_permalink(element)):
                held = element
                if tag in SECTION_HEADINGS:
                    found.append((element, _PlainText()))
            whole.add(event)
            if held is None and found:
                found[-1][1].add(event)
            if kind == "close" and element is not None and element is held:
                held = None
        self.index_text = "".join(whole.spaced)
        self.links = links
        self.sections = [
            Section(id=h.get("id", ""), title=self.title(h), level=int(h.tag[1]), text=text.joined_text()) for h, text in found
        ]
        self.level1_ids = [element.get("id", "") for element in root.iter("h1")]
        titles = {section.id: section.title for section in self.sections}
        badges = {step["anchor"]: versions_text(step["versions"]) for step in self.steps if step.get("versions")}
        for element in list(root.iter()):
            anchor = element.get("id", "")
            if element.tag in ("h1", *SECTION_HEADINGS):  # an h1 is no section: its permalink is named by its id
                self.decorate(element, titles.get(anchor, anchor), badges.get(anchor))

    def events(self, element: etree.Element, out: list[Event] | None = None) -> list[Event]:
        """The element as HTML would read it: its tags, and its text with the stashed parts put back (added to `out`)."""
        out = [] if out is None else out
        out.append(Event("open", element.tag, element, element.get("href") if element.tag == "a" else None))
        self.text_events(element.text, out)
        for child in element:
            self.events(child, out)
            self.text_events(child.tail, out)
        out.append(Event("close", element.tag, element))
        return out

    def text_events(self, text: str | None, out: list[Event] | None = None, *, decoded: bool = False) -> list[Event]:
        """Text as the page shows it: escaped as the serializer will escape it, then decoded, so entities read as the
        characters they stand for; the placeholders of stashed HTML replaced by that HTML's own events."""
        out = [] if out is None else out
        if not text:
            return out
        position = 0
        for placeholder in HTML_PLACEHOLDER_RE.finditer(text):
            self._plain(text[position : placeholder.start()], decoded, out)
            stashed = self.md.htmlStash.rawHtmlBlocks[int(placeholder.group(1))]
            if isinstance(stashed, etree.Element):
                self.events(stashed, out)
            else:
                parser = _StashedHtml(self, out)
                parser.feed(stashed)
                parser.close()
            position = placeholder.end()
        self._plain(text[position:], decoded, out)
        return out

    @staticmethod
    def _plain(text: str, decoded: bool, out: list[Event]) -> None:
        if text:
            out.append(Event("text", text if decoded else html.unescape(escape_cdata(text).replace(AMP_SUBSTITUTE, "&"))))

    def title(self, heading: etree.Element) -> str:
        """The heading's words, without its permalink's "#"."""
        events = self.text_events(heading.text)
        for child in heading:
            if not _is_permalink(child):
                self.events(child, events)
            self.text_events(child.tail, events)
        title = _PlainText()
        for event in events:
            title.add(event)
        return title.joined_text()

    def decorate(self, heading: etree.Element, title: str, versions: str | None) -> None:
        """The "#" gets a name a screen reader can say ("Link to this section: Fix"), and a fix step the releases it
        holds for ("PyTorch < 2.14 only")."""
        link = next((child for child in heading if _is_permalink(child)), None)
        if link is None:
            return
        if versions:
            index = list(heading).index(link)
            if index:
                heading[index - 1].tail = (heading[index - 1].tail or "") + " "
            else:
                heading.text = (heading.text or "") + " "
            badge = etree.Element("span", {"class": "step-versions"})
            badge.text = f"{versions} only"
            heading.insert(index, badge)
        link.set("data-section", title)
        link.text = None
        etree.SubElement(link, "span", {"aria-hidden": "true"}).text = "#"
        etree.SubElement(link, "span", {"class": "visually-hidden"}).text = f"Link to this section: {title}"


def _is_permalink(element: etree.Element) -> bool:
    return element.tag == "a" and element.get("class") == PERMALINK_CLASS
