"""Lines read through the message catalogue (content/catalogue/messages, extracted from the programs' sources release
by release): what each diagnostic line means (`gloo.timeout`, `socket.connection_closed`, `process.killed`…), the
releases that can print every line matched, and the lines with a known program's prefix that no catalogued template
explains, so the curators see the catalogue's gaps.

Only lines that carry a marker of a failure (MARKERS) are matched, at most MAX_LINES a window: a healthy log's
millions of INFO and progress lines cost the literal pass alone.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnosis.readers.base import FileReading, JobParts, Window
from diagnosis.readers.facts import facts_merge

if TYPE_CHECKING:
    from diagnosis.catalogue import Catalogue

NAME = "catalogue"
# Words a line that reports a failure carries in the programs catalogued (NCCL's WARN, c10d's and gloo's errors,
# torchrun's and DeepSpeed's launchers, Python's exceptions, the shell).
MARKERS = (
    "NCCL WARN",
    "ProcessGroup",
    "c10d",
    "gloo",
    "Gloo",
    "TCPStore",
    "torch.distributed",
    "Error",
    "error",
    "Exception",
    "Timed out",
    "timed out",
    "Killed",
    "Signal",
    "failed",
    "Failed",
    "exitcode",
    "exits with return code",
    "Watchdog caught",  # torch's collective-timeout line, whose words carry none of the markers above
)
# A line with one of these is printed by a catalogued program: matching no template, it is listed as unrecognised.
KNOWN_PREFIX = re.compile(
    r"NCCL WARN|\[[EWF]\d{4} [\d:.]+ \d* ?\w+\.cpp:\d+\]|torch\.distributed\.elastic|ProcessGroup(?:NCCL|Gloo)"
)
NOT_DIAGNOSTIC = frozenset({"other", "nccl.init", "nccl.version", "nccl.interface"})
MAX_LINES = 2000  # candidate lines looked at per window
SHAPES_KEPT = 4096  # line shapes whose answer is remembered (the same message from every rank is matched once)
_DIGITS = re.compile(r"\d+")
MAX_UNRECOGNISED = 20
MAX_FIRST = 40  # meanings whose first line is kept


def _empty() -> dict[str, Any]:
    return {"meanings": {}, "entries": {}, "first": {}, "unrecognised": [], "cut": False}


class CatalogueReader:
    name = NAME
    literals = frozenset((marker, False) for marker in MARKERS)

    def read(self, window: Window, part: FileReading) -> None:
        messages: Catalogue | None = window.rules.messages
        if messages is None:
            return
        found = _empty()
        scanner, lines = window.scanner, window.lines
        candidates: set[int] = set()
        for marker in MARKERS:
            for start, _ in scanner.lines_with(marker):
                if window.start <= start < window.limit:
                    candidates.add(start)
            if len(candidates) > MAX_LINES:
                found["cut"] = True
                break
        shapes = _shapes(messages)
        for start in sorted(candidates)[:MAX_LINES]:
            text = lines.line_text(start)
            shape = _DIGITS.sub("0", text[:1000])
            known = shapes.get(shape)
            if known is None:
                every = messages.match(text)
                known = (
                    bool(every),
                    tuple(dict.fromkeys((hit.id, hit.meaning) for hit in every if hit.meaning not in NOT_DIAGNOSTIC)),
                )
                if len(shapes) < SHAPES_KEPT:
                    shapes[shape] = known
            recognised, hits = known
            if hits:
                number = lines.line_number(start)
                for entry_id, _ in hits:
                    found["entries"][entry_id] = found["entries"].get(entry_id, 0) + 1
                for meaning in dict.fromkeys(meaning for _, meaning in hits):
                    found["meanings"][meaning] = found["meanings"].get(meaning, 0) + 1
                    if meaning not in found["first"] and len(found["first"]) < MAX_FIRST:
                        found["first"][meaning] = (number, text[:500])
            elif not recognised and KNOWN_PREFIX.search(text):
                if len(found["unrecognised"]) < MAX_UNRECOGNISED:
                    found["unrecognised"].append((lines.line_number(start), text[:500]))
        part.parts[NAME] = found

    def merge(self, into: FileReading, later: FileReading) -> None:
        if NAME in later.parts:
            into.parts[NAME] = _merged(into.parts.get(NAME) or _empty(), later.parts[NAME])

    def shift(self, part: FileReading, by: int) -> None:
        found = part.parts.get(NAME)
        if found:
            found["first"] = {meaning: (line + by, text) for meaning, (line, text) in found["first"].items()}
            found["unrecognised"] = [(line + by, text) for line, text in found["unrecognised"]]

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        found = reading.parts.get(NAME)
        if not found:
            return
        labelled = {
            **found,
            "first": {m: (reading.label, line, text) for m, (line, text) in found["first"].items()},
            "unrecognised": [(reading.label, line, text) for line, text in found["unrecognised"]],
        }
        job.parts[NAME] = _merged(job.parts.get(NAME) or _empty(), labelled)
        if found["meanings"]:
            facts_merge(job.facts, {"printed": sorted(found["meanings"])})

    def finish(self, job: JobParts, messages: Catalogue | None) -> None:
        """The releases that can print every catalogued line of the job, per program."""
        found = job.parts.get(NAME)
        if messages is not None and found and found["entries"]:
            bands = printed_by(messages, found["entries"])
            if bands:
                job.facts["printed_by"] = bands


_shape_cache: dict[int, dict[str, tuple[bool, tuple[tuple[str, str], ...]]]] = {}


def _shapes(messages: Catalogue) -> dict[str, tuple[bool, tuple[tuple[str, str], ...]]]:
    """What each line shape (its digits masked) was found to be, per catalogue: kept for the process's life, so a
    job's files and windows match each message once."""
    if id(messages) not in _shape_cache:
        _shape_cache.clear()
        _shape_cache[id(messages)] = {}
    return _shape_cache[id(messages)]


