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
from kb.content.fields import Field, fields_check
from kb.content.yamllines import Problem, YamlDocument, YamlLineError, YamlPath, yaml_file_read

PART_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,49}")
TOOL_RE = re.compile(r"[A-Za-z0-9_.+-]{1,40}")
PLACEHOLDER_RE = re.compile(r"@([a-z][a-z0-9_]*)(\.seconds)?@")

Only = dict[str, frozenset[str]]


def _only_problems(value: Any, path: tuple) -> list[Problem]:
    """`only: {role: [answers]}`: the entry applies only when each role was answered with one of these."""
    if not isinstance(value, dict) or not value:
        return [(path, "only maps a role to the list of its answers this entry applies to")]
    problems: list[Problem] = []
    for role, answers in value.items():
        if not isinstance(answers, list) or not answers or not all(isinstance(v, str) for v in answers):
            problems.append((path + (role,), "give a list of answers, such as [mpirun] or [ge-2.5]"))
        elif role in ROLE_VALUES and [v for v in answers if v not in ROLE_VALUES[role]]:
            unknown = ", ".join(v for v in answers if v not in ROLE_VALUES[role])
            problems.append((path + (role,), f"{unknown}: not an answer of role '{role}' ({', '.join(ROLE_VALUES[role])})"))
    return problems


def _tool_check(value: Any) -> str | None:
    return None if TOOL_RE.fullmatch(str(value)) else "tool is the command name to look for on PATH, such as ip or nvidia-smi"


def _role_name_check(value: Any) -> str | None:
    ok = isinstance(value, str) and re.fullmatch(r"[a-z][a-z0-9_]*", value)
    return None if ok else "mpi_interface names the role of an interface question, such as iface"


def _part_id_check(value: Any) -> str | None:
    ok = PART_ID_RE.fullmatch(str(value))
    return None if ok else f"part id '{value}' must be lowercase letters, digits and '-'"


def _contributes(part: dict) -> str | None:
    return None if any(part.get(key) for key in CONTRIBUTIONS) else "a part must contribute something"


ONLY = Field("any", validate=_only_problems)
RUN = Field("string", required=True)
# The fields of a part and of each entry of its lists. content/trees/FORMAT.md documents them;
# tests/test_format_docs.py holds the two together.
ENTRY_FIELDS: dict[str, dict[str, Field]] = {
    "checks": {
        "tool": Field("scalar", required=True, check=_tool_check),
        "title": Field("string", required=True),
        "run": RUN,
        "only": ONLY,
    },
    "env": {
        "name": Field("string", required=True),
        "value": Field("scalar", required=True),
        "why": Field("string", required=True),
        "only": ONLY,
    },
    "actions": {"title": Field("string", required=True), "run": RUN, "only": ONLY},
    "instructions": {"text": Field("string", required=True), "only": ONLY},
}
CONTRIBUTIONS = ("checks", "env", "mpi_interface", "actions", "instructions")
PART_FIELDS: dict[str, Field] = {
    "title": Field("string", required=True),
    **{key: Field("objects", min_items=1, fields=fields) for key, fields in ENTRY_FIELDS.items() if key != "instructions"},
    "mpi_interface": Field("string", check=_role_name_check),
    "instructions": Field("objects", min_items=1, fields=ENTRY_FIELDS["instructions"]),
}
PARTS_FILE: dict[str, Field] = {
    "parts": Field("keyed", required=True, key_check=_part_id_check, fields=PART_FIELDS, check=_contributes),
}


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
    problems = fields_check(doc.data, PARTS_FILE, (), "a parts file: a mapping")
    parts: dict[str, Part] = {}
    for part_id, data in (doc.data.get("parts") or {}).items() if isinstance(doc.data, dict) else ():
        where = ("parts", part_id)
        if not isinstance(data, dict) or any(at[: len(where)] == where for at, _ in problems):
            continue  # only parts whose fields passed are built
        part = _part_build(str(part_id), data, doc, where)
        found = _part_problems(part, where)
        problems += found
        if not found:
            parts[part.id] = part
    return parts, [(doc.line_of(where), message) for where, message in problems]


def _part_build(part_id: str, data: dict, doc: YamlDocument, where: YamlPath) -> Part:
    """A part from data that passed PART_FIELDS."""

    def entries(key: str) -> list[tuple[dict, Only]]:
        return [
            (item, {str(role): frozenset(answers) for role, answers in (item.get("only") or {}).items()})
            for item in data.get(key) or []
        ]

    return Part(
        id=part_id,
        title=data["title"].strip(),
        checks=tuple(Check(tool=str(i["tool"]), title=i["title"], run=i["run"], only=o) for i, o in entries("checks")),
        env=tuple(Setting(name=i["name"], value=str(i["value"]), why=i["why"], only=o) for i, o in entries("env")),
        mpi_interface=data.get("mpi_interface"),
        actions=tuple(Action(title=i["title"], run=i["run"], only=o) for i, o in entries("actions")),
        instructions=tuple(Instruction(text=i["text"], only=o) for i, o in entries("instructions")),
        path=doc.path,
        line=doc.line_of(where),
    )


def _part_problems(part: Part, where: YamlPath) -> list[Problem]:
    """What the field spec cannot say: variables that exist for the answers given, and snippets that survive
    being indented and filled with quoted values."""
    problems: list[Problem] = []
    for index, setting in enumerate(part.env):
        _setting_check(setting, where + ("env", index), problems)
    for kind, items in (("checks", part.checks), ("actions", part.actions)):
        for index, item in enumerate(items):
            _snippet_check(item.run, where + (kind, index, "run"), problems)
    return problems


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
