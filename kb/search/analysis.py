"""Tokenising for logs and prose alike.

Log identifiers must survive whole (`ALLGATHER_BASE`, `NCCL_SOCKET_IFNAME`, `ProcessGroupNCCL.cpp`)
so an exact identifier ranks first, and their parts must be searchable too (`allgather`, `ifname`).
"""

import functools
import re
from typing import Iterator

from whoosh.analysis import Filter, LowercaseFilter, RegexTokenizer, StopFilter, Token

# A run of word characters, optionally joined by '.', '-' or '/' inside the identifier.
TOKEN_PATTERN = r"[A-Za-z0-9_]+(?:[.\-/][A-Za-z0-9_]+)*"
_PART_SPLIT = re.compile(r"[._\-/]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


class IdentifierPartsFilter(Filter):
    """Emit each token, then its parts (split on _ . - / and camelCase) at the same position."""

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        for token in tokens:
            text = token.text
            yield token
            parts = [p for p in _PART_SPLIT.split(text) if p]
            if len(parts) == 1:
                camel = _CAMEL.findall(text)
                parts = camel if len(camel) > 1 else []
            else:
                expanded: list[str] = []
                for part in parts:
                    camel = _CAMEL.findall(part)
                    expanded += [part] + (camel if len(camel) > 1 else [])
                parts = expanded
            original = token.text
            for part in parts:
                if part != original and len(part) > 1:
                    token.text = part
                    yield token
            token.text = original


STOP_WORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "not no but if then so than into out up".split()
)


def log_analyzer():
    """Tokenizer + parts + lowercase + stop words. Used at index time and to build queries."""
    return (
        RegexTokenizer(TOKEN_PATTERN) | IdentifierPartsFilter() | LowercaseFilter() | StopFilter(stoplist=STOP_WORDS, minsize=2)
    )


def query_terms(text: str, limit: int = 64) -> list[str]:
    """Distinct analysed terms of `text`, in first-seen order: the only thing a query is built from."""
    terms: list[str] = []
    seen: set[str] = set()
    for token in log_analyzer()(text):
        if token.text not in seen and not token.text.isdigit():
            seen.add(token.text)
            terms.append(token.text)
            if len(terms) >= limit:
                break
    return terms


def query_words(text: str, limit: int = 32) -> list[tuple[str, tuple[str, ...], str]]:
    """The words a person typed (stop words and numbers left out): each lowercased, with its searchable parts
    and as typed: `NCCL_SOCKET_IFNAME` → ("nccl_socket_ifname", ("nccl", "socket", "ifname"), "NCCL_SOCKET_IFNAME")."""
    words: list[tuple[str, tuple[str, ...], str]] = []
    seen: set[str] = set()
    for match in re.finditer(TOKEN_PATTERN, text):
        whole = match.group().lower()
        terms = query_terms(whole, limit=16)
        if not terms or whole in seen or whole in STOP_WORDS or whole.isdigit():
            continue
        seen.add(whole)
        words.append((whole, tuple(t for t in terms if t != whole), match.group()))
        if len(words) >= limit:
            break
    return words


def term_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, term) of every token of `text` that is, or has a part that is, one of `terms`. A part
    marks that part of its token: a search for `ifname` marks `IFNAME` in `NCCL_SOCKET_IFNAME`."""
    lowered = text.lower()
    if not any(term in lowered for term in terms):
        return []
    spans: list[tuple[int, int, str]] = []
    for span in _token_spans(text):
        if span[2] in terms and (not spans or spans[-1][:2] != span[:2]):
            spans.append(span)
    return spans


@functools.lru_cache(maxsize=2048)
def _token_spans(text: str) -> tuple[tuple[int, int, str], ...]:
    """Every token of `text` with where it sits (a part: the part itself, not its whole identifier).
    Section texts are the same for every query until content is reloaded, so a worker analyses each once."""
    lowered = text.lower()
    out: list[tuple[int, int, str]] = []
    for token in log_analyzer()(text, chars=True):
        start, end = token.startchar, token.endchar
        inside = lowered.find(token.text, start, end)
        if inside >= 0:
            start, end = inside, inside + len(token.text)
        out.append((start, end, token.text))
    return tuple(out)
