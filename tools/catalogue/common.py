"""Shared parts of the catalogue harvesters: reading C/C++ call arguments, the harvest file format.

A harvest row is one (release, file, line, severity, style, format) tuple read by script from a program's
source or binary. Stage 2 (`build.py`) turns the rows of every release into catalogue entries.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARVEST_DIR = ROOT / "content" / "catalogue" / "harvest"
MESSAGES_DIR = ROOT / "content" / "catalogue" / "messages"

HARVEST_COLUMNS = ("release", "file", "line", "severity", "style", "source", "format")

# <inttypes.h> macros spliced into NCCL's format strings, as glibc on x86_64 defines them.
PRI_MACROS = {
    "PRId64": "ld",
    "PRIi64": "li",
    "PRIu64": "lu",
    "PRIx64": "lx",
    "PRIX64": "lX",
    "PRIu32": "u",
    "PRId32": "d",
    "PRIx32": "x",
}


@dataclass(frozen=True)
class HarvestRow:
    release: str
    file: str
    line: int
    severity: str
    style: str  # printf | brace | pieces (C++ c10::str pieces, joined with {} for the values between them)
    source: str  # where the row was read: a git tag, a wheel file name
    format: str


def harvest_write(path: Path, rows: list[HarvestRow]) -> None:
    """Write rows as TSV, sorted, formats escaped so one row is one line (tabs and newlines as \\t, \\n)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(HARVEST_COLUMNS)
    seen: set[HarvestRow] = set()
    for row in sorted(rows, key=lambda r: (release_key(r.release), r.file, r.line, r.format)):
        if row in seen:
            continue
        seen.add(row)
        writer.writerow([row.release, row.file, row.line, row.severity, row.style, row.source, escape(row.format)])
    path.write_text(out.getvalue(), encoding="utf-8")


def harvest_read(path: Path) -> list[HarvestRow]:
    """Read a harvest TSV back into rows."""
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t")
    header = next(reader)
    if tuple(header) != HARVEST_COLUMNS:
        raise ValueError(f"{path}: header {header} is not {HARVEST_COLUMNS}")
    return [HarvestRow(r[0], r[1], int(r[2]), r[3], r[4], r[5], unescape(r[6])) for r in reader]


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), text)


def release_key(release: str) -> tuple[int, ...]:
    """Sort key of a dotted release number ('2.30.7' → (2, 30, 7))."""
    return tuple(int(p) for p in re.findall(r"\d+", release))


# --- C/C++ source reading -------------------------------------------------------------------------------------------

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "a": "\a", "e": "\x1b"}


def c_string_value(literal: str) -> str:
    """The text of one C string literal body (without quotes), escapes resolved."""
    out = []
    i = 0
    while i < len(literal):
        ch = literal[i]
        if ch == "\\" and i + 1 < len(literal):
            nxt = literal[i + 1]
            if nxt == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", literal[i + 2 :])
                out.append(chr(int(m.group(0), 16)) if m else "x")
                i += 2 + (len(m.group(0)) if m else 0)
                continue
            if nxt in "01234567" and re.match(r"[0-7]{1,3}", literal[i + 1 :]):
                m = re.match(r"[0-7]{1,3}", literal[i + 1 :])
                out.append(chr(int(m.group(0), 8)))
                i += 1 + len(m.group(0))
                continue
            if nxt == "\n":  # line continuation inside a literal
                i += 2
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def call_arguments(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """Split the argument list of the call whose '(' is at `open_paren` into raw argument texts.

    Strings, character literals and comments are skipped over so a comma or parenthesis inside them does not
    split. Returns (arguments, index after ')') or None when the call is not closed (a macro definition cut short).
    """
    depth = 0
    args: list[str] = []
    start = open_paren + 1
    i = open_paren
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or ch == "'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return None


_TOKEN = re.compile(r'\s+|\\\n|//[^\n]*|/\*.*?\*/|"((?:[^"\\\n]|\\.|\\\n)*)"|([A-Za-z_]\w*)|(.)', re.S)


def c_format_argument(arg: str, macros: dict[str, str] | None = None) -> str | None:
    """The format string an argument spells as adjacent literals and known macros; None when it is anything else.

    `macros` maps identifiers to the text they splice in (PRIu64 → 'lu'); an unknown identifier means the format is
    computed at run time, which a catalogue cannot know, so the argument is refused.
    """
    macros = PRI_MACROS if macros is None else macros
    parts: list[str] = []
    for m in _TOKEN.finditer(arg.strip()):
        literal, ident, other = m.group(1), m.group(2), m.group(3)
        if literal is not None:
            parts.append(c_string_value(literal))
        elif ident is not None:
            if ident in macros:
                parts.append(macros[ident])
            elif ident in ("u8", "L", "u", "U"):  # encoding prefixes glued to the next literal
                continue
            else:
                return None
        elif other is not None:
            return None
    return "".join(parts) if parts else None


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    """A git command's output in a fetched mirror (a git directory without a work tree)."""
    return subprocess.run(["git", "-C", str(mirror), *args], input=data, capture_output=True, check=True).stdout
