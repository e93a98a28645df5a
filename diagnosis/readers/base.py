"""The Reader protocol: what every reader of a log format does, so reading, merging and scoring loop over `READERS`
(diagnosis/readers/__init__.py) instead of calling each reader by name.

A reader looks at one window of a file at a time (`read`), adds what a later stretch of the same file gave to what
the earlier ones gave (`merge`), moves its line numbers when a stretch read on its own is joined after others
(`shift`), and adds a whole file's part to the job's (`job_add`). What it keeps lives in the FileReading: the
readers that came first have fields of their own; a new reader keeps its part in `parts[name]` and needs no change
anywhere else (see diagnosis/readers/README.md for how to add one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # types only: the readers import this module, never the other way round
    from diagnosis.readers.events import Failure
    from diagnosis.readers.facts import RankState
    from diagnosis.readers.stacks import Stack
    from diagnosis.readers.timeouts import TimeoutSeen
    from diagnosis.rules import Rules
    from diagnosis.scan.scanner import TextScanner
    from diagnosis.text import LineLocator


@dataclass
class Evidence:
    line: int
    text: str
    signal: str
    source: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    span: tuple[int, int] = (0, 0)  # the matched part, as offsets into `text`


@dataclass
class Harmless:
    line: int
    text: str
    id: str
    title: str
    why: str
    source: str | None = None


@dataclass
class FileReading:
    """What one file (or one stretch of it) yields."""

    per_case: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug -> {"signals": {...}, "evidence": [...]}
    facts: dict[str, Any] = field(default_factory=dict)
    # What the set and max fact rules captured, in line order (facts.rule_values_read); job_diagnose makes them facts.
    rule_values: dict[int, list[str]] = field(default_factory=dict)
    srun_labelled: bool | None = None  # told by the file's start (facts.srun_labelled), for every window of it
    ranks: dict[int, RankState] = field(default_factory=dict)
    stacks: list[Stack] = field(default_factory=list)
    timeouts: list[TimeoutSeen] = field(default_factory=list)
    dump_groups: list[dict[str, Any]] = field(default_factory=list)  # ranks placed by the debug server's dumps
    failure: Failure | None = None
    harmless: list[Harmless] = field(default_factory=list)
    parts: dict[str, Any] = field(default_factory=dict)  # reader name -> what a reader without a field of its own kept
    repairs: list[str] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    partial: bool = False
    label: str | None = None  # the file's name when the job has several files


@dataclass
class Window:
    """One window of a file as every reader sees it: its text (through the scanner, which knows which literals occur),
    its line numbers, and where its own part lies. Only what starts in [start, limit) counts; the look-behind and
    look-ahead around it are context."""

    scanner: TextScanner
    lines: LineLocator
    rules: Rules
    label: str | None
    start: int
    limit: int
    whole: bool  # the window is the whole file (a paste, a small file)
    file: FileReading  # what the file's earlier windows gave (read-only to readers)
    deadline: float | None = None
    skip: set[int] = field(default_factory=set)  # starts of lines only a known-harmless message explains


@dataclass
class JobParts:
    """The readings of a job's files added together, before the job model (verdict, scores) is made of them."""

    per_case: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    ranks: dict[int, RankState] = field(default_factory=dict)
    stacks: list[tuple[Stack, str | None]] = field(default_factory=list)  # with the file each came from
    dump_groups: list[dict[str, Any]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    harmless: list[Harmless] = field(default_factory=list)
    limits: list[TimeoutSeen] = field(default_factory=list)
    parts: dict[str, Any] = field(default_factory=dict)


class Reader(Protocol):
    """A log format's reader. `literals`: the words its patterns need, looked for in the one literal pass."""

    name: str
    literals: tuple[str, ...]

    def read(self, window: Window, part: FileReading) -> None:
        """Read the window's own part into `part` (a fresh reading of this window alone)."""

    def merge(self, into: FileReading, later: FileReading) -> None:
        """Add what a later stretch of the same file gave."""

    def shift(self, part: FileReading, by: int) -> None:
        """Move every line number the reader kept `by` lines down."""

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        """Add one whole file's reading to the job's."""


# A reader may also define `finish(job, messages)`: run once after every file was added, with the message catalogue
# (the catalogue reader turns the lines it matched into the releases that print them all).
