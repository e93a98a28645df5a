"""Read and check one content/trees/<id>.yaml file into a Tree (tree_model.py), with the file line of every
problem, so a broken tree never reaches the wizard. The format is documented in content/trees/FORMAT.md.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from diagnosis.conditions import FACTS
from troubleshooter.roles import ROLE_VALUES
from troubleshooter.rules import RULES
from troubleshooter.tree_model import Choice, FactMap, Leaf, Question, Tree, tree_cycle, tree_reachable
from kb.content.fields import Field, duplicates_check, fields_check
from kb.content.yamllines import Problem, YamlDocument, YamlLineError, YamlPath, yaml_file_read

NODE_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
CHOICE_ID_RE = re.compile(r"[a-z0-9][a-z0-9.-]{0,39}")
TREE_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
FIX_STEP_RE = re.compile(r"fix-[1-9][0-9]*")


def _node_id_check(value: Any) -> str | None:
    ok = NODE_ID_RE.fullmatch(str(value))
    return None if ok else f"node id '{value}' must be lowercase letters, digits and '-', starting with a letter"


def _choice_id_check(value: Any) -> str | None:
    if isinstance(value, bool):
        return "YAML reads this id as true/false (yes, no, on, off): put it in quotes"
    ok = CHOICE_ID_RE.fullmatch(str(value))
    return None if ok else f"choice id '{value}' must be lowercase letters, digits, '.' and '-'"


def _fix_step_check(value: str) -> str | None:
    return None if FIX_STEP_RE.fullmatch(value) else f"'{value}' is not a fix step id (fix-1, fix-2, ...)"


def _role_check(value: str) -> str | None:
    ok = re.fullmatch(r"[a-z][a-z0-9_]{0,30}", value)
    return None if ok else "a role is a lowercase name (letters, digits, '_')"


def _rule_check(value: str) -> str | None:
    return None if value in RULES else f"unknown rule '{value}' (known: {', '.join(sorted(RULES))})"


def _fact_check(value: str) -> str | None:
    return None if value in FACTS else f"unknown fact '{value}' (known: {', '.join(sorted(FACTS))})"


def _below_check(value: Any) -> str | None:
    return None if re.fullmatch(r"\d+(\.\d+)*", str(value)) else f"'{value}' is not a version such as 2.2"


def _values_check(value: Any) -> str | None:
    ok = isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values())
    return None if ok else "values maps a fact value to a choice id"


def _fact_map_check(item: dict) -> str | tuple[tuple, str] | None:
    if item.get("versions") and FACTS[item["fact"]][0] != "version":
        return ("versions",), f"fact '{item['fact']}' is not a version; use values"
    return None if item.get("values") or item.get("versions") or item.get("many") else "give values, versions or many"


def _last_range_open(ranges: list, path: tuple) -> list[Problem]:
    """The last version range catches every newer release, so it has no 'below'."""
    return [(path, "the last range must have no 'below' (it catches every newer version)")] if "below" in ranges[-1] else []


def _choices_unique(choices: list, path: tuple) -> list[Problem]:
    return duplicates_check([str(c["id"]) for c in choices], path, "choice id")


def _example_passes_rule(node: dict) -> tuple[tuple, str] | None:
    """A value question's example is what the page shows as a model answer: its own rule must accept it as is."""
    if node["type"] != "value":
        return None
    example = str(node["example"])
    error, canonical = RULES[node["rule"]].check(example)
    if error or canonical != example:
        return ("example",), f"example '{example}' does not pass its own rule '{node['rule']}': {error or 'not canonical'}"
    return None


