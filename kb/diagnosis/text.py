"""Turn whatever was pasted or uploaded into clean text with stable line numbers.

Line numbers count '\\n' only, as `grep -n` and editors do; a lone '\\r' (progress bars) becomes a
space so a redrawn tqdm line stays one line.
"""
from __future__ import annotations

import bisect
import re

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def log_text(data: bytes | str) -> tuple[str, bool]:
    """Bytes of any encoding to text: invalid UTF-8 becomes U+FFFD, colour codes and CRs go.

    Also says whether the text is exactly the input bytes (ASCII, nothing removed or replaced): then
    the raw bytes can stand for the text in a byte-level scan, without encoding megabytes again."""
    unchanged = isinstance(data, (bytes, bytearray))
    text = data.decode("utf-8", errors="replace") if unchanged else data
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
        unchanged = False
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", " ")
        unchanged = False
    if "\x00" in text:
        text = text.replace("\x00", "")
        unchanged = False
    return text, unchanged and text.isascii()


def log_decode(data: bytes | str) -> str:
    return log_text(data)[0]


class LineLocator:
    """Maps character offsets in a text to 1-based line numbers and line contents.

    Lookups count newlines from the nearest offset already resolved (C speed), so a handful of
    evidence lines in a 50 MB log cost one pass at most, and no table of every line is built.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines = text.count("\n")
        # sorted (offset, line number) checkpoints; the end is known from the newline count
        self._known: list[tuple[int, int]] = [(0, 1), (len(text), self._newlines + 1)]

    def line_number(self, offset: int) -> int:
        """Count newlines from the nearest known checkpoint, before or after `offset`."""
        index = bisect.bisect_right(self._known, (offset, float("inf"))) - 1
        below_offset, below_line = self._known[index]
        if index + 1 < len(self._known) and self._known[index + 1][0] - offset < offset - below_offset:
            above_offset, above_line = self._known[index + 1]
            line = above_line - self.text.count("\n", offset, above_offset)
        else:
            line = below_line + self.text.count("\n", below_offset, offset)
        self._known.insert(index + 1, (offset, line))
        return line

    def line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def line_text(self, offset: int, limit: int = 500) -> str:
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        line = self.text[start: end if end != -1 else len(self.text)]
        return line if len(line) <= limit else line[:limit] + "…"

    def line_count(self) -> int:
        if not self.text:
            return 0
        return self._newlines + (0 if self.text.endswith("\n") else 1)
