"""Build the Whoosh index from validated cases, and search it.

Only `load_content` writes: it builds a fresh index in a new directory and then repoints the
`current` symlink with an atomic rename, so readers never see a half-built index. Web processes
open the build of the revision the database holds (kb.content.publish.served_build).
"""

from __future__ import annotations

import functools
import html
import logging
from dataclasses import dataclass
from urllib.parse import urlencode
from pathlib import Path
from typing import TYPE_CHECKING

from django.urls import reverse
from whoosh import index as whoosh_index
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from kb.content.publish import build_problem_log, served_build
from kb.content.schema import example_text
from kb.models import ContentState
from kb.search.analysis import log_analyzer, query_terms, query_words, term_spans

if TYPE_CHECKING:
    from kb.content.cases import CaseDoc
    from kb.content.harmless import HarmlessDoc
    from kb.content.rendering import RenderedBody

logger = logging.getLogger(__name__)

FIELD_BOOSTS = {"title": 4.0, "signatures": 3.0, "symptoms": 2.5, "summary": 2.0, "tags": 1.5, "body": 1.0}
TEXT_FIELDS = ("title", "summary", "symptoms", "signatures", "body")
PASSAGE_CHARS = 240


def _schema() -> Schema:
    analyzer = log_analyzer()
    return Schema(
        slug=ID(stored=True, unique=True),
        title=TEXT(analyzer=analyzer, stored=True),
        summary=TEXT(analyzer=analyzer, stored=True),
        symptoms=TEXT(analyzer=analyzer),
        signatures=TEXT(analyzer=analyzer),
        body=TEXT(analyzer=analyzer),
        tags=KEYWORD(lowercase=True, commas=True, scorable=True),
        sections=STORED(),
        passages=STORED(),  # [{"id", "title", "level", "text"}]: each section's plain text, for "where"
        url=STORED(),
    )


def case_search_fields(doc: "CaseDoc") -> dict[str, str]:
    """The text of one case as the index sees it."""
    meta = doc.meta
    signature_text = "\n".join(
        f"{s['description']}\n" + "\n".join(example_text(e) for e in s.get("examples") or []) for s in meta["signatures"]
    )
    return {
        "slug": doc.slug,
        "title": meta["title"],
        "summary": meta["summary"],
        "symptoms": "\n".join(meta["symptoms"]),
        "signatures": signature_text,
        "body": doc.body.index_text,
        "tags": ",".join(f"{v}" for values in meta["tags"].values() for v in values),
    }


def section_passages(body: "RenderedBody") -> list[dict]:
    """Each section of a case body (every heading with an id, h2 to h6) with its own plain text, up to the next
    heading, as kb.content.rendering read them from the Markdown tree."""
    return [{"id": s.id, "level": s.level, "title": s.title, "text": s.text} for s in body.sections]


def harmless_search_fields(doc: "HarmlessDoc") -> dict[str, str]:
    """A known-harmless message as the index sees it: found by its own words, shown as 'not the problem'."""
    meta = doc.meta
    return {
        "slug": f"harmless-{doc.slug}",
        "title": f"Not the problem: {meta['title']}",
        "summary": meta["why"],
        "symptoms": meta["printed_by"],
        "signatures": "\n".join(example_text(e) for e in meta["examples"]),
        "body": f"{meta['why']}\n{meta['instead']}",
        "tags": "harmless",
    }


def index_write(build: Path, docs: list["CaseDoc"], harmless: list["HarmlessDoc"] = ()) -> None:
    """Write a complete index into a new build directory (kb.content.publish swaps it in)."""
    ix = whoosh_index.create_in(build, _schema())
    writer = ix.writer()
    for doc in docs:
        writer.add_document(
            **case_search_fields(doc),
            sections=[s.id for s in doc.body.sections],
            passages=section_passages(doc.body),
            url=reverse("kb:case_detail", args=[doc.slug]),
        )
    for entry in harmless:
        fields = harmless_search_fields(entry)
        writer.add_document(
            **fields,
            sections=[],
            passages=[{"id": "", "level": 2, "title": "", "text": fields["body"]}],
            url=f"{reverse('kb:harmless_list')}#{entry.slug}",
        )
    writer.commit()


@dataclass(frozen=True)
class SearchHit:
    slug: str
    title: str
    summary: str
    score: float
    url: str = ""
    # Where: the section that mentions the words best, and a passage of it (escaped, then <mark>ed).
    section_id: str = ""
    section_title: str = ""
    passage_html: str = ""
    marks: tuple[str, ...] = ()  # the terms to highlight on the target page
    words_matched: int = 0  # query words found whole
    words_in_part: int = 0  # query words found only through a part (`ifname` of an unknown `foo_ifname`)
    words_total: int = 0

    @property
    def target_url(self) -> str:
        """The page, scrolled to the section, with the terms to highlight there (`?hl=`)."""
        if "#" in self.url:  # a harmless entry: its anchor is its section
            return self.url
        query = f"?{urlencode({'hl': ' '.join(self.marks)})}" if self.marks else ""
        return f"{self.url}{query}{'#' + self.section_id if self.section_id else ''}"

    @property
    def relevance(self) -> str:
        """strong (every word), partial (some), weak (only parts of words)."""
        if self.words_total and self.words_matched == self.words_total:
            return "strong"
        return "partial" if self.words_matched else "weak"


