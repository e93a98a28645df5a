"""Turn whatever was pasted or uploaded into clean text with stable line numbers.

Line numbers count '\\n' only, as `grep -n` and editors do; a lone '\\r' (progress bars) becomes a
space so a redrawn tqdm line stays one line.
"""

from __future__ import annotations

import bisect
import html
import mmap
import re
from collections import Counter
from dataclasses import dataclass, field

from diagnosis.scan import presence as scan_presence

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_ANSI_BYTES_RE = re.compile(_ANSI_RE.pattern.encode())


def log_text(data: bytes | str) -> tuple[str, bool]:
    """Bytes of any encoding to text: invalid UTF-8 becomes U+FFFD, colour codes and CRs go.

    Also says whether the text is exactly the input bytes (ASCII, nothing removed or replaced): then
    the raw bytes can stand for the text in a byte-level scan, without encoding megabytes again."""
    text, encoded = log_clean(data)
    return text, encoded is data


def log_clean(data: bytes | bytearray | mmap.mmap | str) -> tuple[str, bytes | mmap.mmap | None]:
    """The text, and the cleaned bytes it was decoded from when they stand for it character for character
    (ASCII), so a byte-level scan needs no encoding. Cleaning works on the bytes (C speed, one decode); a
    mapped file that needs no cleaning is decoded straight from the page cache, and returned as itself."""
    if isinstance(data, str):
        if "\x1b" in data:
            data = _ANSI_RE.sub("", data)
        if "\r" in data:
            data = data.replace("\r\n", "\n").replace("\r", " ")
        return data.replace("\x00", "") if "\x00" in data else data, None
    return cleaned_decode(bytes_clean(data))


_CLEANED = ("\x1b", "\r", "\r\n", "\x00")  # what bytes_clean deals with, looked for in one pass


def bytes_clean(data: bytes | bytearray | mmap.mmap) -> bytes | bytearray | mmap.mmap:
    """The bytes with colour codes, NULs and carriage returns dealt with (see log_clean); `data` itself when
    nothing needed cleaning."""
    if data.find(b"\r") == -1:  # most program logs: memchr for the other two beats the pass (5.6 ms on 50 MB, not 7.4)
        found = {needle for needle in ("\x1b", "\x00") if data.find(needle.encode()) != -1}
    else:
        found = scan_presence.bytes_among(data, _CLEANED)
    cleaned = data
    crlf = "\r\n" in found
    if "\x1b" in found:
        cleaned = _ANSI_BYTES_RE.sub(b"", cleaned)
        crlf = "\r" in found and "\r\n" in scan_presence.bytes_among(cleaned, ("\r\n",))  # "\r\x1b[0m\n" is one now
    if "\r" in found:
        cleaned = bytes(cleaned)
        if crlf:
            cleaned = cleaned.replace(b"\r\n", b"\n")
        cleaned = cleaned.replace(b"\r", b" ")
    if "\x00" in found:
        cleaned = bytes(cleaned).replace(b"\x00", b"")
    return cleaned


def cleaned_decode(cleaned: bytes | bytearray | mmap.mmap) -> tuple[str, bytes | bytearray | mmap.mmap | None]:
    """Cleaned bytes to text, with the bytes kept when they stand for the text character for character."""
    text = str(cleaned, "utf-8", errors="replace")
    return text, cleaned if text.isascii() else None


def log_decode(data: bytes | str) -> str:
    return log_text(data)[0]


# Pastes are repaired only up to this size: a bigger input is a file written by a program, not a copy
# from a terminal or a web page, and is scanned as it is (the repair walks every line in Python).
REPAIR_LIMIT = 8 * 1024 * 1024
_ENTITY_RE = re.compile(r"&(?:gt|lt|quot|amp|#39|#x27|apos|nbsp);")
_WRAP_MIN, _WRAP_MAX = 60, 250  # terminal widths people paste from; longer equal lines are a program's own
_RECORD = "WorkNCCL("


def _record_open(line: str) -> bool:
    """A watchdog line cut inside its WorkNCCL(...) record: the record's fields continue on the next line."""
    start = line.find(_RECORD)
    if start == -1:
        return False
    rest = line[start + len(_RECORD) - 1 :]
    return rest.count("(") > rest.count(")")


def _any_record_open(text: str) -> bool:
    """Some line holds a WorkNCCL(...) record cut before its closing parenthesis (visits only those lines)."""
    pos = text.find(_RECORD)
    while pos != -1:
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        if _record_open(text[text.rfind("\n", 0, pos) + 1 : end]):
            return True
        pos = text.find(_RECORD, end)
    return False


