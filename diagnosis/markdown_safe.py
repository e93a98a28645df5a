"""Text from a log, made safe to put in Markdown and shown without invisible characters.

Log text is whatever the job printed, or whatever someone pasted: in "Copy as Markdown" and `/d/<id>.md` it must
not become a link, an image or raw HTML, and a name holding a newline and a fence must not close the block it is
in. So log text goes only inside a code span or a fenced block whose backtick run is longer than any in the text
(CommonMark: a code span or fence closes only on a run of its own length), one line per line. Control characters
and bidirectional overrides (ESC starts terminal sequences, U+202E reverses what follows on screen) are shown as
visible escapes such as `\\x1b` and `\\u202e`, in Markdown and in HTML.
"""

from __future__ import annotations

import re

# C0 controls but tab, newline and carriage return, DEL and C1 controls; bidirectional marks, embeddings, overrides and isolates;
# line and paragraph separators (which break a line where Markdown and HTML do not expect it).
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_BACKTICKS_RE = re.compile(r"`+")


def _escape(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_controls(text: str, *, newlines: bool = True) -> str:
    """`text` with each control or bidirectional character written as a visible escape (`\\x1b`, `\\u202e`);
    newlines are kept, or (newlines=False, for a one-line field such as a file name) written as `\\n` too."""
    text = _CONTROL_RE.sub(_escape, text)
    if not newlines:
        text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text


def _fence_length(text: str, least: int) -> int:
    return max([least] + [len(run) + 1 for run in _BACKTICKS_RE.findall(text)])


def code_span(text: str) -> str:
    """One line of log text as a Markdown code span: nothing in it is a link, image, HTML or emphasis."""
    text = visible_controls(text, newlines=False)
    if not text:
        return ""
    ticks = "`" * _fence_length(text, 1)
    padded = f" {text} " if text[0] in "` " or text[-1] in "` " else text
    return f"{ticks}{padded}{ticks}"


def fenced(lines: list[str]) -> str:
    """Lines of log text as a fenced Markdown block no line can close: each line's newlines and controls are
    written as escapes, and the fence is longer than any backtick run in them."""
    shown = [visible_controls(line, newlines=False) for line in lines]
    fence = "`" * _fence_length("\n".join(shown), 3)
    return "\n".join([fence, *shown, fence])