@dataclass(frozen=True)
class SearchResults:
    hits: tuple[SearchHit, ...]
    total: int  # how many pages mention at least one of the words whole
    words: tuple[str, ...]  # the words searched for, as typed
    suggestion: str = ""  # "did you mean": the query with unknown words replaced by the index's own terms
    loose: int = 0  # pages that match only parts of words (`socket` of NCCL_SOCKET_IFNAME)

    @property
    def weak(self) -> bool:
        """Nothing matched a whole word: the hits are loose matches at best."""
        return not any(hit.words_matched for hit in self.hits)


@functools.lru_cache(maxsize=4)
def _open(path: str):
    """One open index per built directory: a rebuild gets a new directory name, hence a fresh open."""
    return whoosh_index.open_dir(path)


def search_cache_clear() -> None:
    _search_built.cache_clear()


class IndexMissing(RuntimeError):
    """The index has not been built yet, or cannot be read (run `python manage.py load_content`)."""


def search(text: str, *, index_dir: Path, limit: int = 10, revision: str | None = None) -> list[SearchHit]:
    """Rank cases for free text. The query is built from analysed terms, never parsed, so
    quotes, colons, brackets and AND/OR/NOT in a pasted log are plain words."""
    return list(search_results(text, index_dir=index_dir, limit=limit, revision=revision).hits)


def search_results(text: str, *, index_dir: Path, limit: int = 10, revision: str | None = None) -> SearchResults:
    """Like `search`, with the total, the words searched for and a "did you mean" when nothing matched. Searches the
    build of `revision`, the served revision as the request read it already; None reads it."""
    terms = query_terms(text)
    if not terms:
        return SearchResults(hits=(), total=0, words=())
    build = served_build(index_dir, ContentState.loaded_revision() if revision is None else revision)
    if build is None:
        problem = f"no search index is published in {index_dir}: run python manage.py load_content"
        build_problem_log(logger, problem)
        raise IndexMissing(problem)
    words = tuple(query_words(text))
    try:
        return _search_built(str(build), tuple(terms), words, limit)
    except Exception as err:  # a corrupt or half-deleted index: say so and let the caller go on without search
        problem = (
            f"the search index in {build} cannot be read ({type(err).__name__}: {err}): run python manage.py load_content --force"
        )
        build_problem_log(logger, problem)
        raise IndexMissing(problem) from None


Words = tuple[tuple[str, tuple[str, ...], str], ...]


@functools.lru_cache(maxsize=512)
def _search_built(build_dir: str, terms: tuple[str, ...], words: Words, limit: int) -> SearchResults:
    """Results for one built index: a rebuild has a new directory, so cached answers never go stale.
    Wiki links repeat the same queries; each costs Whoosh a few milliseconds only once per worker.
    Pages that hold every word come first, then those with some, then matches on parts of words only;
    BM25F orders each group."""
    query = Or([Term(field, term, boost=boost) for term in terms for field, boost in FIELD_BOOSTS.items()])
    hits: list[SearchHit] = []
    with _open(build_dir).searcher(weighting=BM25F()) as searcher:
        results = searcher.search(query, limit=max(limit, 30), terms=True)
        everything = len(results)
        found = []
        for r in results:
            matched = {t.decode("utf-8", "replace") if isinstance(t, bytes) else t for _, t in r.matched_terms()}
            whole = sum(1 for word, parts, _ in words if _word_found(word, parts, matched))
            tier = 2 if words and whole == len(words) else 1 if whole else 0
            found.append((-tier, -r.score, r.rank, r, matched))
        found.sort(key=lambda item: item[:3])
        hits = [_hit(r, matched, words) for *_, r, matched in found[:limit]]  # passages only for those shown
        whole_words = [w for w, _, _ in words]
        total = (
            len(searcher.search(Or([Term(field, w) for w in whole_words for field in FIELD_BOOSTS]), limit=1))
            if whole_words
            else 0
        )
        suggestion = "" if any(h.words_matched for h in hits) else _suggestion(searcher, words)
    return SearchResults(
        hits=tuple(hits),
        total=total,
        words=tuple(typed for _, _, typed in words),
        suggestion=suggestion,
        loose=max(0, everything - total),
    )


def _word_found(word: str, parts: tuple[str, ...], matched: set[str]) -> bool:
    """The word itself matched, or every one of its parts did (`ALLGATHER_BASE` in a page that writes
    `_ALLGATHER_BASE`)."""
    return word in matched or (len(parts) >= 2 and all(p in matched for p in parts))


