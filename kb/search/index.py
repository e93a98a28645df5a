"""Build the Whoosh index from validated cases, and search it.

Only `load_content` writes: it builds a fresh index in a new directory and then repoints the
`current` symlink with an atomic rename, so readers never see a half-built index. Web processes
only open what `current` points at.
"""
from __future__ import annotations

import functools
import html
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.urls import reverse
from whoosh import index as whoosh_index
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from kb.content.schema import example_text
from kb.search.analysis import log_analyzer, query_terms

if TYPE_CHECKING:
    from kb.content.cases import CaseDoc
    from kb.content.harmless import HarmlessDoc

logger = logging.getLogger(__name__)

FIELD_BOOSTS = {"title": 4.0, "signatures": 3.0, "symptoms": 2.5, "summary": 2.0, "tags": 1.5, "body": 1.0}
_TAG_RE = re.compile(r"<[^>]+>")


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
        "body": html.unescape(_TAG_RE.sub(" ", doc.body.html)),
        "tags": ",".join(f"{v}" for values in meta["tags"].values() for v in values),
    }


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
        writer.add_document(**case_search_fields(doc), sections=[s.id for s in doc.body.sections],
                            url=reverse("kb:case_detail", args=[doc.slug]))
    for entry in harmless:
        writer.add_document(**harmless_search_fields(entry), sections=[],
                            url=f"{reverse('kb:harmless_list')}#{entry.slug}")
    writer.commit()


@dataclass(frozen=True)
class SearchHit:
    slug: str
    title: str
    summary: str
    score: float
    url: str = ""


@functools.lru_cache(maxsize=4)
def _open(path: str):
    """One open index per built directory: a rebuild gets a new directory name, hence a fresh open."""
    return whoosh_index.open_dir(path)


def search_cache_clear() -> None:
    _search_built.cache_clear()


class IndexMissing(RuntimeError):
    """The index has not been built yet, or cannot be read (run `python manage.py load_content`)."""


def search(text: str, *, index_dir: Path, limit: int = 10) -> list[SearchHit]:
    """Rank cases for free text. The query is built from analysed terms, never parsed, so
    quotes, colons, brackets and AND/OR/NOT in a pasted log are plain words."""
    terms = query_terms(text)
    if not terms:
        return []
    current = index_dir / "current"
    if not current.exists():
        raise IndexMissing(f"no search index at {current}")
    try:
        return list(_search_built(str(current.resolve()), tuple(terms), limit))
    except Exception as err:  # a corrupt or half-deleted index: say so and let the caller go on without search
        logger.error("search index at %s cannot be read: %s", current, err)
        raise IndexMissing(f"the search index at {current} cannot be read: {err}") from None


@functools.lru_cache(maxsize=512)
def _search_built(build_dir: str, terms: tuple[str, ...], limit: int) -> tuple[SearchHit, ...]:
    """Results for one built index: a rebuild has a new directory, so cached answers never go stale.
    Wiki links repeat the same queries; each costs Whoosh a few milliseconds only once per worker."""
    query = Or([Term(field, term, boost=boost) for term in terms for field, boost in FIELD_BOOSTS.items()])
    with _open(build_dir).searcher(weighting=BM25F()) as searcher:
        return tuple(SearchHit(slug=r["slug"], title=r["title"], summary=r["summary"], score=round(r.score, 3),
                               url=r.get("url") or f"/kb/{r['slug']}/")
                     for r in searcher.search(query, limit=limit))