# A watchdog message someone broke over lines to read it: the WorkNCCL(...) record on a line of its own, its fields
# and "ran for ..." indented under it, "PG status: ..." under the progress line. Each such part goes back onto the line
# before it, with one space, as PyTorch printed it.
_WATCHDOG_PART = r"[ \t]*(?:WorkNCCL\(|NumelIn=|ran for \d+ milliseconds|PG status: )"
_WATCHDOG_PART_RE = re.compile(_WATCHDOG_PART)
_WATCHDOG_SPLIT_RE = re.compile("\n" + _WATCHDOG_PART)
_WATCHDOG_HEADS = ("Watchdog caught collective operation timeout", "WorkNCCL(", "detected by watchdog")


def _watchdog_part(line: str, before: str) -> bool:
    """`line` is a piece of the watchdog message on the line `before` it (see _WATCHDOG_PART_RE)."""
    return _WATCHDOG_PART_RE.match(line) is not None and any(head in before for head in _WATCHDOG_HEADS)


# A watchdog message a chat or a terminal wrapped at a word: a line break stands where PyTorch printed one space, inside
# one of the phrases the rank reader (readers/facts.py: WATCHDOG_RE, PROGRESS_RE) reads a rank's place from. Such a
# break goes back to the space it replaced. Wrapped anywhere else, a line is left alone: a line that merely ends near the
# widest length is as often a line of its own (a progress bar, a launcher's banner) as the head of a wrapped one.
_S = r"[ \n]"  # a space of the printed message, or the line break a word wrap put in its place
_WATCHDOG_PHRASES = (
    # the glog header's source line, and on to the prefix: "ProcessGroupNCCL.cpp:616] [Rank 3]"
    rf"ProcessGroupNCCL\.cpp:\d+\]{_S}(?=\[(?:PG|Rank))",
    # "[Rank 3] Watchdog", "[PG ID 0 PG GUID 0(default_pg) Rank 3] Timeout": the prefix, and on to its message
    rf"\[(?:PG(?:{_S}[^\]\s]{{1,40}}){{1,8}}?{_S})?Rank{_S}\d+\](?:{_S}(?=[A-Z]|failure))?",
    rf"Watchdog{_S}caught{_S}collective{_S}operation{_S}timeout:{_S}WorkNCCL\(",
    rf"(?:Process{_S}group|NCCL){_S}watchdog{_S}thread{_S}terminated{_S}with{_S}exception:{_S}(?=\[)",
    rf"(?:Timeout{_S}at{_S}NCCL|Exception{_S}\(either{_S}an{_S}error{_S}or{_S}timeout\){_S}detected{_S}by{_S}watchdog{_S}at"
    rf"|NCCL{_S}error{_S}is{_S}detected{_S}by{_S}watchdog{_S}at|failure{_S}detected{_S}by{_S}watchdog{_S}at{_S}work{_S}sequence)"
    rf"{_S}(?:work|id):{_S}\d+(?:,?{_S}(?=last|PG{_S}status:))?",
    rf"PG{_S}status:{_S}(?=last)",
    rf"last{_S}(?:enqueued|completed){_S}(?:NCCL{_S})?work:{_S}-?\d+(?:,{_S}(?=last))?",
    rf"ran{_S}for{_S}\d+{_S}milliseconds{_S}before{_S}timing{_S}out",
)
_WATCHDOG_PHRASE_RE = re.compile("|".join(_WATCHDOG_PHRASES))
_WORD_WRAP_HEADS = ("Watchdog", "watchdog", "NCCL work", "work:")
# The words of those phrases a space follows: a line that a word wrap broke inside one ends with one of them (or with
# a number of one, "119,", "0]", "0(default_pg)"), so the phrases are looked for only across those lines' breaks.
_PHRASE_WORDS = frozenset(
    "[PG PG ID GUID Rank [Rank Watchdog caught collective operation timeout: Process group NCCL watchdog thread "
    "terminated with exception: Timeout at Exception (either an error or timeout) detected by is failure work sequence "
    "id: status: last enqueued completed work: ran for milliseconds before timing".split()
)


_ENDS_NO_PHRASE = frozenset(". \t'\"")  # how most lines end: a sentence, a quote, trailing space


