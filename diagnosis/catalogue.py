"""Recognise the lines a catalogued program prints: the message catalogue as a matcher (pure Python, no Django).

The catalogue (content/catalogue/messages/<program>.yaml, built from sources by tools/catalogue/) lists every
message template a program prints, per release. Each template compiles to a regex: literal text escaped, every
whitespace run in it matching any whitespace run (so hard-wrapped lines re-joined with a space still match), and each
format field a capture group typed by the catalogue (an int field captures digits and comes back as an int).

Matching rules (FORMAT.md repeats them):
- Whole: a template matches a line when it appears anywhere in it, so launcher, container and NCCL prefixes before it
  (`[rank3]:[E1128 ...] `, `host:1:2 [0] NCCL WARN `) do not matter.
- Lines: a template that spans lines is matched line by line (a hit's `part`); its first line needs 3 literal
  characters, the others 12.
- Fragments of hard-wrapped lines, for literal runs of at least FRAGMENT_MIN characters: "tail" when the line,
  after leading whitespace, opens inside such a run, holds at least its last FRAGMENT_MIN characters, and the rest
  of the template follows; "head" when the template's beginning is in the line and the line closes inside such a
  run after at least its first FRAGMENT_MIN characters, or closes inside any later literal run once the line holds
  the template's beginning with its required literal and at least FRAGMENT_MIN literal characters. Only the fields
  inside the fragment are captured.
- Speed: every template has a required literal (its longest literal run; for fragments, the anchor), and one
  Hyperscan pass per line says which literals occur; only those templates' regexes run. Without hyperscan the same
  literals are looked for with `in`, slower but with the same answers.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import yaml

try:
    import hyperscan
except ImportError:  # pragma: no cover - the fallback is exercised by passing use_hyperscan=False
    hyperscan = None

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "content" / "catalogue" / "messages"
FRAGMENT_MIN = 20  # characters of a literal run a mid-message fragment must hold
MAX_LINE = 4096  # regexes see at most this much of a line: messages are shorter, and it bounds the cost of any line

PRINTF_SPEC = re.compile(
    r"%(?:\((?P<key>\w+)\))?(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?(?P<len>hh|h|ll|l|z|j|t|L|q)?(?P<conv>[diouxXeEfgGcsp%])"
)
BRACE_SPEC = re.compile(r"\{\{|\}\}|\{(?P<name>[^{}]*)\}")
INT_TYPES = {"rank", "errno", "seqnum", "timeout_ms", "pid", "int", "signal", "exitcode"}
_FLOAT = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"
_CONV_RE = {
    "d": r"[-+]?\d+",
    "i": r"[-+]?\d+",
    "u": r"\d+",
    "o": r"[0-7]+",
    "x": r"(?:0[xX])?[0-9a-fA-F]+",
    "X": r"(?:0[xX])?[0-9a-fA-F]+",
    "p": r"0x[0-9a-fA-F]+|\(nil\)|0",
    "f": _FLOAT,
    "e": _FLOAT,
    "E": _FLOAT,
    "g": _FLOAT,
    "G": _FLOAT,
    "c": r".",
}
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Entry:
    """One catalogued template, as content/catalogue/FORMAT.md describes it."""

    id: str
    program: str
    template: str
    style: str
    severity: str
    meaning: str
    first: str
    last: str
    file: str
    fields: tuple[tuple[str, str], ...] = ()
    absent_in: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """A catalogued template found in a line: what it means, its typed values, which releases print it, and where."""

    id: str
    program: str
    meaning: str
    severity: str
    fields: dict[str, object]
    first: str
    last: str
    span: tuple[int, int]
    fragment: str | None = None  # None: the whole template (line); "tail": the line starts mid-message; "head": it ends so
    part: int = 0  # which line of a template that spans lines


# --- compiling templates ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    literal: str | None = None  # literal text, escapes resolved
    field: int | None = None  # index into Entry.fields
    pattern: str = ""  # regex of the field's value


def _tokens(entry: Entry) -> list[_Token]:
    """The template as literal runs and fields, in order."""
    text = entry.template.strip()
    if entry.style == "pieces":
        return [_Token(literal=text)]
    spec = PRINTF_SPEC if entry.style == "printf" else BRACE_SPEC
    out: list[_Token] = []
    buffer: list[str] = []
    last = 0
    index = 0
    for m in spec.finditer(text):
        buffer.append(text[last : m.start()])
        last = m.end()
        whole = m.group(0)
        if whole in ("%%", "{{", "}}"):
            buffer.append(whole[0])
            continue
        if buffer and "".join(buffer):
            out.append(_Token(literal="".join(buffer)))
        buffer = []
        if entry.style == "printf":
            conv = m.group("conv")
            pattern = _CONV_RE.get(conv, "")
            if m.group("width"):
                pattern = r" *(?:" + pattern + ")" if pattern else pattern
        else:
            spec_part = m.group("name").split(":", 1)[1] if ":" in m.group("name") else ""
            pattern = _CONV_RE.get(spec_part[-1:], "") if spec_part[-1:] in "dxXfeEgG" and spec_part else ""
        out.append(_Token(field=index, pattern=pattern))
        index += 1
    buffer.append(text[last:])
    if "".join(buffer):
        out.append(_Token(literal="".join(buffer)))
    return out


def _literal_regex(text: str) -> str:
    """Escaped literal text in which each whitespace run matches any whitespace run."""
    parts = _WS.split(text)
    body = r"\s+".join(re.escape(p) for p in parts)
    return body


def _tokens_regex(tokens: list[_Token]) -> str:
    pieces = []
    for i, token in enumerate(tokens):
        if token.literal is not None:
            pieces.append(_literal_regex(token.literal))
            continue
        pattern = token.pattern
        if not pattern:  # a string field: one token when it opens the template, otherwise as little as lets the rest match
            pattern = r"\S+" if i == 0 else (r".*" if i == len(tokens) - 1 else r".*?")
        pieces.append(f"(?P<f{token.field}>{pattern})")
    return "".join(pieces)


def _prefix_regex(text: str) -> str:
    """A regex for any non-empty prefix of the text, whitespace runs matching whitespace runs."""
    pieces = [r"\s+" if ch == " " else re.escape(ch) for ch in text]
    return pieces[0] + "".join(f"(?:{p}" for p in pieces[1:]) + ")?" * (len(pieces) - 1)


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _parts(tokens: list[_Token]) -> list[list[_Token]]:
    """The template's lines (a log line holds one): the first when it has at least 3 literal characters, the others
    at least 12 (a help text's short lines, "  Host: %s", would match too much)."""
    parts: list[list[_Token]] = [[]]
    for token in tokens:
        if token.literal is None or "\n" not in token.literal:
            parts[-1].append(token)
            continue
        lines = token.literal.split("\n")
        for i, text in enumerate(lines):
            if i:
                parts.append([])
            if text:
                parts[-1].append(_Token(literal=text))
    return [
        p for i, p in enumerate(parts) if sum(len(_norm(t.literal)) for t in p if t.literal is not None) >= (3 if i == 0 else 12)
    ]


@dataclass
class _Compiled:
    """One line of a template (most have one), with its index literals."""

    entry: Entry
    part: int
    tokens: list[_Token]
    key: str  # required literal (whitespace-normalised)
    runs: list[tuple[int, str]] = field(default_factory=list)  # (token index, normalised text) of runs >= FRAGMENT_MIN

    @functools.cached_property
    def run_text(self) -> dict[int, str]:
        return dict(self.runs)

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(_tokens_regex(self.tokens), re.S)

    def tail_regex(self, token_index: int) -> re.Pattern[str]:
        """The template from the last FRAGMENT_MIN characters of literal run `token_index` to its end."""
        cache = self.__dict__.setdefault("_tails", {})
        if token_index not in cache:
            anchor = _norm(self.tokens[token_index].literal or "")[-FRAGMENT_MIN:]
            rest = self.tokens[token_index + 1 :]
            cache[token_index] = re.compile(_tokens_regex([_Token(literal=anchor)] + rest), re.S)
        return cache[token_index]

    def cut_regex(self, token_index: int) -> re.Pattern[str]:
        """The template up to literal run `token_index`, then what is left of the line (group `cut`)."""
        cache = self.__dict__.setdefault("_cuts", {})
        if token_index not in cache:
            run = _norm(self.tokens[token_index].literal or "")
            leading = r"\s*" if (self.tokens[token_index].literal or "")[:1].isspace() else ""
            cache[token_index] = re.compile(
                _tokens_regex(self.tokens[:token_index]) + leading + f"(?P<cut>{_prefix_regex(run)})\\s*\\Z", re.S
            )
        return cache[token_index]

    def head_regex(self, token_index: int) -> re.Pattern[str] | None:
        """The template up to literal run `token_index`, anchored at the end of what it is given; None for the first run."""
        if token_index == 0:
            return None
        cache = self.__dict__.setdefault("_heads", {})
        if token_index not in cache:
            cache[token_index] = re.compile(_tokens_regex(self.tokens[:token_index]) + r"\s*\Z", re.S)
        return cache[token_index]


def _compile(entry: Entry) -> list[_Compiled]:
    out = []
    for index, tokens in enumerate(_parts(_tokens(entry))):
        literals = [(i, _norm(t.literal)) for i, t in enumerate(tokens) if t.literal is not None]
        literals = [(i, text) for i, text in literals if text]
        key = max(literals, key=lambda item: len(item[1]))[1]
        out.append(_Compiled(entry, index, tokens, key, [(i, text) for i, text in literals if len(text) >= FRAGMENT_MIN]))
    return out


# A typical printed value for each field type (FORMAT.md's vocabulary), for examples and self-tests.
TYPICAL = {
    "rank": "3",
    "errno": "111",
    "interface": "eth0",
    "collective": "ALLREDUCE",
    "seqnum": "42",
    "timeout_ms": "600000",
    "host": "node1",
    "address": "10.0.0.2:29500",
    "device": "0",
    "pid": "12345",
    "signal": "9",
    "exitcode": "1",
    "int": "7",
    "hex": "0x1f",
    "pointer": "0x7f3a2c000b80",
    "float": "1.5",
    "str": "some value",
}
_TYPICAL_FALLBACKS = ("7", "1f", "0x7f3a2c000b80", "1.5", "x")  # for a conversion the type's value does not fit


def example_line(entry: Entry) -> str:
    """The entry's message as its program would print it, each field filled with a typical value of its type."""
    out = []
    for token in _tokens(entry):
        if token.literal is not None:
            out.append(token.literal)
            continue
        type_name = entry.fields[token.field][1] if token.field is not None and token.field < len(entry.fields) else "str"
        value = TYPICAL.get(type_name, "some value")
        if token.pattern and not re.fullmatch(token.pattern, value):
            value = next(v for v in _TYPICAL_FALLBACKS if re.fullmatch(token.pattern, v))
        out.append(value)
    return "".join(out)


def _typed(value: str, type_name: str) -> object:
    value = value.strip()
    if type_name in INT_TYPES and value.isascii() and value.lstrip("+-").isdigit() and len(value) - len(value.lstrip("+-")) <= 1:
        return int(value)
    if type_name == "hex" and re.fullmatch(r"(?:0[xX])?[0-9a-fA-F]+", value):
        return int(value, 16)
    if type_name == "float":
        try:
            return float(value)
        except ValueError:
            return value
    return value


# --- the catalogue ---------------------------------------------------------------------------------------------------


class Catalogue:
    """Every entry of the loaded programs, indexed by required literal."""

    def __init__(
        self,
        entries: Iterable[Entry],
        releases: dict[str, list[str]] | None = None,
        use_hyperscan: bool = True,
        database: bytes | None = None,
    ):
        self.entries: dict[str, Entry] = {}
        self.releases = releases or {}
        self._compiled: list[_Compiled] = []
        for entry in entries:
            if entry.id in self.entries:
                raise ValueError(f"duplicate catalogue id {entry.id}")
            self.entries[entry.id] = entry
            self._compiled.extend(_compile(entry))
        # literal → what to try when a line holds it: ("whole", compiled, -1), or a fragment rule on a literal run:
        # ("tail", compiled, token index) keyed by the run's last FRAGMENT_MIN characters, ("head", …) by its first.
        self._by_literal: dict[str, list[tuple[str, _Compiled, int]]] = {}
        for compiled in self._compiled:
            self._by_literal.setdefault(compiled.key, []).append(("whole", compiled, -1))
            for token_index, text in compiled.runs:
                self._by_literal.setdefault(text[-FRAGMENT_MIN:], []).append(("tail", compiled, token_index))
                self._by_literal.setdefault(text[:FRAGMENT_MIN], []).append(("head", compiled, token_index))
        self._literals = sorted(self._by_literal)
        self._database = None
        if use_hyperscan and hyperscan is not None:
            self._database = _hyperscan_load(database) if database else _hyperscan_database(tuple(self._literals))

    def database_bytes(self) -> bytes | None:
        """The literal database, serialised (for a cache); None without hyperscan."""
        return hyperscan.dumpb(self._database) if self._database is not None else None

    @classmethod
    def load(
        cls,
        directory: Path = DEFAULT_DIR,
        programs: Iterable[str] | None = None,
        use_hyperscan: bool = True,
        cache_dir: Path | None = None,
    ) -> Catalogue:
        """Read content/catalogue/messages/*.yaml (or the named programs only).

        With `cache_dir`, the parsed entries and the compiled literal database are kept there under the digest of
        the files read, so a later process loads in a fraction of the time (YAML parsing and the database compile
        are most of a load); a stale or damaged cache file is ignored."""
        wanted = set(programs) if programs is not None else None
        paths = [p for p in sorted(Path(directory).glob("*.yaml")) if wanted is None or p.stem in wanted]
        if cache_dir is not None:
            digest = hashlib.sha256(CACHE_VERSION.encode())
            for path in paths:
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
            cached = _cache_read(Path(cache_dir), digest.hexdigest(), use_hyperscan)
            if cached is not None:
                return cached
        entries: list[Entry] = []
        releases: dict[str, list[str]] = {}
        # Every value the loader reads is a string (releases too), so the base loader, which resolves no types, will
        # do: it is twice as fast as the safe one on these files.
        loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
        for path in paths:
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
            program = document["program"]
            releases[program] = [str(r) for r in document["releases"]]
            for item in document["entries"]:
                entries.append(
                    Entry(
                        id=item["id"],
                        program=program,
                        template=item["template"],
                        style=item["style"],
                        severity=item["severity"],
                        meaning=item["meaning"],
                        first=str(item["first"]),
                        last=str(item["last"]),
                        file=item["file"],
                        fields=tuple((f["name"], f["type"]) for f in item.get("fields", ())),
                        absent_in=tuple(str(r) for r in item.get("absent_in", ())),
                    )
                )
        catalogue = cls(entries, releases, use_hyperscan=use_hyperscan)
        if cache_dir is not None:
            _cache_write(Path(cache_dir), digest.hexdigest(), catalogue)
        return catalogue

    # -- matching --

    def _present(self, norm: str) -> list[str]:
        """The indexed literals that occur in a normalised line."""
        if self._database is None:
            return [literal for literal in self._literals if literal in norm]
        found: list[int] = []

        def on_match(literal_id: int, start: int, end: int, flags: int, context: object) -> None:
            found.append(literal_id)

        self._database.scan(norm.encode("utf-8"), match_event_handler=on_match)
        return [self._literals[i] for i in sorted(set(found))]

    def match(self, line: str) -> list[Hit]:
        """Every catalogued template in the line, whole matches first, then fragments, each by position."""
        line = line[:MAX_LINE]
        norm = _WS.sub(" ", line)
        offsets = _offsets(line) if norm != line else None
        return self._match_norm(norm, offsets, self._present(norm.strip()))

    def _match_norm(self, norm: str, offsets: list[int] | None, literals: list[str]) -> list[Hit]:
        order = {"whole": 0, "tail": 1, "head": 2}
        candidates = sorted(
            (c for literal in literals for c in self._by_literal[literal]),
            key=lambda c: (order[c[0]], c[1].entry.id, c[1].part, c[2]),
        )
        hits: list[Hit] = []
        matched: set[tuple[str, int]] = set()
        for rule, compiled, token_index in candidates:
            key = (compiled.entry.id, compiled.part)
            if key in matched:
                continue
            if rule == "whole":
                m = compiled.regex.search(norm)
                hit = self._hit(compiled, m, offsets, None) if m else self._cut(compiled, norm, offsets)
            elif rule == "tail":
                hit = self._tail(compiled, token_index, norm, offsets)
            else:
                hit = self._head(compiled, token_index, norm, offsets)
            if hit is not None:
                matched.add(key)
                hits.append(hit)
        return sorted(hits, key=lambda h: (h.fragment is not None, h.span, h.id, h.part))

    def _tail(self, compiled: _Compiled, token_index: int, norm: str, offsets: list[int] | None) -> Hit | None:
        """The line opens inside literal run `token_index`, holds its last FRAGMENT_MIN characters, and the rest follows."""
        run = compiled.run_text[token_index]
        start = len(norm) - len(norm.lstrip())
        position = norm.find(run[-FRAGMENT_MIN:], start)
        if position < 0:
            return None
        opening = norm[start:position].rstrip()
        if opening and not run[:-FRAGMENT_MIN].rstrip().endswith(opening):
            return None
        m = compiled.tail_regex(token_index).match(norm, position)
        return self._hit(compiled, m, offsets, "tail", start=start) if m else None

    def _cut(self, compiled: _Compiled, norm: str, offsets: list[int] | None) -> Hit | None:
        """The head rule for a line cut inside a short literal run: the template's beginning, holding its key literal
        and at least FRAGMENT_MIN literal characters, then the start of a later literal run, then the line's end."""
        key_index = next(i for i, t in enumerate(compiled.tokens) if t.literal is not None and _norm(t.literal) == compiled.key)
        for token_index in range(len(compiled.tokens) - 1, key_index, -1):
            token = compiled.tokens[token_index]
            if token.literal is None or not _norm(token.literal):
                continue
            before = sum(len(_norm(t.literal)) for t in compiled.tokens[:token_index] if t.literal is not None)
            if before < FRAGMENT_MIN:
                break
            m = compiled.cut_regex(token_index).search(norm)
            if m:
                return self._hit(compiled, m, offsets, "head")
        return None

    def _head(self, compiled: _Compiled, token_index: int, norm: str, offsets: list[int] | None) -> Hit | None:
        """The line closes inside literal run `token_index` after its first FRAGMENT_MIN characters, the template's
        beginning before it."""
        run = compiled.run_text[token_index]
        stripped = norm.rstrip()
        position = stripped.rfind(run[:FRAGMENT_MIN])
        if position < 0 or not run.startswith(stripped[position:]):
            return None
        head = compiled.head_regex(token_index)
        if head is None:
            return self._hit(compiled, None, offsets, "head", start=position, end=len(stripped))
        m = head.search(norm, 0, position)
        return self._hit(compiled, m, offsets, "head", end=len(stripped)) if m else None

    def _hit(
        self,
        compiled: _Compiled,
        m: re.Match[str] | None,
        offsets: list[int] | None,
        fragment: str | None,
        start: int | None = None,
        end: int | None = None,
    ) -> Hit:
        entry = compiled.entry
        values: dict[str, object] = {}
        for key, value in (m.groupdict() if m else {}).items():
            if value is None or key == "cut":
                continue
            index = int(key[1:])
            name, type_name = entry.fields[index] if index < len(entry.fields) else (key, "str")
            values[name] = _typed(value, type_name)
        begin = start if start is not None else m.start()
        finish = end if end is not None else m.end()
        if offsets is not None:
            begin, finish = offsets[begin], (offsets[finish - 1] + 1 if finish > begin else offsets[begin])
        return Hit(
            entry.id,
            entry.program,
            entry.meaning,
            entry.severity,
            values,
            entry.first,
            entry.last,
            (begin, finish),
            fragment,
            compiled.part,
        )

    # -- releases --

    def releases_printing(self, ids: Iterable[str]) -> tuple[str, str] | None:
        """(first, last) of the releases that print every one of the entries; None when no release prints them all.

        The entries must be of one program (release numbers of two programs do not compare)."""
        chosen = [self.entries[i] for i in ids]
        if not chosen:
            raise ValueError("no entry ids given")
        programs = {e.program for e in chosen}
        if len(programs) != 1:
            raise ValueError(f"entries of several programs: {sorted(programs)}")
        program = programs.pop()
        releases = self.releases.get(program) or sorted({e.first for e in chosen} | {e.last for e in chosen}, key=_release_key)
        common = [r for r in releases if all(printed_in(e, r) for e in chosen)]
        return (common[0], common[-1]) if common else None


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", release))


def printed_in(entry: Entry, release: str) -> bool:
    """Whether `release` prints the entry's wording: within its first and last release, and not a gap between."""
    return _release_key(entry.first) <= _release_key(release) <= _release_key(entry.last) and release not in entry.absent_in


def _offsets(line: str) -> list[int]:
    """For each character of the whitespace-normalised line, its index in the original line."""
    out: list[int] = []
    for m in re.finditer(r"\s+|\S+", line):
        if m.group(0)[0].isspace():
            out.append(m.start())
        else:
            out.extend(range(m.start(), m.end()))
    out.append(len(line))
    return out


CACHE_VERSION = "catalogue-cache-1"  # change when Entry or the database's literals change shape


def _cache_read(cache_dir: Path, key: str, use_hyperscan: bool) -> Catalogue | None:
    try:
        body = json.loads((cache_dir / f"catalogue-{key}.json").read_text(encoding="utf-8"))
        entries = [
            Entry(**{**e, "fields": tuple(tuple(f) for f in e["fields"]), "absent_in": tuple(e["absent_in"])})
            for e in body["entries"]
        ]
        database = (cache_dir / f"catalogue-{key}.hs").read_bytes() if use_hyperscan and hyperscan is not None else None
        return Catalogue(entries, body["releases"], use_hyperscan=use_hyperscan, database=database)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    except Exception:  # a database hyperscan cannot load (another version): rebuilt from the files
        return None


def _cache_write(cache_dir: Path, key: str, catalogue: Catalogue) -> None:
    """Write both cache files atomically (a reader never sees half of one); failures only cost the speed-up."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        files = {
            "json": json.dumps(
                {"releases": catalogue.releases, "entries": [dataclasses.asdict(e) for e in catalogue.entries.values()]}
            ).encode()
        }
        database = catalogue.database_bytes()
        if database is not None:
            files["hs"] = database
        for suffix in sorted(files, reverse=True):  # the database first: the JSON's presence says the pair is whole
            handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=".catalogue-")
            with os.fdopen(handle, "wb") as out:
                out.write(files[suffix])
            os.replace(temporary, cache_dir / f"catalogue-{key}.{suffix}")
    except OSError:
        pass


def _hyperscan_load(dumped: bytes):
    database = hyperscan.loadb(dumped, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)  # a loaded database comes without one
    return database


@functools.lru_cache(maxsize=4)
def _hyperscan_database(literals: tuple[str, ...]):
    """One literal database for the catalogue; None when hyperscan cannot compile it (the `in` fallback then runs)."""
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=["".join(f"\\x{byte:02x}" for byte in literal.encode()).encode() for literal in literals],
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=[0] * len(literals),
        )
    except Exception:  # an engine that cannot compile is speed lost, not an error
        return None
    return database


@functools.lru_cache(maxsize=1)
def default() -> Catalogue:
    """The catalogue of the committed content, loaded once."""
    return Catalogue.load()


def match(line: str) -> list[Hit]:
    """`Catalogue.match` on the committed catalogue."""
    return default().match(line)


def releases_printing(ids: Iterable[str]) -> tuple[str, str] | None:
    """`Catalogue.releases_printing` on the committed catalogue."""
    return default().releases_printing(ids)