def _merged(into: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    for key in ("meanings", "entries"):
        for name, count in later[key].items():
            into[key][name] = into[key].get(name, 0) + count
    for meaning, first in later["first"].items():
        if meaning not in into["first"] and len(into["first"]) < MAX_FIRST:
            into["first"][meaning] = first
    into["unrecognised"] = (into["unrecognised"] + later["unrecognised"])[:MAX_UNRECOGNISED]
    into["cut"] = into["cut"] or later["cut"]
    return into


def printed_by(messages: Catalogue, entries: dict[str, int]) -> list[str]:
    """Per program, the releases that can print every catalogued line the job shows ("nccl 2.18.6-2.19.4"); a
    program whose lines no single release prints together (nodes on different releases) is left out."""
    by_program: dict[str, list[str]] = {}
    for entry_id in entries:
        entry = messages.entries.get(entry_id)
        if entry is not None:
            by_program.setdefault(entry.program, []).append(entry_id)
    bands = []
    for program, ids in sorted(by_program.items()):
        band = messages.releases_printing(ids)
        if band is not None:
            bands.append(f"{program} {band[0]}" if band[0] == band[1] else f"{program} {band[0]}-{band[1]}")
    return bands


def diagnostic_messages(messages: Catalogue) -> Catalogue:
    """The catalogue less the entries that say nothing about a failure (kept for recognition only): what the reader
    matches, a fifth of the entries."""
    from diagnosis.catalogue import Catalogue

    return Catalogue([e for e in messages.entries.values() if e.meaning not in NOT_DIAGNOSTIC], messages.releases)


def content_messages(content_dir: Path, cache_dir: Path | None = None) -> Catalogue | None:
    """The diagnostic part of a content folder's message catalogue (content/catalogue/messages), None without one.
    `cache_dir` keeps the parsed YAML under its files' digest (parsing is a few seconds)."""
    from diagnosis.catalogue import Catalogue

    folder = Path(content_dir) / "catalogue" / "messages"
    if not any(folder.glob("*.yaml")):
        return None
    return diagnostic_messages(Catalogue.load(folder, cache_dir=cache_dir))


def messages_dump(messages: Catalogue) -> dict[str, Any]:
    """The catalogue as JSON-able data, for the rules snapshot the command line reads without parsing YAML."""
    return {"releases": messages.releases, "entries": [dataclasses.asdict(e) for e in messages.entries.values()]}


def messages_load(data: dict[str, Any] | None, database: bytes | None = None) -> Catalogue | None:
    """The catalogue messages_dump wrote; `database`: its literal database as Catalogue.database_bytes() gave it,
    which spares compiling it again (a third of a second at every start of the command line)."""
    from diagnosis.catalogue import Catalogue, Entry

    if not data:
        return None
    entries = [
        Entry(**{**e, "fields": tuple(tuple(f) for f in e["fields"]), "absent_in": tuple(e["absent_in"])})
        for e in data["entries"]
    ]
    return Catalogue(entries, data["releases"], database=database)


READER = CatalogueReader()