def _phrase_word(word: str) -> bool:
    if word in _PHRASE_WORDS:
        return True
    end = word[-1:]
    if end == ")":
        return word[:1] in "0123456789("
    if end == "]" and word.startswith("ProcessGroupNCCL.cpp:"):
        return True
    return (end.isdigit() or end in ",]") and word.rstrip(",]").lstrip("-").isdigit()


def _word_wrapped(text: str, lines: list[str]) -> set[int]:
    """The lines (0-based) a word wrap broke inside a watchdog phrase: each continues on the next after one space."""
    if not any(head in text for head in _WORD_WRAP_HEADS):
        return set()
    broken: set[int] = set()
    for index in range(len(lines) - 1):
        line = lines[index]
        if not line or line[-1] in _ENDS_NO_PHRASE or not _phrase_word(line[line.rfind(" ") + 1 :]):
            continue
        # a phrase longer than a narrow wrap's width runs over three lines: from the line before to the line after next
        before = lines[index - 1][-200:] if index else ""
        window = "\n".join(
            (before, line[-200:], lines[index + 1][:200], lines[index + 2][:200] if index + 2 < len(lines) else "")
        )
        at = len(before) + 1 + min(len(line), 200)  # this line's break
        if any(m.start() < at < m.end() for m in _WATCHDOG_PHRASE_RE.finditer(window)):
            broken.add(index)
    return broken


# A line number a copy brought along: a code view's or an editor's gutter ("  12 | "), `cat -n` ("    12\t"), `nl`,
# `grep -n` ("12:") or a plain "12 ".
# `grep -n`'s "12:" has no space after the colon; "12: " is srun --label's, which is a rank, not a line number.
_LINE_NUMBER_RE = re.compile(r"[ \t]{0,8}(\d{1,7})(?:[ \t]{0,4}[|\u2502] ?|:(?! )|\t| )")


def _line_numbers_stripped(lines: list[str]) -> list[str] | None:
    """The lines without the line numbers they were copied with, or None when the paste has none: nine in ten of its
    non-blank lines start with a number, the numbers only grow, and four in five steps from one to the next are +1
    (srun --label's "N: " counts ranks over and over, never only up)."""
    head = [line for line in lines[:200] if line.strip()][:50]  # most pastes have none: the head tells at once
    if len(head) < 3 or sum(_LINE_NUMBER_RE.match(line) is not None for line in head) * 10 < len(head) * 9:
        return None
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    found = [(i, _LINE_NUMBER_RE.match(lines[i])) for i in nonblank]
    numbered = [(i, m) for i, m in found if m is not None]
    if len(numbered) * 10 < len(nonblank) * 9:
        return None
    numbers = [int(m.group(1)) for _, m in numbered]
    steps = [b - a for a, b in zip(numbers, numbers[1:])]
    if any(step <= 0 for step in steps) or sum(step == 1 for step in steps) * 5 < len(steps) * 4:
        return None
    out = list(lines)
    for i, m in numbered:
        out[i] = lines[i][m.end() :]
    return out