def _hit(r, matched: set[str], words: Words) -> SearchHit:
    found = [_word_found(word, parts, matched) for word, parts, _ in words]
    whole = sum(found)
    in_part = sum(1 for (word, parts, _), ok in zip(words, found) if not ok and any(p in matched for p in parts))
    # Shown and marked: the words found whole, and the parts only of the words not found whole (`py` of
    # `py-spy` must not mark `train.py`).
    shown = {word for word, _, _ in words if word in matched}
    shown |= {p for word, parts, _ in words if word not in matched for p in parts if p in matched and len(p) >= 3}
    shown = shown or {t for t in matched if len(t) >= 3}
    section, passage, marks = _where(r.get("passages") or [], frozenset(shown), r["summary"])
    return SearchHit(
        slug=r["slug"],
        title=r["title"],
        summary=r["summary"],
        score=round(r.score, 3),
        url=r.get("url") or reverse("kb:case_detail", args=[r["slug"]]),
        section_id=section.get("id", ""),
        section_title=section.get("title", ""),
        passage_html=passage,
        marks=marks,
        words_matched=whole,
        words_in_part=in_part,
        words_total=len(words),
    )


def _where(passages: list[dict], matched: frozenset[str], summary: str) -> tuple[dict, str, tuple[str, ...]]:
    """The section that holds most of the matched terms (the most specific one on a tie), a passage of it
    with the terms marked, and the terms to mark on the page. Without a mention in the body, the summary."""

    # Cheap first pass on substrings; only the likeliest few sections are tokenised.
    def rough(item: tuple[int, dict]) -> tuple:
        lowered = (item[1]["title"] + "\n" + item[1]["text"]).lower()
        present = [t for t in matched if t in lowered]
        return (len(present), item[1]["level"], sum(lowered.count(t) for t in present), -item[0])

    candidates = [c for c in sorted(enumerate(passages), key=rough, reverse=True)[:4] if rough(c)[0]]
    best: tuple | None = None
    for order, section in candidates:
        spans = term_spans(section["title"] + "\n" + section["text"], matched)
        if not spans:
            continue
        rank = (len({t for _, _, t in spans}), section["level"], len(spans), -order)
        if best is None or rank > best[0]:
            best = (rank, section)
    if best is None:
        spans = term_spans(summary, matched)
        return {}, _passage(summary, spans), _marks(summary, spans)
    section = best[1]
    spans = term_spans(section["text"], matched)
    marks = _marks(section["text"], spans) if spans else _marks(section["title"], term_spans(section["title"], matched))
    return section, _passage(section["text"], spans), marks


def _marks(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, ...]:
    """The matched terms, longest first (then alphabetical, so that every process shows the same six), without terms
    that a longer one already contains."""
    out: list[str] = []
    for term in sorted({t for _, _, t in spans}, key=lambda t: (-len(t), t)):
        if len(term) >= 2 and not any(term in longer for longer in out):
            out.append(term)
    return tuple(out[:6])


def _passage(text: str, spans: list[tuple[int, int, str]]) -> str:
    """About PASSAGE_CHARS characters of `text` around the densest group of matches, cut at word boundaries,
    escaped first and only then given <mark> around each match."""
    if not text:
        return ""
    if not spans:
        cut = text[:PASSAGE_CHARS]
        return (html.escape(cut) + ("…" if len(text) > PASSAGE_CHARS else "")).replace("\n", " ")
    best_start, best_count = spans[0][0], 0
    for start, _, _ in spans:
        count = len({t for s, e, t in spans if start <= s and e <= start + PASSAGE_CHARS})
        if count > best_count:
            best_start, best_count = start, count
    begin = max(0, best_start - PASSAGE_CHARS // 4)
    if begin:
        space = text.rfind(" ", 0, begin)
        begin = space + 1 if space >= 0 and begin - space < 30 else begin
    end = min(len(text), begin + PASSAGE_CHARS)
    if end < len(text):
        space = text.find(" ", end)
        end = space if 0 <= space < end + 30 else end
    out: list[str] = ["…" if begin else ""]
    position = begin
    for start, stop, _ in spans:
        if start < position or stop > end:
            continue
        out.append(html.escape(text[position:start]))
        out.append(f"<mark>{html.escape(text[start:stop])}</mark>")
        position = stop
    out.append(html.escape(text[position:end]))
    out.append("…" if end < len(text) else "")
    return "".join(out).replace("\n", " ")


def _suggestion(searcher, words: Words) -> str:
    """The query with each word the index does not hold replaced by its nearest indexed term, if any."""
    reader = searcher.reader()
    out: list[str] = []
    changed = False
    for word, parts, _ in words:
        if any((field, word) in reader for field in TEXT_FIELDS):
            out.append(word)
            continue
        replacement = _nearest(searcher, word)
        if not replacement and len(parts) >= 2:  # `infinband_hca`: mend the parts one by one
            mended = [
                part if any((field, part) in reader for field in TEXT_FIELDS) else _nearest(searcher, part) for part in parts
            ]
            replacement = " ".join(m for m in mended if m) if any(m != p for m, p in zip(mended, parts)) else ""
        if replacement:
            changed = True
            out.append(replacement)
    return " ".join(out) if changed else ""


def _nearest(searcher, word: str) -> str:
    """The index's own term closest to `word` (at most two edits, same first letter), or ""."""
    for field in ("title", "body", "signatures", "symptoms"):
        found = searcher.suggest(field, word, limit=1, maxdist=2, prefix=1)
        if found:
            return found[0]
    return ""
