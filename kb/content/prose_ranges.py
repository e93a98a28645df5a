"""Check the version statements of case prose that the names and message catalogues can decide (issue 32, item 3).

The prose extractor (kb/content/prose.py) finds every version statement; this module judges the few whose subject
is plain: one or more catalogued names in backticks (an environment variable or flag; `TORCH_FR_*` stands for every
catalogued name with that prefix) with the statement right after them or right before a verb of reading. Only these
shapes are judged, in one sentence, list item, table row or heading:

- names, then a release bound: "`X` from 2.8", "`X` and `Y` (2.3+)", "`X` (2.2-2.7)", "`X` up to 2.14", "`X` (≤ 2.13)",
  "`TORCH_FR_*` names since PyTorch 2.8", "`X` (2.15 only)". A lower bound V says that the harvested release of
  V's minor reads the name and no earlier harvested release does; an upper bound W says that the release of W's
  minor reads it and no later one does, or that the release after W is where the catalogue lists it as a
  deprecated alias of its new name (the statement then gives its life under that name);
- a release, then reading: "PyTorch 2.8+ reads `X`", "2.15 reads `X`": every harvested release in it reads the name;
- a deprecation: "deprecated since PyTorch 2.2 in favour of `NEW`": the catalogue lists an old name as an alias of
  NEW from the release of that minor;
- a printed wording in backticks, then a release bound, as for names: "`Bootstrap: Using` (2.24+)". The wording
  must be word for word in a template of the message catalogue (content/catalogue/messages) of the program the
  bound or else the sentence names (else of the only program that prints it); the releases are those that print
  any template containing it. The message catalogue is 2 MB of YAML (1-3 s to read), so content_check does not
  load it: tests/kb/content/test_prose_ranges.py (slow, as tests/kb/content/test_message_ranges.py) and `make claims` pass it.

The program is the one the statement names (PyTorch, NCCL, TE, DeepSpeed, accelerate); else the only catalogue
that has the name (and, when content/names.yaml lists the name, that says it reads it). Anything else is not
judged: a bound outside the harvested releases, a name two catalogues have, a statement about a default or a
behaviour, another program's release next to the name. Statements not judged rest on reading alone, and
`make claims` lists them. A bound is compared by minor ("2.8" is the harvested 2.8.x), and a patch release ("2.8.3")
is judged only when it is the one harvested.
Pure: no Django.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.content.errors import ContentError
from kb.content.names_catalogue import Catalogue, CatalogueEntry, load, release_key
from kb.content.prose import SOFTWARE, Statement, Unit, file_units, prose_files, statements
from kb.content.ranges import MESSAGE_PROGRAMS, NameOwners, describe, few_releases
from kb.content.yamllines import yaml_file_read

_SOFTWARES = {
    "pytorch": "pytorch",
    "torch": "pytorch",
    "nccl": "nccl",
    "te": "transformer-engine",
    "transformerengine": "transformer-engine",
    "transformer engine": "transformer-engine",
    "deepspeed": "deepspeed",
    "accelerate": "accelerate",
}
_SW = r"(?:(?P<{0}>PyTorch|torch|NCCL|TransformerEngine|Transformer Engine|TE|DeepSpeed|accelerate|Accelerate)\s+)?"
_V = r"v?(?P<{0}>\d+\.\d+(?:\.\d+)*)"
_END = r"(?![\d.]*\d|\+)"
_NAME = r"`[A-Za-z_-][A-Za-z0-9_.*-]*(?:=[^`\s]*)?`"
_GROUP = rf"(?P<group>{_NAME}(?:\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*/\s*){_NAME})*)(?:\s+(?:names|variables|flags))?"
_BOUND = (
    rf"(?:(?:from|since)\s+{_SW.format('sw')}{_V.format('lo')}(?:\s*(?:–|-|to|through)\s*{_V.format('hi')})?(?P<plus>\+)?"
    rf"|{_SW.format('sw2')}{_V.format('lo2')}\s*(?:–|-|to)\s*{_V.format('hi2')}"
    rf"|{_SW.format('sw3')}{_V.format('lo3')}\+"
    rf"|(?:≥|>=)\s*{_SW.format('sw4')}{_V.format('lo4')}"
    rf"|(?:up\s+to|through|≤|<=)\s*{_SW.format('sw5')}{_V.format('hi5')}"
    rf"|<\s*{_SW.format('sw6')}{_V.format('below')}"
    rf"|(?:in\s+)?{_SW.format('sw7')}{_V.format('only')}\s+only)"
)
_NAMES_THEN_BOUND = re.compile(rf"{_GROUP}\s*(?P<paren>\(\s*)?(?P<bound>{_BOUND}){_END}")
_RELEASE_READS = re.compile(
    rf"(?<![\w.+-]){_SW.format('sw')}(?P<bound>(?:(?:≥|>=)\s*)?{_V.format('lo')}(?:\s*(?:–|-|to)\s*{_V.format('hi')}|(?P<plus>\+))?)"
    rf"\s+(?:still\s+|also\s+|only\s+)?(?:reads|read|accepts)\s+{_GROUP}"
)
_DEPRECATED = re.compile(
    rf"deprecated\s+since\s+(?P<bound>{_SW.format('sw')}{_V.format('lo')}){_END}\s+(?:in\s+favou?r\s+of|for)\s+{_GROUP}"
)
_OTHER_SOFTWARE_BEFORE = re.compile(rf"{SOFTWARE}\s*$")
_WORDING_THEN_BOUND = re.compile(rf"`(?P<wording>[^`]{{8,}})`\s*(?P<paren>\(\s*)?(?P<bound>{_BOUND}){_END}")
_NAME_LIKE = re.compile(r"[A-Z][A-Z0-9_]*_[A-Z0-9_]*|--?[a-z][\w-]*")  # an environment variable or flag, catalogued or not
_PROGRAM_WORDS = re.compile(r"\b(PyTorch|NCCL|DeepSpeed)\b")


@dataclass(frozen=True)
class Verdict:
    """A judged statement: its unit, the offsets of its release phrase, and what the catalogue contradicts ([]: none)."""

    unit: Unit
    start: int
    end: int
    problems: tuple[str, ...]

    @property
    def line(self) -> int:
        return self.unit.line_at(self.start)

    def covers(self, statement: Statement) -> bool:
        return statement.unit == self.unit and statement.start < self.end and self.start < statement.end


def _minor(release: str) -> tuple[int, int]:
    parts = release_key(release).release
    return parts[0], parts[1] if len(parts) > 1 else 0


@dataclass(frozen=True)
class _Span:
    """What a catalogue says of one name or wording: the releases harvested, those that read (print) it, and the
    release from which a name is a deprecated alias ('' for none)."""

    releases: tuple[str, ...]
    read: frozenset[str]
    verb: str = "read"
    alias_from: str = ""

    def at(self, written: str) -> str | None:
        """The harvested release a written release ("2.8", "2.8.3") stands for; None when none does: outside the
        harvest, or a patch release other than the one harvested (a bound is judged by minor, or exactly)."""
        minor = _minor(written)
        harvested = next((r for r in self.releases if _minor(r) == minor), None)
        if harvested is None or (written.count(".") >= 2 and release_key(harvested) != release_key(written)):
            return None
        return harvested

    def says(self, releases: list[str], adverb: str) -> str:
        """ "2.2.2 already reads it", "2.5.1, 2.7.1 still print it"."""
        return f"{few_releases(releases)} {adverb} {self.verb}{'s' if len(releases) == 1 else ''} it"


def _lower(span: _Span, written: str) -> str | None:
    """What contradicts "from `written` on": '' when nothing, None when it cannot be judged."""
    at = span.at(written)
    if at is None:
        return None
    earlier = [r for r in span.releases if _minor(r) < _minor(at) and r in span.read]
    if earlier:
        return span.says(earlier, "already")
    return "" if at in span.read else f"{at} does not {span.verb} it"


def _upper(span: _Span, written: str) -> str | None:
    """What contradicts "up to `written`": '' when nothing, None when it cannot be judged."""
    at = span.at(written)
    if at is None:
        return None
    later = [r for r in span.releases if _minor(r) > _minor(at) and r in span.read]
    successor = next((r for r in span.releases if _minor(r) > _minor(at)), None)
    if later and not (span.alias_from and successor == span.alias_from):
        return span.says(later, "still")
    return "" if at in span.read else f"{at} does not {span.verb} it"


def _included(span: _Span, lo: str, hi: str | None) -> str | None:
    """What contradicts "every release from `lo` to `hi` (None: on) reads it"."""
    first, last = span.at(lo), span.at(hi) if hi is not None else span.releases[-1]
    if first is None or last is None:
        return None
    missing = [r for r in span.releases if _minor(first) <= _minor(r) <= _minor(last) and r not in span.read]
    if not missing:
        return ""
    return f"{few_releases(missing)} do{'es' if len(missing) == 1 else ''} not {span.verb} it"


def _name_span(catalogue: Catalogue, entry: CatalogueEntry) -> _Span:
    alias_from = entry.deprecated_from if entry.replaced_by else ""
    return _Span(catalogue.releases, frozenset(catalogue.read_in(entry)), "read", alias_from)


@dataclass(frozen=True)
class Wordings:
    """The message catalogue as this check reads it: per program, the releases harvested and, for each template,
    the releases that print it."""

    releases: dict[str, tuple[str, ...]]
    templates: dict[str, list[tuple[str, frozenset[str]]]]

    @classmethod
    def from_messages(cls, messages: Any) -> Wordings:
        """From a diagnosis.catalogue.Catalogue (all of it: a wording is printed whatever it means)."""
        from diagnosis.catalogue import printed_in

        releases = {p: tuple(r) for p, r in messages.releases.items()}
        templates: dict[str, list[tuple[str, frozenset[str]]]] = {}
        for entry in messages.entries.values():
            printing = frozenset(r for r in releases.get(entry.program, ()) if printed_in(entry, r))
            templates.setdefault(entry.program, []).append((entry.template, printing))
        return cls(releases, templates)


@dataclass(frozen=True)
class _Context:
    catalogues: dict[str, Catalogue]
    owners: NameOwners
    wordings: Wordings | None = None

    def is_name(self, token: str) -> bool:
        return _NAME_LIKE.fullmatch(token) is not None or any(self._entries(c, token) for c in self.catalogues.values())

    def resolve(self, group: str, software_word: str | None) -> tuple[Catalogue, list[CatalogueEntry]] | None:
        """The catalogue that judges the group's names and their entries; None when that is not plain."""
        tokens = [t.split("=", 1)[0] for t in re.findall(r"`([^`]+)`", group)]
        if software_word is not None:
            software = _SOFTWARES.get(software_word.lower())
            candidates = [software] if software in self.catalogues else []
        else:
            candidates = list(self.catalogues)
        found = {}
        for software in candidates:
            entries = [self._entries(self.catalogues[software], token) for token in tokens]
            if all(entries) and all(self._owned(token, software) for token in tokens):
                found[software] = [e for group_entries in entries for e in group_entries]
        if len(found) != 1:
            return None
        [(software, entries)] = found.items()
        return self.catalogues[software], entries

    @staticmethod
    def _entries(catalogue: Catalogue, token: str) -> list[CatalogueEntry]:
        if token.endswith("*"):
            prefix = token[:-1]
            if len(prefix) < 4 or "*" in prefix:
                return []
            return [e for (kind, name), e in sorted(catalogue.entries.items()) if name.startswith(prefix)]
        return [e for kind in ("env", "flag") if (e := catalogue.entries.get((kind, token)))]

    def _owned(self, token: str, software: str) -> bool:
        return token.endswith("*") or token not in self.owners.owners or self.owners.owned(token, software)