@dataclass
class Repaired:
    """Text after paste repair, and the offsets (in the repaired text) where a line break was removed, so
    line numbers still count the lines of the input."""

    text: str
    joins: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def paste_repair(text: str) -> Repaired:
    """Undo what copying does to a log: HTML escaping from a web page, and hard wrapping at the terminal's
    width (every line of exactly the widest length continues on the next). Leaves program-written logs as
    they are."""
    if len(text) > REPAIR_LIMIT:
        return Repaired(text)
    notes: list[str] = []
    if "&" in text:
        entities = len(_ENTITY_RE.findall(text))
        if entities and (entities >= 3 or "&gt;" in text or "&quot;" in text):
            text = html.unescape(text)
            notes.append("HTML entities (&gt;, &quot;, ...) were unescaped")
    lines = text.split("\n")
    unnumbered = _line_numbers_stripped(lines)
    if unnumbered is not None:
        lines = unnumbered
        text = "\n".join(lines)
        notes.append("the line numbers the paste was copied with were removed")
    width = _wrap_width(lines)
    if width is not None:
        full = [i for i, line in enumerate(lines[:-1]) if len(line) == width]
        continued = sum(1 for i in full if _continues(lines[i], lines[i + 1]))
        if continued < 2 or continued * 2 < len(full):
            width = None  # most full-width lines are followed by a line of their own: not a wrapped paste
        elif _word_breaks(lines, width) > continued:
            width = None  # wrapped at words: a line of the full width lost a space, not a character (see _word_wrapped)
    split = _WATCHDOG_SPLIT_RE.search(text) is not None and any(head in text for head in _WATCHDOG_HEADS)
    worded = _word_wrapped(text, lines)
    if width is None and not split and not worded and not _any_record_open(text):
        return Repaired(text, notes=notes)
    out: list[str] = []
    joins: list[int] = []
    offset = 0
    pending = ""
    strip = False
    for index, line in enumerate(lines):
        current = pending + (line.lstrip(" \t") if strip else line)
        last = index == len(lines) - 1
        strip = split and not last and len(current) < 4000 and _watchdog_part(lines[index + 1], current)
        # a break inside a watchdog phrase replaced its space, even where the line is of the widest length
        word = not strip and index in worded and len(current) < 4000
        wrapped = (
            not strip
            and not word
            and width is not None
            and len(line) == width
            and not last
            and _continues(line, lines[index + 1])
        )
        # a record still open where the next line starts a line of its own was cut at the right edge, not wrapped
        open_record = (
            not strip
            and not wrapped
            and not word
            and _RECORD in current
            and _record_open(current)
            and len(current) < 4000
            and not last
            and _LINE_START_RE.match(lines[index + 1]) is None
        )
        if not last and (strip or wrapped or open_record or word):
            # A word wrap eats the space after a field separator; a terminal wrap cuts anywhere and keeps it.
            nxt = lines[index + 1]
            if strip or word:
                pending = current.rstrip(" \t") + " "
            else:
                # inside a record a comma is always followed by a space: one at neither end of the break was eaten
                in_record = open_record or (wrapped and _RECORD in current and _record_open(current))
                pending = current + (" " if in_record and line.endswith((",", ";")) and not nxt.startswith(" ") else "")
            joins.append(offset + len(pending))
            continue
        pending = ""
        out.append(current)
        offset += len(current) + 1
    if joins:
        notes.append(f"{len(joins)} hard-wrapped line break(s) were re-joined" + (f" (width {width})" if width else ""))
    return Repaired("\n".join(out), joins, notes)


# The rank prefixes launchers put before each line, written once: PyTorch's `[rankN]:` and torchrun's
# `[defaultN]:`, mpirun --tag-output's `[job,rank]<stderr>:`, srun --label's `N: `. One group each: the rank.
_NUMBER = r"\d{1,5}"


def _bracket_prefixes(rank: str) -> tuple[str, str]:
    return rf"\[(?:default|rank){rank}\]:", rf"\[{_NUMBER},{rank}\]<std(?:out|err)>:"


def _srun_label(rank: str) -> str:
    """srun --label's "%*d: ": the task id right-aligned to the widest one's digits (" 3: " among 16 tasks), after
    "P<component> " in a heterogeneous job (Slurm, src/common/write_labelled_message.c)."""
    return rf"(?:P{_NUMBER} )? *{rank}: "


TORCHRUN_PREFIX, TAG_OUTPUT_PREFIX = _bracket_prefixes(rf"({_NUMBER})")
# The same prefixes capturing nothing, for a pattern whose own group is what it reads (a host name).
BRACKET_PREFIX = "(?:{}|{})".format(*_bracket_prefixes(_NUMBER))
SRUN_LABEL = _srun_label(_NUMBER)
SRUN_LABEL_PREFIX = "^" + _srun_label(rf"({_NUMBER})")
_RANK_PREFIX_RE = re.compile(f"{TORCHRUN_PREFIX}|{TAG_OUTPUT_PREFIX}|{SRUN_LABEL_PREFIX}")


# The rank an evidence line names near its start: a torchrun/accelerate prefix ("[rank3]:", "[Rank 3]") or a
# message's own "rank 3" (c10d's "(rank 3)"). The evidence rows and the rank groups both ask it, so a row is never
# one rank's on the page and another's in the groups.
_LINE_RANK_RE = re.compile(r"\[(?:rank|Rank|RANK)\s?(\d{1,6})\]|\brank (\d{1,6})\b")


def line_rank(text: str) -> int | None:
    """The rank a log line names near its start (its first 300 characters), if any."""
    match = _LINE_RANK_RE.search(text[:300])
    return int(match.group(1) or match.group(2)) if match else None


def rank_prefix_split(line: str) -> tuple[str, int | None]:
    """The line without a launcher's rank prefix (looked for in its first 80 characters), and the rank it named."""
    match = _RANK_PREFIX_RE.search(line[:80])
    if not match:
        return line, None
    rank = next(int(g) for g in match.groups() if g is not None)
    return line[match.end() :], rank


