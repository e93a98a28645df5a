"""Script parts: the reusable pieces a leaf's fix script is made of (content/scripts/*.yaml).

A part holds read-only checks, environment settings, Open MPI interface pinning, apply-time
actions and printed instructions, each optionally limited to some answers (`only:`). Values from
the user enter only through `@role@` placeholders, which the composer fills shell-quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from troubleshooter.roles import ROLE_VALUES
from troubleshooter.variables import VARIABLES
from kb.content.yamllines import Problem, YamlDocument, YamlLineError, YamlPath, yaml_file_read

PART_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,49}")
TOOL_RE = re.compile(r"[A-Za-z0-9_.+-]{1,40}")
PLACEHOLDER_RE = re.compile(r"@([a-z][a-z0-9_]*)(\.seconds)?@")

# The keys a part accepts, and the fields of each entry of its lists (each entry may also carry `only`).
# content/trees/FORMAT.md documents them; tests/test_format_docs.py holds the two together.
PART_KEYS = frozenset({"title", "checks", "env", "mpi_interface", "actions", "instructions"})
ENTRY_FIELDS: dict[str, frozenset[str]] = {
    "checks": frozenset({"tool", "title", "run"}),
    "env": frozenset({"name", "value", "why"}),
    "actions": frozenset({"title", "run"}),
    "instructions": frozenset({"text"}),
}

Only = dict[str, frozenset[str]]


@dataclass(frozen=True)
class Check:
    tool: str  # the command whose absence is reported instead of failing
    title: str
    run: str
    only: Only = field(default_factory=dict)


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    why: str
    only: Only = field(default_factory=dict)


@dataclass(frozen=True)
class Action:
    title: str
    run: str
    only: Only = field(default_factory=dict)


@dataclass(frozen=True)
class Instruction:
    text: str
    only: Only = field(default_factory=dict)


@dataclass(frozen=True)
class Part:
    id: str
    title: str
    checks: tuple[Check, ...] = ()
    env: tuple[Setting, ...] = ()
    mpi_interface: str | None = None  # role whose value pins Open MPI's TCP channels (mpirun only)
    actions: tuple[Action, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    path: str = ""
    line: int = 1

    def roles(self) -> set[str]:
        """Roles this part reads: placeholders, `only` conditions, version-renamed variables."""
        needed: set[str] = set()
        texts: list[str] = []
        for item in (*self.checks, *self.env, *self.actions, *self.instructions):
            needed |= set(item.only)
        texts += [c.run for c in self.checks] + [s.value for s in self.env] + [a.run for a in self.actions]
        texts += [i.text for i in self.instructions]
        for text in texts:
            needed |= {m.group(1) for m in PLACEHOLDER_RE.finditer(text)}
        if any(VARIABLES[s.name].before_2_2 for s in self.env if s.name in VARIABLES):
            needed.add("torch")
        if self.mpi_interface:
            needed.add(self.mpi_interface)
        return needed

    def seconds_roles(self) -> set[str]:
        """Roles used as `@role.seconds@`: they must be answered in minutes."""
        texts = [c.run for c in self.checks] + [s.value for s in self.env] + [a.run for a in self.actions]
        texts += [i.text for i in self.instructions]
        return {m.group(1) for text in texts for m in PLACEHOLDER_RE.finditer(text) if m.group(2)}


def part_paths(content_dir: Path) -> list[Path]:
    return sorted((content_dir / "scripts").glob("*.yaml"))


def part_file_read(path: Path, shown: str) -> tuple[dict[str, Part], list[tuple[int, str]]]:
    """Parse and check one parts file; returns its good parts and every (line, message) problem."""
    try:
        doc = yaml_file_read(path, shown)
    except YamlLineError as err:
        return {}, [(err.line, str(err))]
    problems: list[Problem] = []
    parts: dict[str, Part] = {}
    data = doc.data
    if not isinstance(data, dict) or set(data) != {"parts"} or not isinstance(data["parts"], dict):
        return {}, [(1, "a parts file is a mapping with one key, 'parts', mapping part id -> part")]
    for part_id, part_data in data["parts"].items():
        where = ("parts", part_id)
        before = len(problems)
        part = _part_parse(str(part_id), part_data, where, problems, doc)
        if part is not None and len(problems) == before:
            parts[part.id] = part
    return parts, [(doc.line_of(where), message) for where, message in problems]


def _part_parse(part_id: str, data: Any, where: YamlPath, problems: list[Problem], doc: YamlDocument) -> Part | None:
    if not PART_ID_RE.fullmatch(part_id):
        problems.append((where, f"part id '{part_id}' must be lowercase letters, digits and '-'"))
        return None
    if not isinstance(data, dict):
        problems.append((where, "a part is a mapping with a title and checks, env, mpi_interface, actions or instructions"))
        return None
    for key in data:
        if key not in PART_KEYS:
            problems.append((where + (key,), f"unknown key '{key}' (allowed: {', '.join(sorted(PART_KEYS))})"))
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        problems.append((where, "a part needs a title"))
    checks = tuple(
        Check(tool=item.get("tool", ""), title=item.get("title", ""), run=item.get("run", ""), only=only)
        for item, only in _items(data, where, "checks", problems)
    )
    for index, check in enumerate(checks):
        if not TOOL_RE.fullmatch(str(check.tool)):
            problems.append(
                (where + ("checks", index, "tool"), "tool is the command name to look for on PATH, such as ip or nvidia-smi")
            )
    env = tuple(
        Setting(name=item.get("name", ""), value=str(item.get("value", "")), why=item.get("why", ""), only=only)
        for item, only in _items(data, where, "env", problems)
    )
    for index, setting in enumerate(env):
        _setting_check(setting, where + ("env", index), problems)
    actions = tuple(
        Action(title=item.get("title", ""), run=item.get("run", ""), only=only)
        for item, only in _items(data, where, "actions", problems)
    )
    instructions = tuple(
        Instruction(text=item.get("text", ""), only=only) for item, only in _items(data, where, "instructions", problems)
    )
    for kind, items in (("checks", checks), ("actions", actions)):
        for index, item in enumerate(items):
            _snippet_check(item.run, where + (kind, index, "run"), problems)
    mpi_interface = data.get("mpi_interface")
    if mpi_interface is not None and not (isinstance(mpi_interface, str) and re.fullmatch(r"[a-z][a-z0-9_]*", mpi_interface)):
        problems.append((where + ("mpi_interface",), "mpi_interface names the role of an interface question, such as iface"))
    if not (checks or env or actions or instructions or mpi_interface):
        problems.append((where, "a part must contribute something"))
    return Part(
        id=part_id,
        title=str(title or "").strip(),
        checks=checks,
        env=env,
        mpi_interface=mpi_interface,
        actions=actions,
        instructions=instructions,
        path=doc.path,
        line=doc.line_of(where),
    )


def _items(data: dict, where: YamlPath, key: str, problems: list[Problem]) -> list[tuple[dict, Only]]:
    """The entries of one list (checks, env, ...), each with its parsed `only` condition."""
    fields = ENTRY_FIELDS[key]
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        problems.append((where + (key,), f"'{key}' must be a non-empty list"))
        return []
    items: list[tuple[dict, Only]] = []
    for index, item in enumerate(value):
        at = where + (key, index)
        if not isinstance(item, dict):
            problems.append((at, f"each entry of '{key}' is a mapping with {', '.join(sorted(fields))}"))
            continue
        for name in item:
            if name not in fields | {"only"}:
                problems.append((at + (name,), f"unknown key '{name}' (allowed: {', '.join(sorted(fields | {'only'}))})"))
        for name in sorted(fields):
            if not isinstance(item.get(name), (str, int)) or not str(item.get(name)).strip():
                problems.append((at, f"missing or empty '{name}'"))
        items.append((item, _only_parse(item.get("only"), at + ("only",), problems)))
    return items


def _only_parse(data: Any, where: YamlPath, problems: list[Problem]) -> Only:
    if data is None:
        return {}
    if not isinstance(data, dict) or not data:
        problems.append((where, "only maps a role to the list of its answers this entry applies to"))
        return {}
    only: Only = {}
    for role, values in data.items():
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append((where + (role,), "give a list of answers, such as [mpirun] or [ge-2.5]"))
            continue
        if role in ROLE_VALUES:
            unknown = [v for v in values if v not in ROLE_VALUES[role]]
            if unknown:
                problems.append(
                    (where + (role,), f"{', '.join(unknown)}: not an answer of role '{role}' ({', '.join(ROLE_VALUES[role])})")
                )
        only[str(role)] = frozenset(values)
    return only


def _setting_check(setting: Setting, where: YamlPath, problems: list[Problem]) -> None:
    variable = VARIABLES.get(setting.name)
    if variable is None:
        problems.append(
            (
                where + ("name",),
                f"'{setting.name}' is not a known, current variable (see troubleshooter/variables.py); "
                "scripts never set a variable that nothing reads",
            )
        )
        return
    for role, allowed in variable.needs.items():
        given = setting.only.get(role)
        if given is None or not given <= allowed:
            problems.append(
                (where, f"{setting.name} exists only for {role} in {sorted(allowed)}: add only: {{{role}: {sorted(allowed)}}}")
            )
    if "\n" in setting.value:
        problems.append((where + ("value",), "a value is one line"))


def _snippet_check(run: str, where: YamlPath, problems: list[Problem]) -> None:
    """Snippets are indented into functions, and placeholders are replaced by quoted words."""
    if "<<" in run:
        problems.append((where, "no here-documents in snippets (they break when indented)"))
    for match in PLACEHOLDER_RE.finditer(run):
        before, after = run[match.start() - 1 : match.start()], run[match.end() : match.end() + 1]
        if (before and before in "\"'") or (after and after in "\"'"):
            problems.append((where, f"write {match.group(0)} bare, not inside quotes: the composer quotes it"))
