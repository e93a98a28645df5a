"""Read and check one content/trees/<id>.yaml file into a Tree (tree_model.py), with the file line of every
problem, so a broken tree never reaches the wizard. The format is documented in content/trees/FORMAT.md.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from kb.diagnosis.conditions import FACTS
from troubleshooter.roles import ROLE_VALUES
from troubleshooter.rules import RULES
from troubleshooter.tree_model import Choice, FactMap, Leaf, Question, Tree, tree_cycle, tree_reachable
from kb.content.yamllines import Problem, YamlDocument, YamlLineError, YamlPath, yaml_file_read

NODE_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
CHOICE_ID_RE = re.compile(r"[a-z0-9][a-z0-9.-]{0,39}")
TREE_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
FIX_STEP_RE = re.compile(r"fix-[1-9][0-9]*")

# The keys each mapping of a tree file accepts, and those it requires. content/trees/FORMAT.md documents
# them; tests/test_format_docs.py holds the two together.
NODE_TYPES = ("choice", "value", "leaf")
TREE_KEYS = frozenset({"id", "title", "summary", "start", "nodes"})
LEAF_KEYS = frozenset({"type", "title", "case", "diagnosis", "fix_steps", "script", "asks"})
LEAF_REQUIRED = LEAF_KEYS - {"asks"}
_QUESTION_KEYS = frozenset({"type", "question", "help", "role"})
CHOICE_QUESTION_KEYS = _QUESTION_KEYS | {"choices", "facts"}
VALUE_QUESTION_KEYS = _QUESTION_KEYS | {"rule", "example", "next"}
CHOICE_KEYS = frozenset({"id", "label", "help", "next"})
FACT_MAP_KEYS = frozenset({"fact", "values", "versions", "many"})
VERSION_RANGE_KEYS = frozenset({"below", "answer"})


def tree_paths(root: Path) -> list[Path]:
    return sorted((root / "trees").glob("*.yaml"))


def tree_file_read(path: Path, shown: str) -> tuple[Tree | None, YamlDocument | None, list[tuple[int, str]]]:
    """Parse and check one tree file; returns the tree (None when broken), the raw file, and (line, message)s."""
    try:
        doc = yaml_file_read(path, shown)
    except YamlLineError as err:
        return None, None, [(err.line, str(err))]
    problems: list[Problem] = []
    tree = _tree_parse(doc.data, path.stem, problems)
    if tree is not None and not problems:
        problems += _graph_check(tree)
    located = [(doc.line_of(where), message) for where, message in problems]
    if tree is None or problems:
        return None, doc, located
    return replace(tree, path=shown), doc, []


def _tree_parse(data: Any, stem: str, problems: list[Problem]) -> Tree | None:
    if not isinstance(data, dict):
        problems.append(((), "a tree file is a mapping with id, title, summary, start and nodes"))
        return None
    _keys_check(data, (), TREE_KEYS, TREE_KEYS, problems)
    tree_id = _text(data, ("id",), problems)
    if tree_id and (not TREE_ID_RE.fullmatch(tree_id) or tree_id != stem):
        problems.append((("id",), f"id '{tree_id}' must be lowercase words joined by '-' and equal the file name '{stem}'"))
    nodes_data = data.get("nodes")
    if not isinstance(nodes_data, dict) or not nodes_data:
        problems.append((("nodes",), "nodes must be a non-empty mapping of node id -> node"))
        return None
    nodes: dict[str, Question | Leaf] = {}
    for node_id, node_data in nodes_data.items():
        where = ("nodes", node_id)
        if not NODE_ID_RE.fullmatch(str(node_id)):
            problems.append((where, f"node id '{node_id}' must be lowercase letters, digits and '-', starting with a letter"))
            continue
        node = _node_parse(node_id, node_data, where, problems)
        if node is not None:
            nodes[node_id] = node
    return Tree(
        id=tree_id or stem,
        title=_text(data, ("title",), problems) or "",
        summary=_text(data, ("summary",), problems) or "",
        start=str(data.get("start", "")),
        nodes=nodes,
        path="",
    )


def _node_parse(node_id: str, data: Any, where: YamlPath, problems: list[Problem]) -> Question | Leaf | None:
    if not isinstance(data, dict):
        problems.append((where, "a node is a mapping with a type: choice, value or leaf"))
        return None
    kind = data.get("type")
    if kind == "leaf":
        _keys_check(data, where, LEAF_KEYS, LEAF_REQUIRED, problems)
        fix_steps = _strings(data, where + ("fix_steps",), problems, minimum=1)
        for index, step in enumerate(fix_steps):
            if not FIX_STEP_RE.fullmatch(step):
                problems.append((where + ("fix_steps", index), f"'{step}' is not a fix step id (fix-1, fix-2, ...)"))
        return Leaf(
            id=node_id,
            title=_text(data, where + ("title",), problems) or "",
            case=_text(data, where + ("case",), problems) or "",
            diagnosis=_text(data, where + ("diagnosis",), problems) or "",
            fix_steps=tuple(fix_steps),
            script=tuple(_strings(data, where + ("script",), problems, minimum=1)),
            asks=tuple(_strings(data, where + ("asks",), problems)),
        )
    if kind not in ("choice", "value"):
        problems.append((where + ("type",), "type must be choice, value or leaf"))
        return None
    if kind == "choice":
        _keys_check(data, where, CHOICE_QUESTION_KEYS, {"type", "question", "choices"}, problems)
        choices = _choices_parse(data.get("choices"), where + ("choices",), problems)
        facts = _facts_parse(data.get("facts"), where + ("facts",), problems)
        return Question(
            id=node_id,
            kind="choice",
            text=_text(data, where + ("question",), problems) or "",
            help=_optional_text(data, where + ("help",), problems),
            role=_role(data, where, problems),
            choices=choices,
            facts=facts,
        )
    _keys_check(data, where, VALUE_QUESTION_KEYS, {"type", "question", "rule", "example"}, problems)
    rule = _text(data, where + ("rule",), problems)
    example = data.get("example")
    if example is not None and not isinstance(example, str):
        example = str(example)  # YAML reads 30 as an int; the URL carries text
    if rule and rule not in RULES:
        problems.append((where + ("rule",), f"unknown rule '{rule}' (known: {', '.join(sorted(RULES))})"))
    elif rule and example is not None:
        error, canonical = RULES[rule].check(example)
        if error or canonical != example:
            problems.append(
                (where + ("example",), f"example '{example}' does not pass its own rule '{rule}': {error or 'not canonical'}")
            )
    return Question(
        id=node_id,
        kind="value",
        text=_text(data, where + ("question",), problems) or "",
        help=_optional_text(data, where + ("help",), problems),
        role=_role(data, where, problems),
        rule=rule,
        example=example,
        next=_optional_text(data, where + ("next",), problems) or None,
    )


def _choices_parse(data: Any, where: YamlPath, problems: list[Problem]) -> tuple[Choice, ...]:
    if not isinstance(data, list) or len(data) < 2:
        problems.append((where, "choices must be a list of at least two choices"))
        return ()
    choices: list[Choice] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        at = where + (index,)
        if not isinstance(item, dict):
            problems.append((at, "a choice is a mapping with id and label"))
            continue
        _keys_check(item, at, CHOICE_KEYS, {"id", "label"}, problems)
        choice_id = str(item.get("id", ""))
        if isinstance(item.get("id"), bool):
            problems.append((at + ("id",), "YAML reads this id as true/false (yes, no, on, off): put it in quotes"))
        elif not CHOICE_ID_RE.fullmatch(choice_id):
            problems.append((at + ("id",), f"choice id '{choice_id}' must be lowercase letters, digits, '.' and '-'"))
        elif choice_id in seen:
            problems.append((at + ("id",), f"choice id '{choice_id}' is used twice in this question"))
        seen.add(choice_id)
        choices.append(
            Choice(
                id=choice_id,
                label=_text(item, at + ("label",), problems) or "",
                help=_optional_text(item, at + ("help",), problems),
                next=_optional_text(item, at + ("next",), problems) or None,
            )
        )
    return tuple(choices)


def _facts_parse(data: Any, where: YamlPath, problems: list[Problem]) -> tuple[FactMap, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        problems.append((where, "facts must be a list of {fact, values | versions | many}"))
        return ()
    maps: list[FactMap] = []
    for index, item in enumerate(data):
        at = where + (index,)
        if not isinstance(item, dict):
            problems.append((at, "a fact mapping is a mapping with fact and values, versions or many"))
            continue
        _keys_check(item, at, FACT_MAP_KEYS, {"fact"}, problems)
        fact = str(item.get("fact", ""))
        if fact not in FACTS:
            problems.append((at + ("fact",), f"unknown fact '{fact}' (known: {', '.join(sorted(FACTS))})"))
            continue
        values = item.get("values") or {}
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            problems.append((at + ("values",), "values maps a fact value to a choice id"))
            values = {}
        versions = _versions_parse(item.get("versions"), at + ("versions",), problems)
        if versions and FACTS[fact][0] != "version":
            problems.append((at + ("versions",), f"fact '{fact}' is not a version; use values"))
        many = item.get("many")
        if not (values or versions or many):
            problems.append((at, "give values, versions or many"))
        maps.append(
            FactMap(
                fact=fact,
                values={str(k): v for k, v in values.items()},
                versions=versions,
                many=str(many) if many is not None else None,
            )
        )
    return tuple(maps)


def _versions_parse(data: Any, where: YamlPath, problems: list[Problem]) -> tuple[tuple[str | None, str], ...]:
    if data is None:
        return ()
    ranges: list[tuple[str | None, str]] = []
    if not isinstance(data, list):
        problems.append((where, "versions is a list of {below: 'X.Y', answer: choice} ending with one {answer: choice}"))
        return ()
    for index, item in enumerate(data):
        at = where + (index,)
        if not isinstance(item, dict) or "answer" not in item:
            problems.append((at, "each range needs an answer (and a 'below' bound, except the last)"))
            continue
        _keys_check(item, at, VERSION_RANGE_KEYS, set(), problems)
        below = item.get("below")
        if below is not None and not re.fullmatch(r"\d+(\.\d+)*", str(below)):
            problems.append((at + ("below",), f"'{below}' is not a version such as 2.2"))
        ranges.append((str(below) if below is not None else None, str(item["answer"])))
    if ranges and ranges[-1][0] is not None:
        problems.append((where, "the last range must have no 'below' (it catches every newer version)"))
    return tuple(ranges)


def _graph_check(tree: Tree) -> list[Problem]:
    """Reachability, no cycles, every choice leads somewhere, asks and roles used consistently."""
    problems: list[Problem] = []
    nodes = tree.nodes
    asked = tree.asked()
    if tree.start not in nodes:
        return [(("start",), f"start node '{tree.start}' does not exist")]
    if not isinstance(nodes[tree.start], Question) or tree.start in asked:
        problems.append((("start",), "start must be a question that branches (not a leaf, not an asked question)"))
    for node in nodes.values():
        where = ("nodes", node.id)
        if isinstance(node, Leaf):
            for index, asked_id in enumerate(node.asks):
                if not isinstance(nodes.get(asked_id), Question):
                    problems.append((where + ("asks", index), f"asks '{asked_id}', which is not a question in this tree"))
            if len(set(node.asks)) != len(node.asks):
                problems.append((where + ("asks",), "a question is asked twice"))
            continue
        problems += _question_check(node, nodes, asked, where)
    if problems:
        return problems
    reached = tree_reachable(tree)
    for node_id in nodes:
        if node_id not in reached:
            problems.append((("nodes", node_id), f"node '{node_id}' is not reachable from the start"))
    cycle = tree_cycle(tree)
    if cycle:
        problems.append((("nodes", cycle[0]), "cycle: " + " -> ".join(cycle)))
    return problems


def _question_check(node: Question, nodes: dict[str, Question | Leaf], asked: set[str], where: YamlPath) -> list[Problem]:
    problems: list[Problem] = []
    is_asked = node.id in asked
    targets = (
        [(where + ("choices", i, "next"), c.next) for i, c in enumerate(node.choices)]
        if node.kind == "choice"
        else [(where + ("next",), node.next)]
    )
    for at, target in targets:
        if is_asked and target:
            problems.append((at, "a question that a leaf asks returns to that leaf; remove 'next'"))
        elif not is_asked and not target:
            problems.append((at, "this leads nowhere: give 'next' (or list the question in a leaf's asks)"))
        elif target and target not in nodes:
            problems.append((at, f"next node '{target}' does not exist"))
        elif target and target in asked:
            problems.append((at, f"'{target}' is asked by leaves; a choice cannot lead to it"))
    if node.role in ROLE_VALUES:
        expected = ROLE_VALUES[node.role]
        if node.kind != "choice" or {c.id for c in node.choices} != set(expected):
            problems.append((where + ("role",), f"a '{node.role}' question has exactly these choice ids: {', '.join(expected)}"))
    choice_ids = {c.id for c in node.choices}
    for index, fact_map in enumerate(node.facts):
        for answer in [
            *fact_map.values.values(),
            *(a for _, a in fact_map.versions),
            *([fact_map.many] if fact_map.many else []),
        ]:
            if answer not in choice_ids:
                problems.append(
                    (where + ("facts", index), f"fact '{fact_map.fact}' maps to '{answer}', which is not a choice here")
                )
    return problems


def _keys_check(data: dict, where: YamlPath, allowed: set[str], required: set[str], problems: list[Problem]) -> None:
    for key in data:
        if key not in allowed:
            problems.append((where + (key,), f"unknown key '{key}' (allowed: {', '.join(sorted(allowed))})"))
    for key in sorted(required - set(data)):
        problems.append((where, f"missing required key '{key}'"))


def _text(data: dict, where: YamlPath, problems: list[Problem]) -> str | None:
    value = data.get(where[-1])
    if value is None:
        return None  # reported by _keys_check
    if not isinstance(value, str) or not value.strip():
        problems.append((where, f"'{where[-1]}' must be non-empty text"))
        return None
    return value.strip()


def _optional_text(data: dict, where: YamlPath, problems: list[Problem]) -> str:
    if data.get(where[-1]) is None:
        return ""
    return _text(data, where, problems) or ""


def _strings(data: dict, where: YamlPath, problems: list[Problem], minimum: int = 0) -> list[str]:
    value = data.get(where[-1])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) < minimum:
        problems.append(
            (
                where,
                f"'{where[-1]}' must be a list of at least {minimum} string(s)"
                if minimum
                else f"'{where[-1]}' must be a list of strings",
            )
        )
        return []
    return value


def _role(data: dict, where: YamlPath, problems: list[Problem]) -> str | None:
    role = data.get("role")
    if role is None:
        return None
    if not isinstance(role, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", role):
        problems.append((where + ("role",), "a role is a lowercase name (letters, digits, '_')"))
        return None
    return role
