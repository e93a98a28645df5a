"""The literals every match of a regex must contain, and the Hyperscan database that looks for all of a rule set's
literals in one pass (compiled once, or loaded from a build).

The optional `hyperscan` import is made here only: the pass (presence.py) reads it through this module at call time,
so a process without Hyperscan, or a test that takes it away, switches every part off at once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Iterable

try:  # optional accelerator: one pass over the text tells which literals occur at all
    import hyperscan
except ImportError:  # pragma: no cover - exercised by forcing the fallback in tests
    hyperscan = None

try:
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

MIN_LITERAL = 3


def required_literals(pattern: str, ignorecase: bool = False) -> tuple[str, ...]:
    """Literals such that every match contains at least one of them; () when none can be derived."""
    groups = required_literal_groups(pattern, ignorecase)
    return groups[0] if groups else ()


LiteralGroups = tuple[tuple[str, ...], ...]
# Derived literal groups by (pattern, ignorecase): content validation and the rules compile ask for the same
# patterns, and deriving parses each one.
_GROUPS: dict[tuple[str, bool], LiteralGroups] = {}


def required_literal_groups(pattern: str, ignorecase: bool = False) -> LiteralGroups:
    """Every any-of literal set a match must satisfy, best (longest) first. A line can only match when
    each group has a literal in it, so a pattern whose groups are not all present in a log is skipped."""
    key = (pattern, ignorecase)
    if key not in _GROUPS:
        _GROUPS[key] = _literal_groups_derive(pattern, ignorecase)
    return _GROUPS[key]


def literal_groups_dump() -> bytes | None:
    """Every literal group derived so far, as JSON headed by the digest of what derived them; None when that cannot
    be told. Deriving parses each pattern (20 ms for the content's, a tenth of the command line's start-up)."""
    deriver = _deriver_digest()
    if deriver is None:
        return None
    groups = [[pattern, ignorecase, [list(group) for group in found]] for (pattern, ignorecase), found in _GROUPS.items()]
    return json.dumps({"deriver": deriver, "groups": groups}).encode("utf-8")


def literal_groups_load(dumped: bytes) -> bool:
    """Take the groups `literal_groups_dump` wrote, if this module and this Python's regex parser derived them."""
    try:
        body = json.loads(dumped)
        if not isinstance(body, dict) or body.get("deriver") is None or body["deriver"] != _deriver_digest():
            return False
        for pattern, ignorecase, found in body["groups"]:
            _GROUPS.setdefault((pattern, ignorecase), tuple(tuple(group) for group in found))
    except (ValueError, TypeError, KeyError):  # a damaged or foreign file: derived afresh
        return False
    return True


@functools.lru_cache(maxsize=1)
def _deriver_digest() -> str | None:
    try:
        source = Path(__file__).read_bytes()
    except OSError:
        return None
    return hashlib.sha256(source + sys.version.encode()).hexdigest()


def _literal_groups_derive(pattern: str, ignorecase: bool) -> LiteralGroups:
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ()
    groups = _sequence_literals(list(parsed), all_groups=True) or []
    cleaned = [tuple(sorted({lit.lower() for lit in g} if ignorecase else set(g))) for g in groups]
    return tuple(sorted(set(cleaned), key=lambda g: (-min(len(x) for x in g), len(g), g)))


def _sequence_literals(items: list, all_groups: bool = False):
    """Best any-of literal set for a sequence: the longest plain run, or a required group's set
    (with all_groups, every usable set of the sequence)."""
    candidates: list[list[str]] = []
    run: list[str] = []
    for op, arg in items:
        if op == sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            candidates.append(["".join(run)])
            joined = _leading_literals([(op, arg)])
            if joined:  # "] via " then (SHM/|direct ...): "] via SHM/" or "] via direct ..." is far rarer
                candidates.append(["".join(run) + lead for lead in joined])
            run = []
        if op == sre_parse.SUBPATTERN:
            inner = _sequence_literals(list(arg[-1]))
            if inner:
                candidates.append(inner)
        elif op == sre_parse.BRANCH:
            branches = [_sequence_literals(list(branch)) for branch in arg[1]]
            if all(branches):
                candidates.append([lit for branch in branches for lit in branch])
        elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT) and arg[0] >= 1:
            inner = _sequence_literals(list(arg[2]))
            if inner:
                candidates.append(inner)
    if run:
        candidates.append(["".join(run)])
    usable = [c for c in candidates if c and min(len(x) for x in c) >= MIN_LITERAL]
    if all_groups:
        return usable
    if not usable:
        return None
    return max(usable, key=lambda c: (min(len(x) for x in c), -len(c)))