# How a log line begins: a launcher or logger prefix (srun --label's rank, deepspeed's and pdsh's "host: " before a
# bracket or a timestamp), a timestamp, a glog header, an NCCL host:pid:tid; and the heads of the dumps a paste holds
# (stack dumps' thread and process lines, the debug server's sections, tables and errors, a JSON object), whose widest
# lines are whole lines of their own.
_LINE_START_RE = re.compile(
    rf"\s*(?:\[|{SRUN_LABEL}\S|[\w.-]{{1,64}}: (?:\[|\d{{4}}-\d\d-\d\d)|\d{{4}}-\d\d-\d\d|[EWIF]\d{{4}} "
    r"|[A-Za-z0-9_.-]{1,64}:\d+:\d+ \[|Traceback|File \"|#\d"
    r"|frame #\d|Exception raised from|terminate called|what\(\)|[A-Z]\w{2,40}(?:Error|Exception|Warning):"
    r"|=== |--- |Error: \d|\{(?:\"|$)|Process \d+: |Python v\d|(?:Current thread|Thread) (?:0x|\d))"
)


def _continues(line: str, following: str) -> bool:
    """A full-width line continues on the next when the next does not start a line of its own (lines of
    one format that happen to share the widest length each start the same way)."""
    if following[:8] == line[:8] or not following.strip():
        return False
    return _LINE_START_RE.match(following) is None


def _word_breaks(lines: list[str], width: int) -> int:
    """Lines shorter than `width` (by less than a quarter) that continue on the next, whose first word would not have
    fitted on them: a word wrap makes many, a terminal's wrap, which cuts every long line at the width itself, next to
    none."""
    count = 0
    for line, following in zip(lines, lines[1:]):
        if width * 3 // 4 <= len(line) < width and not line.endswith((" ", "\t")) and not following[:1].isspace():
            if len(line) + 1 + len(following.split(" ", 1)[0]) > width and _continues(line, following):
                count += 1
    return count


def _wrap_width(lines: list[str]) -> int | None:
    """The terminal width a paste was hard-wrapped at: the longest line length, shared by at least two
    different lines, with no line longer. None for a log that was not wrapped."""
    lengths = Counter(map(len, lines))
    widest = max(lengths)
    if widest < _WRAP_MIN or widest > _WRAP_MAX or lengths[widest] < 2:
        return None
    if len({line for line in lines if len(line) == widest}) < 2:
        return None
    return widest


class LineLocator:
    """Maps character offsets in a text to 1-based line numbers and line contents.

    The one count of the text's newlines is made a chunk (scan.presence.CHUNK_BYTES, a megabyte) at a time and each step
    is kept as a checkpoint; a lookup counts from the nearest offset already resolved (C speed), so any line number
    costs at most half a chunk of counting, and no table of every line is built. `chunk_newlines`: that count already
    made, chunk by chunk (the presence pass makes it without the GIL, see TextScanner.chunk_newlines).
    """

    def __init__(
        self, text: str, joins: list[int] | None = None, base_line: int = 0, chunk_newlines: list[int] | None = None
    ) -> None:
        self.text = text
        self._joins = joins or []  # offsets where a repair removed a line break (see paste_repair)
        self._base = base_line  # lines of the file before this text (a window of a larger file)
        # sorted (offset, line number) checkpoints, one a chunk, the end last
        self._known: list[tuple[int, int]] = [(0, 1)]
        line = 1
        step = scan_presence.CHUNK_BYTES
        for index, start in enumerate(range(0, len(text), step)):
            end = min(start + step, len(text))
            line += chunk_newlines[index] if chunk_newlines is not None else text.count("\n", start, end)
            self._known.append((end, line))
        self.newlines = line - 1  # how many line breaks the text holds

    def line_number(self, offset: int) -> int:
        """The input's line number at `offset`: newlines before it, plus the breaks a repair removed."""
        line = self._text_line(offset) + self._base
        return line + bisect.bisect_right(self._joins, offset) if self._joins else line

    def _text_line(self, offset: int) -> int:
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
        line = self.text[start : end if end != -1 else len(self.text)]
        return line if len(line) <= limit else line[:limit] + "…"

    def line_count(self) -> int:
        if not self.text:
            return 0
        return self.newlines + len(self._joins) + (0 if self.text.endswith("\n") else 1)


def text_clipped(text: str, limit: int) -> str:
    """At most `limit` characters of a message for a sentence: cut at a space where one is near, marked with '…',
    so a summary never ends mid-word with the next words of its own sentence glued on."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut > 0 else limit].rstrip(" ,;:(") + "…"