def _software_word(m: re.Match, *keys: str) -> str | None:
    return next((m.group(k) for k in keys if m.group(k)), None)


def _first(m: re.Match, *keys: str) -> str | None:
    return next((m.group(k) for k in keys if m.group(k)), None)


def _bounds(m: re.Match, releases: tuple[str, ...]) -> tuple[str | None, str | None] | None:
    """The lower and upper bound a matched release phrase writes (None: open); None when "< V" has no release before."""
    lo = _first(m, "lo", "lo2", "lo3", "lo4", "only")
    hi = _first(m, "hi", "hi2", "hi5", "only")
    if m.group("below"):
        earlier = [r for r in releases if _minor(r) < _minor(m.group("below"))]
        if not earlier:
            return None
        hi = earlier[-1]
    return lo, hi


def _judge_bounds(span: _Span, lo: str | None, hi: str | None) -> str | None:
    results = [f(span, bound) for f, bound in ((_lower, lo), (_upper, hi)) if bound is not None]
    if not results or any(r is None for r in results):
        return None
    return "; ".join(r for r in results if r)


def unit_verdicts(unit: Unit, context: _Context) -> list[Verdict]:
    """The judged statements of one unit."""
    verdicts = []
    text = unit.text
    for m in _NAMES_THEN_BOUND.finditer(text):
        word = _software_word(m, "sw", "sw2", "sw3", "sw4", "sw5", "sw6", "sw7")
        if (m.group("lo2") or m.group("lo3")) and not m.group("paren"):
            continue  # "`X` 2.2-2.7" without a parenthesis is not a plain statement about X
        resolved = context.resolve(m.group("group"), word)
        if resolved is None:
            continue
        catalogue, entries = resolved
        bounds = _bounds(m, catalogue.releases)
        if bounds is None:
            continue
        judged = [_judge_bounds(_name_span(catalogue, e), *bounds) for e in entries]
        if any(j is None for j in judged):
            continue
        verdicts.append(_verdict(unit, m.start("bound"), m.end("bound"), catalogue, entries, judged))
    for m in _RELEASE_READS.finditer(text):
        word = m.group("sw")
        if word is None and _OTHER_SOFTWARE_BEFORE.search(text[: m.start()]):
            continue  # "CUDA 12.1 reads": another program's release
        resolved = context.resolve(m.group("group"), word)
        if resolved is None:
            continue
        catalogue, entries = resolved
        lo = m.group("lo")
        hi = None if m.group("plus") or m.group("bound").startswith(("≥", ">=")) else m.group("hi") or lo
        judged = [_included(_name_span(catalogue, e), lo, hi) for e in entries]
        if any(j is None for j in judged):
            continue
        verdicts.append(_verdict(unit, m.start("bound"), m.end("bound"), catalogue, entries, judged))
    for m in _DEPRECATED.finditer(text):
        resolved = context.resolve(m.group("group"), m.group("sw"))
        if resolved is None:
            continue
        catalogue, entries = resolved
        if _name_span(catalogue, entries[0]).at(m.group("lo")) is None:
            continue
        problems = []
        for new in entries:
            old = [e for e in catalogue.entries.values() if e.replaced_by == new.name]
            problems += [
                f"{e.name} is listed as a deprecated alias of {new.name} from {e.deprecated_from} ({e.deprecated_file})"
                for e in old
                if _minor(e.deprecated_from) != _minor(m.group("lo"))
            ]
            if not old and not m.group("group").rstrip("`").endswith("*"):
                problems.append(f"no harvested {catalogue.program} release lists an older name as an alias of {new.name}")
        message = tuple(f"'{m.group('bound')}' for {m.group('group')}: {p}" for p in problems)
        verdicts.append(Verdict(unit, m.start("bound"), m.end("bound"), message))
    verdicts += _wording_verdicts(unit, context)
    return verdicts


