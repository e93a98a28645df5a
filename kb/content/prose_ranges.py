"""Check the version statements of case prose that the names catalogue can decide (issue 32, item 3).

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
  NEW from the release of that minor.

The program is the one the statement names (PyTorch, NCCL, TE, DeepSpeed, accelerate); else the only catalogue
that has the name (and, when content/names.yaml lists the name, that says it reads it). Anything else is not
judged: a bound outside the harvested releases, a name two catalogues have, a statement about a default or a
behaviour, another program's release next to the name. Statements not judged rest on reading alone, and
`make claims` lists them. Every catalogue harvests one release per minor, so bounds are compared by minor.
Pure: no Django.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from kb.content.errors import ContentError
from kb.content.names_catalogue import Catalogue, CatalogueEntry, load, release_key
from kb.content.prose import SOFTWARE, Statement, Unit, file_units, prose_files, statements
from kb.content.ranges import NameOwners, describe, few_releases
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
_V = r"v?(?P<{0}>\d+\.\d+)(?:\.\d+)*"
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


def _minor_of(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _at(catalogue: Catalogue, minor: tuple[int, int]) -> str | None:
    """The harvested release of that minor; None outside the harvested span (no judgement there)."""
    return next((r for r in catalogue.releases if _minor(r) == minor), None)


def _lower(catalogue: Catalogue, entry: CatalogueEntry, minor: tuple[int, int]) -> str | None:
    """What contradicts "read from `minor` on": '' when nothing, None when it cannot be judged."""
    at = _at(catalogue, minor)
    if at is None:
        return None
    read = set(catalogue.read_in(entry))
    earlier = [r for r in catalogue.releases if _minor(r) < minor and r in read]
    if earlier:
        return f"{few_releases(earlier)} already read{'s' if len(earlier) == 1 else ''} it"
    return "" if at in read else f"{at} does not read it"


def _upper(catalogue: Catalogue, entry: CatalogueEntry, minor: tuple[int, int]) -> str | None:
    """What contradicts "read up to `minor`": '' when nothing, None when it cannot be judged."""
    at = _at(catalogue, minor)
    if at is None:
        return None
    read = set(catalogue.read_in(entry))
    later = [r for r in catalogue.releases if _minor(r) > minor and r in read]
    successor = next((r for r in catalogue.releases if _minor(r) > minor), None)
    if later and not (entry.replaced_by and successor == entry.deprecated_from):
        return f"{few_releases(later)} still read{'s' if len(later) == 1 else ''} it"
    return "" if at in read else f"{at} does not read it"


def _included(catalogue: Catalogue, entry: CatalogueEntry, lo: tuple[int, int], hi: tuple[int, int] | None) -> str | None:
    """What contradicts "every release from `lo` to `hi` (None: on) reads it"."""
    if _at(catalogue, lo) is None or (hi is not None and _at(catalogue, hi) is None):
        return None
    read = set(catalogue.read_in(entry))
    missing = [r for r in catalogue.releases if lo <= _minor(r) and (hi is None or _minor(r) <= hi) and r not in read]
    return f"{few_releases(missing)} do{'es' if len(missing) == 1 else ''} not read it" if missing else ""


def _previous_minor(catalogue: Catalogue, minor: tuple[int, int]) -> tuple[int, int] | None:
    earlier = [_minor(r) for r in catalogue.releases if _minor(r) < minor]
    return earlier[-1] if earlier else None


@dataclass(frozen=True)
class _Context:
    catalogues: dict[str, Catalogue]
    owners: NameOwners

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


def _number(m: re.Match, key: str) -> tuple[int, int] | None:
    return _minor_of(m.group(key)) if m.group(key) else None


def unit_verdicts(unit: Unit, context: _Context) -> list[Verdict]:
    """The judged statements of one unit."""
    verdicts = []
    text = unit.text
    for m in _NAMES_THEN_BOUND.finditer(text):
        word = _software_word(m, "sw", "sw2", "sw3", "sw4", "sw5", "sw6", "sw7")
        bare_range = m.group("lo2") or m.group("lo3")
        if bare_range and not m.group("paren"):
            continue  # "`X` 2.2-2.7" without a parenthesis is not a plain statement about X
        resolved = context.resolve(m.group("group"), word)
        if resolved is None:
            continue
        catalogue, entries = resolved
        lo = _number(m, "lo") or _number(m, "lo2") or _number(m, "lo3") or _number(m, "lo4") or _number(m, "only")
        hi = _number(m, "hi") or _number(m, "hi2") or _number(m, "hi5") or _number(m, "only")
        if m.group("below"):
            hi = _previous_minor(catalogue, _minor_of(m.group("below")))
            if hi is None:
                continue
        judged = [_judge_bounds(catalogue, e, lo, hi) for e in entries]
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
        lo = _minor_of(m.group("lo"))
        hi = None if m.group("plus") or m.group("bound").lstrip().startswith(("≥", ">=")) else _number(m, "hi") or lo
        judged = [_included(catalogue, e, lo, hi) for e in entries]
        if any(j is None for j in judged):
            continue
        verdicts.append(_verdict(unit, m.start("bound"), m.end("bound"), catalogue, entries, judged))
    for m in _DEPRECATED.finditer(text):
        resolved = context.resolve(m.group("group"), m.group("sw"))
        if resolved is None:
            continue
        catalogue, entries = resolved
        minor = _minor_of(m.group("lo"))
        if _at(catalogue, minor) is None:
            continue
        problems = []
        for new in entries:
            old = [e for e in catalogue.entries.values() if e.replaced_by == new.name]
            problems += [
                f"{e.name} is listed as a deprecated alias of {new.name} from {e.deprecated_from} ({e.deprecated_file})"
                for e in old
                if _minor(e.deprecated_from) != minor
            ]
            if not old and not m.group("group").rstrip("`").endswith("*"):
                problems.append(f"no harvested {catalogue.program} release lists an older name as an alias of {new.name}")
        message = tuple(f"'{m.group('bound')}' for {m.group('group')}: {p}" for p in problems)
        verdicts.append(Verdict(unit, m.start("bound"), m.end("bound"), message))
    return verdicts


def _judge_bounds(
    catalogue: Catalogue, entry: CatalogueEntry, lo: tuple[int, int] | None, hi: tuple[int, int] | None
) -> str | None:
    results = [f(catalogue, entry, bound) for f, bound in ((_lower, lo), (_upper, hi)) if bound is not None]
    if not results or any(r is None for r in results):
        return None
    return "; ".join(r for r in results if r)


def _verdict(unit: Unit, start: int, end: int, catalogue: Catalogue, entries: list[CatalogueEntry], judged: list[str]) -> Verdict:
    phrase = unit.text[start:end]
    problems = tuple(
        f"{entry.name} '{phrase}': {why}; the {catalogue.program} names catalogue says read in {describe(catalogue, entry)}"
        for entry, why in zip(entries, judged)
        if why
    )
    return Verdict(unit, start, end, problems)


def verdicts(units: list[Unit], catalogues: dict[str, Catalogue], owners: NameOwners) -> list[Verdict]:
    """Every judged statement in `units`."""
    context = _Context(catalogues, owners)
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


def _content_judged(units: list[Unit], content_dir: Path) -> list[Verdict]:
    catalogues = _catalogues(content_dir / "catalogue" / "names")
    if not catalogues:
        return []
    names = content_dir / "names.yaml"
    owners = NameOwners.from_names_file(yaml_file_read(names, "names.yaml")) if names.is_file() else NameOwners({})
    return verdicts(units, catalogues, owners)


def content_verdicts(content_dir: Path, problems: list[ContentError] | None = None) -> list[Verdict]:
    """Every judged prose statement in content/, against content/catalogue/names and content/names.yaml."""
    return _content_judged(_content_units(content_dir, problems), content_dir)


def unjudged_statements(content_dir: Path) -> list[Statement]:
    """The prose statements of content/ that no catalogue judges: they rest on reading alone."""
    units = _content_units(content_dir, None)
    judged = _content_judged(units, content_dir)
    return [s for s in statements(units) if not any(v.covers(s) for v in judged)]


def prose_range_problems(content_dir: Path) -> list[ContentError]:
    """Every prose statement the catalogue contradicts, and every malformed source comment, as file:line: message."""
    errors: list[ContentError] = []
    for verdict in content_verdicts(content_dir, errors):
        errors += [ContentError(verdict.unit.file, verdict.line, f"prose: {p}") for p in verdict.problems]
    return sorted(set(errors))
