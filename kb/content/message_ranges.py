"""Release ranges of printed wordings, checked against the message catalogue (content/catalogue/messages, extracted
from the programs' sources release by release): a signature's or a known-harmless entry's `versions` for PyTorch,
NCCL or DeepSpeed must agree with the releases that print the catalogued templates its examples are lines of.

The templates a signature speaks for are those its pattern finds in (the line each template prints, its fields filled
with typical values: diagnosis.catalogue.example_line). Agreement, over the releases the catalogue harvested for
that program: every release that prints one of those templates is in the range, and every release in the range
prints one of them. A pattern that finds no catalogued template (a driver's message, a pattern for one specific
value) is not checked here; its claim rests on its `source:`, which `make claims` lists. Pure: the caller passes the
catalogue.
"""

from __future__ import annotations

from pathlib import Path

import re

from diagnosis.catalogue import Catalogue, example_line, printed_in
from diagnosis.scan.literals import required_literal_groups
from kb.content.frontmatter import front_matter_split
from kb.content.ranges import MESSAGE_PROGRAMS, Problem, contains, few_releases, spec_of
from kb.content.yamllines import YamlDocument, yaml_file_read


def message_range_problems(content_dir: Path, messages: Catalogue) -> list[Problem]:
    """Every disagreement between a printed wording's range in content and the catalogue, as file:line: message."""
    base = content_dir.parent
    problems: list[Problem] = []
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        doc = yaml_file_read(path, str(path.relative_to(base)))
        problems += _item_problems(doc.path, doc, (), doc.data, messages)
    for path in sorted((content_dir / "cases").glob("*.md")):
        fm = front_matter_split(path.read_text(encoding="utf-8"))
        fm.path = str(path.relative_to(base))
        for index, signature in enumerate(fm.data.get("signatures") or []):
            problems += _item_problems(fm.path, fm, ("signatures", index), signature, messages)
    return problems


def _item_problems(shown: str, doc: YamlDocument, where: tuple, item: dict, messages: Catalogue) -> list[Problem]:
    problems = []
    try:
        flags = re.IGNORECASE if "ignorecase" in (item.get("flags") or []) else 0
        pattern = re.compile(str(item.get("pattern", "")), flags)
    except re.error:
        return []  # the content validator reports it
    for software, text in (item.get("versions") or {}).items():
        program = MESSAGE_PROGRAMS.get(str(software))
        spec = spec_of(str(text)) if program else None
        if spec is None:
            continue
        entries = {e.id for e in messages.entries.values() if e.program == program and pattern.search(_line(e))}
        releases = messages.releases.get(program, [])
        if not entries or not releases:
            continue
        printing = [r for r in releases if any(printed_in(messages.entries[entry_id], r) for entry_id in entries)]
        excluded = [r for r in releases if r in printing and not contains(spec, r)]
        # A release in the range may print an alternative of the pattern that no template spells out (NCCL's
        # SYSCHECK prints "Call to %s failed": the call's name is a value): then "includes" cannot be told.
        every_alternative = _alternatives_catalogued(pattern.pattern, flags, [messages.entries[i] for i in entries])
        included = [r for r in releases if r not in printing and contains(spec, r)] if every_alternative else []
        if not excluded and not included and _lower_bound_unseen(spec, printing, releases) and not item.get("source"):
            problems.append(
                Problem(
                    shown,
                    doc.line_of(where + ("versions", software)),
                    f"{item.get('id', 'entry')} versions {{{software}: '{text}'}} has a lower bound, but the first "
                    f"release the catalogue harvested ({releases[0]}) already prints the wording its pattern finds "
                    f"({', '.join(sorted(entries)[:3])}): the catalogue cannot tell where it starts. Read an older "
                    "release and cite it (`source:`), or drop the lower bound",
                )
            )
        if excluded or included:
            why = []
            if excluded:
                why.append(f"excludes {few_releases(excluded)}, which print{'s' if len(excluded) == 1 else ''} it")
            if included:
                why.append(f"includes {few_releases(included)}, which do{'es' if len(included) == 1 else ''} not print it")
            span = f"{printing[0]}–{printing[-1]}" if printing else "no harvested release"
            problems.append(
                Problem(
                    shown,
                    doc.line_of(where + ("versions", software)),
                    f"{item.get('id', 'entry')} versions {{{software}: '{text}'}} but the catalogue says the wording its "
                    f"pattern finds is printed by {span} ({', '.join(sorted(entries)[:3])}): '{text}' " + "; ".join(why),
                )
            )
    return problems


def _lower_bound_unseen(spec, printing: list[str], releases: list[str]) -> bool:
    """A `>=`/`>` bound on a wording the catalogue's first harvested release already prints: where it really starts
    lies before what the catalogue read, so agreeing with the catalogue proves nothing about it (two of the third
    audit's wrong ranges were a harvest's first release taken for the message's)."""
    return bool(printing) and printing[0] == releases[0] and any(s.operator in (">=", ">") for s in spec)


def _alternatives_catalogued(pattern: str, flags: int, entries: list) -> bool:
    """Whether each alternative of the pattern (its required literals, one group at a time) is spelled out in the
    literal text of one of the templates it finds."""
    texts = [e.template.casefold() if flags else e.template for e in entries]
    groups = required_literal_groups(pattern, bool(flags))
    return all(any(literal in text for text in texts) for group in groups for literal in group)


_lines: dict[tuple[str, str], str] = {}


def _line(entry) -> str:
    key = (entry.id, entry.template)
    if key not in _lines:
        _lines[key] = example_line(entry)
    return _lines[key]
