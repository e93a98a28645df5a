"""A shared report's stored log as numbered lines a link can point at (`#L123`), as GitHub's log view does, and the
lines that contain a search. Pure functions: the view pages and renders them.

The stored log is the paste, then each uploaded file after a `==> name <==` line (kb/report_views.py,
report_create). The diagnosis numbered each file's lines from 1, so a file's lines restart at 1 too, under an
anchor prefix of their own (`F2-L40`); a paste's are plain `L123`. Only a header naming a file the diagnosis read
starts a file: a paste may hold `tail`'s own `==> x <==` lines, and its numbering must not restart there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

PAGE_LINES = 5000  # lines one page of the log view shows (an 8 MB log is about 100,000)
FOUND_LIMIT = 1000  # matching lines one search shows
_HEADER_RE = re.compile(r"==> (.+) <==")


@dataclass(frozen=True)
class LogLine:
    row: int  # 0-based, across the whole stored log
    number: int  # as the diagnosis numbered it, within its file
    anchor: str  # the id a link points at: L123, or F2-L40 in the second file
    source: str  # the file's name; "" for the paste
    text: str


def log_lines(log: str, sources: Iterable[str]) -> list[LogLine]:
    """Every line of a stored log, numbered per file. A file's header line is a row of its own with number 0."""
    files = {name for name in sources if name}
    lines: list[LogLine] = []
    source, prefix, number, file_index = "", "", 0, 0
    for row, text in enumerate(log.split("\n")):
        header = _HEADER_RE.fullmatch(text)
        if header and header.group(1) in files:
            file_index += 1
            source, prefix, number = header.group(1), f"F{file_index}-", 0
            lines.append(LogLine(row=row, number=0, anchor=f"F{file_index}", source=source, text=text))
            continue
        number += 1
        lines.append(LogLine(row=row, number=number, anchor=f"{prefix}L{number}", source=source, text=text))
    if lines and lines[-1].text == "" and lines[-1].number:  # the newline that ends the last line starts none
        lines.pop()
    return lines


def log_anchors(lines: list[LogLine]) -> dict[tuple[str, int], LogLine]:
    """(file, line number) -> its line: how an evidence row finds its place in the log view."""
    return {(line.source, line.number): line for line in lines if line.number}


def log_page_of(line: LogLine) -> int:
    """The page of the log view that shows `line` (1-based)."""
    return line.row // PAGE_LINES + 1


def log_page(lines: list[LogLine], page: int) -> list[LogLine]:
    start = (max(1, page) - 1) * PAGE_LINES
    return lines[start : start + PAGE_LINES]


def log_found(lines: list[LogLine], query: str) -> tuple[list[LogLine], int]:
    """The lines that contain `query` (case-insensitive), at most FOUND_LIMIT of them, and how many there are."""
    needle = query.casefold()
    found = [line for line in lines if line.number and needle in line.text.casefold()]
    return found[:FOUND_LIMIT], len(found)


def log_marked(text: str, query: str) -> list[tuple[str, bool]]:
    """`text` cut into (piece, is a match) for the template to escape and wrap in <mark>: never HTML built here."""
    if not query:
        return [(text, False)]
    pieces: list[tuple[str, bool]] = []
    folded, needle, at = text.casefold(), query.casefold(), 0
    while True:
        found = folded.find(needle, at)
        # casefold can change a string's length (ß -> ss): then mark nothing rather than the wrong characters
        if found < 0 or len(folded) != len(text):
            break
        pieces += [(text[at:found], False), (text[found : found + len(needle)], True)]
        at = found + len(needle)
    pieces.append((text[at:], False))
    return [piece for piece in pieces if piece[0]]
