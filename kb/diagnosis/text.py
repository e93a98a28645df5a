"""Turn whatever was pasted or uploaded into clean text with stable line numbers.

Line numbers count '\\n' only, as `grep -n` and editors do; a lone '\\r' (progress bars) becomes a
space so a redrawn tqdm line stays one line.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def log_decode(data: bytes | str) -> str:
    """Bytes of any encoding to text: invalid UTF-8 becomes U+FFFD, colour codes and CRs go."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", " ")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


@dataclass
class LineLocator:
    """Maps character offsets in a text to 1-based line numbers and line contents.

    The newline table is built on first use only: most logs need a handful of lookups.
    """
    text: str
    _starts: list[int] | None = field(default=None, repr=False)

    def _table(self) -> list[int]:
        if self._starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._starts = starts
        return self._starts

    def line_number(self, offset: int) -> int:
        return bisect.bisect_right(self._table(), offset)

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
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)