def _verdict(unit: Unit, start: int, end: int, catalogue: Catalogue, entries: list[CatalogueEntry], judged: list[str]) -> Verdict:
    phrase = unit.text[start:end]
    problems = tuple(
        f"{entry.name} '{phrase}': {why}; the {catalogue.program} names catalogue says read in {describe(catalogue, entry)}"
        for entry, why in zip(entries, judged)
        if why
    )
    return Verdict(unit, start, end, problems)


def _wording_verdicts(unit: Unit, context: _Context) -> list[Verdict]:
    """A catalogued wording in backticks, then a release bound: "`Bootstrap: Using` (2.24+)". The program is the
    one the bound names, else the only one the sentence names (PyTorch, NCCL, DeepSpeed), else the only one that
    prints the wording; the releases are those that print a template containing it, word for word."""
    if context.wordings is None:
        return []
    out = []
    named = {MESSAGE_PROGRAMS[_SOFTWARES[w.lower()]] for w in _PROGRAM_WORDS.findall(re.sub(r"`[^`]*`", "", unit.text))}
    for m in _WORDING_THEN_BOUND.finditer(unit.text):
        wording = m.group("wording").strip()
        if context.is_name(wording) or ((m.group("lo2") or m.group("lo3")) and not m.group("paren")):
            continue
        word = _software_word(m, "sw", "sw2", "sw3", "sw4", "sw5", "sw6", "sw7")
        if word is not None:
            programs = {MESSAGE_PROGRAMS.get(_SOFTWARES.get(word.lower(), ""), "")}
        elif named:
            programs = named
        else:
            programs = {p for p, ts in context.wordings.templates.items() if any(wording in t for t, _ in ts)}
        if len(programs) != 1:
            continue
        [program] = programs
        printing = [r for t, r in context.wordings.templates.get(program, []) if wording in t]
        releases = context.wordings.releases.get(program, ())
        if not printing or not releases:
            continue
        span = _Span(releases, frozenset().union(*printing), "print")
        bounds = _bounds(m, releases)
        why = _judge_bounds(span, *bounds) if bounds else None
        if why is None:
            continue
        said = [r for r in releases if r in span.read]
        where = f"{said[0]}–{said[-1]}" if said else "no harvested release"
        phrase = m.group("bound")
        problems = (f"`{wording}` '{phrase}': {why}; the {program} message catalogue says printed by {where}",) if why else ()
        out.append(Verdict(unit, m.start("bound"), m.end("bound"), problems))
    return out


