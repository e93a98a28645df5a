"""Tokenising for logs and prose alike.

Log identifiers must survive whole (`ALLGATHER_BASE`, `NCCL_SOCKET_IFNAME`, `ProcessGroupNCCL.cpp`)
so an exact identifier ranks first, and their parts must be searchable too (`allgather`, `ifname`).
"""
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
    return (RegexTokenizer(TOKEN_PATTERN) | IdentifierPartsFilter() | LowercaseFilter()
            | StopFilter(stoplist=STOP_WORDS, minsize=2))


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
