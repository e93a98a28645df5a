"""TextScanner: the lines a pattern matches in one log text, found by its literals (literals.py) in the chunks the
one pass found them in (presence.py), with the regex run on those lines only."""

from __future__ import annotations

import re
from concurrent.futures import Future
from typing import Iterable, Iterator

from diagnosis.scan import presence as scan_presence  # CHUNK_BYTES read there at call time: the pass's chunks are ours
from diagnosis.scan.literals import Literal
from diagnosis.scan.presence import Presence, literals_present

MAX_BACKWARD_LINES = 200  # last_match gives up on a literal after this many non-matching candidate lines
# Regexes see at most this much of one line: the messages they look for are far shorter, and the cap keeps
# every pattern linear in the input whatever a hostile line holds (a 5 MB line costs one slice).
MAX_LINE_SCAN = 4096


class TextScanner:
    """One log text, with the lines of each literal cached so patterns sharing a literal share the work.

    Given the set of all literals any pattern will ask for, the scanner first learns in one pass which
    of them occur (Hyperscan, when installed), so absent literals cost nothing afterwards.
    """

    def __init__(
        self,
        text: str,
        literals: Iterable[Literal] = (),
        *,
        use_hyperscan: bool = True,
        encoded: bytes | None = None,
        presence: Future[Presence | None] | None = None,
    ) -> None:
        self.text = text
        self._lowered: str | None = None
        self._lines: dict[tuple[str, bool], list[tuple[int, int]]] = {}
        self._complete: set[tuple[str, bool]] = set()
        # `encoded`: the UTF-8 bytes of `text` when the caller already has them (saves re-encoding a big log);
        # `presence`: the pass over `literals`, already begun on the bytes `text` was decoded from
        if presence is not None:
            self._present = presence.result()
        else:
            self._present = literals_present(text, literals, use_hyperscan=use_hyperscan, encoded=encoded) if literals else None
        # Byte offsets equal character offsets only for ASCII text; then a search visits only the chunks
        # where its literal occurs.
        self._offsets_valid = self._present is not None and text.isascii()

    @property
    def presence(self) -> Presence | None:
        """What the one-pass check found, when it ran."""
        return self._present

    @property
    def chunk_newlines(self) -> list[int] | None:
        """Line breaks in each CHUNK_BYTES characters of the text, when the one-pass check counted them."""
        return self._present.newlines if self._offsets_valid else None

    def _haystack(self, ignorecase: bool) -> str:
        if not ignorecase:
            return self.text
        if self._lowered is None:
            self._lowered = self.text.lower()
        return self._lowered

    def lines_with(self, literal: str, ignorecase: bool = False) -> Iterator[tuple[int, int]]:
        """(start, end) of every line containing `literal`, in order, found lazily and cached as found."""
        key = (literal, ignorecase)
        if self._present is not None and key not in self._present:
            return
        spans = self._lines.setdefault(key, [])
        yield from list(spans)
        if key in self._complete:
            return
        haystack = self._haystack(ignorecase)
        text = self.text
        find, rfind = haystack.find, text.rfind
        resume = spans[-1][1] if spans else 0
        for low, high in self._regions(key, resume):
            pos = find(literal, max(low, resume), high)
            while pos != -1:
                start = rfind("\n", 0, pos) + 1
                end = text.find("\n", pos)
                if end == -1:
                    end = len(text)
                spans.append((start, end))
                yield start, end
                resume = end
                pos = find(literal, end, high)
        self._complete.add(key)

    def _regions(self, key: Literal, resume: int) -> Iterator[tuple[int, int]]:
        """The stretches of text where `key` can occur: the whole text, or (ASCII text with a presence map)
        each chunk holding it, widened by the literal's length so an occurrence across a boundary is seen."""
        if not self._offsets_valid:
            yield 0, len(self.text)
            return
        reach = len(key[0])
        for chunk in self._present.chunks[key]:
            high = min(len(self.text), (chunk + 1) * scan_presence.CHUNK_BYTES + reach)
            if high > resume:
                yield max(0, chunk * scan_presence.CHUNK_BYTES - reach), high

    def present_among(self, literals: Iterable[str]) -> set[str] | None:
        """Which of these (case-sensitive) literals occur, when the one-pass check ran; else None. A literal taken to
        be present in a run's later windows (Presence.assumed) is counted in: a caller either confirms in the text or,
        like the rank prefixes, joins the answer with the earlier windows', where it was found. One looked for by a
        prefix (Presence.prefixed) is looked for in the text."""
        if self._present is None:
            return None
        prefixed = self._present.prefixed
        return {
            lit
            for lit in literals
            if (lit, False) in self._present and ((lit, False) not in prefixed or next(self.lines_with(lit), None) is not None)
        }

    def can_match(self, groups: tuple[tuple[str, ...], ...], ignorecase: bool = False) -> bool:
        """False when some required literal group has no literal in the text (known only with Hyperscan)."""
        if self._present is None:
            return True
        return all(any((lit, ignorecase) in self._present for lit in group) for group in groups)

    def matches(self, regex: re.Pattern, literals: tuple[str, ...], ignorecase: bool = False) -> Iterator[re.Match]:
        """The first match of `regex` on each line that can match, in text order (lazily)."""
        if not literals:
            yield from regex.finditer(self.text)
            return
        if len(literals) == 1:
            spans: Iterable[tuple[int, int]] = self.lines_with(literals[0], ignorecase)
        else:
            spans = sorted({span for lit in literals for span in self.lines_with(lit, ignorecase)})
        search = regex.search
        text = self.text
        for start, end in spans:
            match = search(text, start, min(end, start + MAX_LINE_SCAN))
            if match is not None:
                yield match

    def last_match(self, regex: re.Pattern, literals: tuple[str, ...], ignorecase: bool = False) -> re.Match | None:
        """The last line's match, found by searching backwards (progress markers repeat thousands of times)."""
        haystack = self._haystack(ignorecase)
        text = self.text
        best: re.Match | None = None
        for literal in literals or ("",):
            if literal and self._present is not None and (literal, ignorecase) not in self._present:
                continue
            limit = len(haystack)
            if literal and self._offsets_valid:  # start from the end of the last chunk that holds it
                limit = min(
                    limit, (self._present.chunks[(literal, ignorecase)][-1] + 1) * scan_presence.CHUNK_BYTES + len(literal)
                )
            for _ in range(MAX_BACKWARD_LINES):
                pos = haystack.rfind(literal, 0, limit)
                if pos == -1 or (best is not None and pos < best.start()):
                    break
                start = text.rfind("\n", 0, pos) + 1
                end = text.find("\n", pos)
                match = regex.search(text, start, min(len(text) if end == -1 else end, start + MAX_LINE_SCAN))
                if match is not None:
                    if best is None or match.start() > best.start():
                        best = match
                    break
                limit = start
                if not literal:
                    break
        return best