# The fields of each mapping of a tree file. content/trees/FORMAT.md documents them; tests/test_format_docs.py
# holds the two together.
VERSION_RANGE_FIELDS = {"below": Field("scalar", check=_below_check), "answer": Field("scalar", required=True)}
FACT_MAP_FIELDS = {
    "fact": Field("string", required=True, check=_fact_check),
    "values": Field("mapping", check=_values_check),
    "versions": Field("objects", min_items=1, fields=VERSION_RANGE_FIELDS, validate=_last_range_open),
    "many": Field("scalar"),
}
CHOICE_FIELDS = {
    "id": Field("any", required=True, check=_choice_id_check),
    "label": Field("string", required=True),
    "help": Field("string"),
    "next": Field("string"),
}
_QUESTION_FIELDS = {
    "type": Field("string", required=True),
    "question": Field("string", required=True),
    "help": Field("string"),
    "role": Field("string", check=_role_check),
}
CHOICE_QUESTION_FIELDS = {
    **_QUESTION_FIELDS,
    "choices": Field("objects", required=True, min_items=2, fields=CHOICE_FIELDS, validate=_choices_unique),
    "facts": Field("objects", fields=FACT_MAP_FIELDS, check=_fact_map_check),
}
VALUE_QUESTION_FIELDS = {
    **_QUESTION_FIELDS,
    "rule": Field("string", required=True, check=_rule_check),
    "example": Field("scalar", required=True),  # YAML reads 30 as a number; the URL carries text
    "next": Field("string"),
}
LEAF_FIELDS = {
    "type": Field("string", required=True),
    "title": Field("string", required=True),
    "case": Field("string", required=True),
    "diagnosis": Field("string", required=True),
    "fix_steps": Field("strings", required=True, min_items=1, check=_fix_step_check),
    "script": Field("strings", required=True, min_items=1),
    "asks": Field("strings"),
}
NODE_FIELDS = {"choice": CHOICE_QUESTION_FIELDS, "value": VALUE_QUESTION_FIELDS, "leaf": LEAF_FIELDS}
NODE_TYPES = tuple(NODE_FIELDS)
# What a tree is for, so the diagnosis page links each kind where it helps (troubleshooter/links.py).
TREE_PURPOSES = ("diagnose", "capture")


def _purpose_check(value: str) -> str | None:
    return None if value in TREE_PURPOSES else f"purpose is one of: {', '.join(TREE_PURPOSES)}"


TREE_FIELDS = {
    "id": Field("string", required=True),
    "purpose": Field("string", check=_purpose_check),
    "title": Field("string", required=True),
    "summary": Field("string", required=True),
    "start": Field("string", required=True),
    "nodes": Field("keyed", required=True, key_check=_node_id_check, variants=NODE_FIELDS, check=_example_passes_rule),
}


def tree_paths(root: Path) -> list[Path]:
    return sorted((root / "trees").glob("*.yaml"))


def tree_file_read(path: Path, shown: str) -> tuple[Tree | None, YamlDocument | None, list[tuple[int, str]]]:
    """Parse and check one tree file; returns the tree (None when broken), the raw file, and (line, message)s."""
    try:
        doc = yaml_file_read(path, shown)
    except YamlLineError as err:
        return None, None, [(err.line, str(err))]
    problems = fields_check(doc.data, TREE_FIELDS, (), "a tree file: a mapping")
    tree_id = doc.data.get("id") if isinstance(doc.data, dict) else None
    if isinstance(tree_id, str) and (not TREE_ID_RE.fullmatch(tree_id) or tree_id != path.stem):
        problems.append((("id",), f"id '{tree_id}' must be lowercase words joined by '-' and equal the file name '{path.stem}'"))
    if not problems:
        tree = _tree_build(doc.data, shown)
        problems = _graph_check(tree)
        if not problems:
            return tree, doc, []
    return None, doc, [(doc.line_of(where), message) for where, message in problems]


def _tree_build(data: dict, shown: str) -> Tree:
    """A tree from data that passed TREE_FIELDS."""
    return Tree(
        id=data["id"],
        title=data["title"].strip(),
        summary=data["summary"].strip(),
        start=data["start"],
        nodes={node_id: _node_build(node_id, node) for node_id, node in data["nodes"].items()},
        path=shown,
        purpose=data.get("purpose") or "diagnose",
    )


def _text(data: dict, key: str) -> str:
    """An optional text field of validated data, trimmed ("" when absent)."""
    return (data.get(key) or "").strip()


def _node_build(node_id: str, data: dict) -> Question | Leaf:
    text = functools.partial(_text, data)
    if data["type"] == "leaf":
        return Leaf(
            id=node_id,
            title=text("title"),
            case=text("case"),
            diagnosis=text("diagnosis"),
            fix_steps=tuple(data["fix_steps"]),
            script=tuple(data["script"]),
            asks=tuple(data.get("asks") or ()),
        )
    asked = {"id": node_id, "text": text("question"), "help": text("help"), "role": data.get("role")}
    if data["type"] == "choice":
        choices = tuple(
            Choice(id=str(c["id"]), label=c["label"].strip(), help=_text(c, "help"), next=c.get("next")) for c in data["choices"]
        )
        facts = tuple(
            FactMap(
                fact=f["fact"],
                values={str(k): v for k, v in (f.get("values") or {}).items()},
                versions=tuple((str(r["below"]) if "below" in r else None, str(r["answer"])) for r in f.get("versions") or ()),
                many=str(f["many"]) if f.get("many") is not None else None,
            )
            for f in data.get("facts") or ()
        )
        return Question(**asked, kind="choice", choices=choices, facts=facts)
    return Question(
        **asked,
        kind="value",
        rule=data["rule"],
        example=str(data["example"]),
        next=data.get("next") or None,
    )


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