def _leading_literals(items: list) -> list[str] | None:
    """The literal each alternative of a group or branch starts with, when every one starts with one."""
    if not items:
        return None
    op, arg = items[0]
    if op == sre_parse.SUBPATTERN:
        return _leading_literals(list(arg[-1]))
    if op == sre_parse.BRANCH:
        leads = [_leading_run(list(branch)) for branch in arg[1]]
        return leads if all(leads) else None
    return None


def _leading_run(items: list) -> str:
    chars = []
    for op, arg in items:
        if op != sre_parse.LITERAL:
            break
        chars.append(chr(arg))
    return "".join(chars)


Literal = tuple[str, bool]  # (text, ignorecase)


# A database compiled by an earlier process for one set of literals (literal_database_load): at most one.
_LOADED: dict[frozenset[Literal], tuple] = {}


def literal_database(literals: frozenset[Literal], prefixes: frozenset[tuple[Literal, str]] = frozenset()):
    """A Hyperscan database over every literal (compiled once per content revision, or loaded), or None.
    `prefixes`: literals looked for by a prefix of theirs (see ScanPlan)."""
    if hyperscan is None or not literals:
        return None
    return (None if prefixes else _LOADED.get(literals)) or _literal_database_compile(literals, prefixes)


def literal_database_dump(literals: Iterable[Literal]) -> bytes | None:
    """The compiled literal pass as bytes, headed by the digest of the literals it was compiled from; None
    without Hyperscan."""
    compiled = literal_database(frozenset(literals))
    return None if compiled is None else _literals_digest(literals) + hyperscan.dumpb(compiled[0])


def literal_database_load(literals: Iterable[Literal], dumped: bytes) -> bool:
    """Use a database `literal_database_dump` wrote, if it was compiled from these literals (neither the content
    nor the readers' own literals changed since) by a Hyperscan that can run it here. Loading takes well under a
    millisecond; compiling takes 30-50 ms, a sixth of the command line's start-up."""
    literals = frozenset(literals)
    digest = _literals_digest(literals)
    if hyperscan is None or not literals or dumped[: len(digest)] != digest:
        return False
    try:
        database = hyperscan.loadb(dumped[len(digest) :], hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)  # a loaded database comes without one
    except Exception:  # another release's or another CPU's database: compiled afresh instead
        return False
    _LOADED.clear()
    _LOADED[literals] = _compiled(database, sorted(literals))
    return True


def _literals_digest(literals: Iterable[Literal]) -> bytes:
    listed = "\n".join(f"{int(ignorecase)}{text}" for text, ignorecase in sorted(literals))
    return hashlib.sha256(listed.encode("utf-8")).digest()


@functools.lru_cache(maxsize=8)
def _literal_database_compile(literals: frozenset[Literal], prefixes: frozenset[tuple[Literal, str]] = frozenset()):
    ordered = sorted(literals)
    scanned = dict(prefixes)
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=[re.escape(scanned.get(literal, literal[0])).encode("utf-8") for literal in ordered],
            ids=list(range(len(ordered))),
            elements=len(ordered),
            flags=[
                hyperscan.HS_FLAG_SINGLEMATCH | (hyperscan.HS_FLAG_CASELESS if ignorecase else 0) for _, ignorecase in ordered
            ],
        )
    except Exception:  # an engine that cannot compile is an optimisation lost, not an error
        return None
    return _compiled(database, ordered)


def _compiled(database, ordered: list[Literal]) -> tuple:
    """A database with its literals in id order and the look-behind a chunk needs (the longest literal less a byte)."""
    return database, ordered, max(len(text.encode("utf-8")) for text, _ in ordered) - 1