def verdicts(
    units: list[Unit], catalogues: dict[str, Catalogue], owners: NameOwners, wordings: Wordings | None = None
) -> list[Verdict]:
    """Every judged statement in `units`; wordings only when the message catalogue is given."""
    context = _Context(catalogues, owners, wordings)
    return [v for unit in units for v in unit_verdicts(unit, context)]


def _catalogues(directory: Path) -> dict[str, Catalogue]:
    """The names catalogues, parsed again only when a file changed (each content load checks the prose)."""
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(directory.glob("*.yaml")))
    return _catalogues_read(directory, stamp)


@functools.lru_cache(maxsize=4)
def _catalogues_read(directory: Path, stamp: tuple) -> dict[str, Catalogue]:
    return load(directory)


def _content_units(content_dir: Path, problems: list[ContentError] | None) -> list[Unit]:
    base = content_dir.parent
    return [u for path in prose_files(content_dir) for u in file_units(path, str(path.relative_to(base)), problems)]


def _content_judged(units: list[Unit], content_dir: Path, wordings: Wordings | None) -> list[Verdict]:
    catalogues = _catalogues(content_dir / "catalogue" / "names")
    names = content_dir / "names.yaml"
    owners = NameOwners.from_names_file(yaml_file_read(names, "names.yaml")) if names.is_file() else NameOwners({})
    return verdicts(units, catalogues, owners, wordings)


def content_verdicts(
    content_dir: Path, problems: list[ContentError] | None = None, wordings: Wordings | None = None
) -> list[Verdict]:
    """Every judged prose statement in content/, against content/catalogue/names and content/names.yaml (and the
    message catalogue when `wordings` is given)."""
    return _content_judged(_content_units(content_dir, problems), content_dir, wordings)


def unjudged_statements(content_dir: Path, wordings: Wordings | None = None) -> list[Statement]:
    """The prose statements of content/ that no catalogue judges: they rest on reading alone."""
    units = _content_units(content_dir, None)
    judged = _content_judged(units, content_dir, wordings)
    return [s for s in statements(units) if not any(v.covers(s) for v in judged)]


def prose_range_problems(content_dir: Path, wordings: Wordings | None = None) -> list[ContentError]:
    """Every prose statement the names catalogue (and, given `wordings`, the message catalogue) contradicts, and
    every malformed source comment, as file:line: message."""
    errors: list[ContentError] = []
    for verdict in content_verdicts(content_dir, errors, wordings):
        errors += [ContentError(verdict.unit.file, verdict.line, f"prose: {p}") for p in verdict.problems]
    return sorted(set(errors))
