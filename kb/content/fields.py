"""The one way content files are validated: a declarative spec of fields, checked into (path, message) problems.

Case front matter and the harmless list (kb/content/schema.py), decision trees (troubleshooter/tree_file.py) and
script parts (troubleshooter/parts.py) each declare their fields with `Field`; `fields_check` walks the data
against them. What a spec cannot say (a graph, cross-references) is checked afterwards on the validated data.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable

from kb.content.yamllines import Problem

Check = Callable[[Any], "str | tuple[tuple, str] | None"]
Validator = Callable[[Any, tuple], "list[Problem]"]


@dataclass(frozen=True)
class Field:
    """One field. Kinds: string, scalar (text or a number), number, bool, date, strings, objects (a list of
    mappings), keyed (a mapping of ids to mappings), mapping, examples, any."""

    kind: str
    required: bool = False
    min_items: int = 0
    max_len: int | None = None
    check: Check | None = None  # on the value; on each item of a list; on each mapping of objects or keyed.
    # It returns a message, or (a path inside the value, message), or None.
    fields: dict[str, "Field"] | None = None  # the fields of each mapping (objects, keyed, examples)
    variants: dict[str, dict[str, "Field"]] | None = None  # objects or keyed: each mapping's `type` picks its fields
    key_check: Check | None = None  # keyed: each id
    validate: Validator | None = None  # runs once the kind's checks pass, reporting (path, message) itself


def fields_check(data: Any, fields: dict[str, Field], path: tuple = (), what: str = "a mapping") -> list[Problem]:
    """Every problem of `data` against `fields`: unknown and missing fields, then each value by its kind."""
    if not isinstance(data, dict):
        return [(path, f"expected {what} with {', '.join(fields)}")]
    problems: list[Problem] = []
    for name in data:
        if name not in fields:
            problems.append((path + (name,), f"unknown field '{name}' (allowed: {', '.join(fields)})"))
    for name, spec in fields.items():
        if name not in data or data[name] is None:
            if spec.required:
                problems.append((path, f"missing required field '{name}'"))
            continue
        problems += _value_check(data[name], spec, path + (name,), name)
    return problems


def _value_check(value: Any, spec: Field, path: tuple, name: str) -> list[Problem]:
    problems = _kind_check(value, spec, path, name)
    if not problems and spec.validate is not None:
        problems = spec.validate(value, path)
    return problems


def _kind_check(value: Any, spec: Field, path: tuple, name: str) -> list[Problem]:
    kind = spec.kind
    if kind == "string":
        if not isinstance(value, str) or not value.strip():
            return [(path, f"'{name}' must be a non-empty string")]
        if spec.max_len and len(value) > spec.max_len:
            return [(path, f"'{name}' is {len(value)} characters; the limit is {spec.max_len}")]
        return _run_check(spec, value, path)
    if kind == "scalar":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
            return [(path, f"'{name}' must be text or a number")]
        return _run_check(spec, value, path)
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return [(path, f"'{name}' must be a number")]
        return []
    if kind == "bool":
        return [] if isinstance(value, bool) else [(path, f"'{name}' must be true or false")]
    if kind == "date":
        return [] if isinstance(value, datetime.date) else [(path, f"'{name}' must be a date written YYYY-MM-DD")]
    if kind in ("strings", "objects"):
        return _list_check(value, spec, path, name)
    if kind == "keyed":
        return _keyed_check(value, spec, path, name)
    if kind == "mapping":
        return _run_check(spec, value, path)
    if kind == "any":
        return _run_check(spec, value, path)
    if kind == "examples":
        if not isinstance(value, list) or len(value) < spec.min_items:
            return [(path, f"'{name}' must be a list of at least {spec.min_items} example(s)")]
        problems: list[Problem] = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                problems += fields_check(item, spec.fields or {}, path + (index,))
            elif not isinstance(item, str) or not item.strip():
                problems.append((path + (index,), f"items of '{name}' are lines, or mappings with text and release"))
        return problems
    raise AssertionError(f"unknown field kind {kind}")


def _list_check(value: Any, spec: Field, path: tuple, name: str) -> list[Problem]:
    if not isinstance(value, list):
        return [(path, f"'{name}' must be a list")]
    if len(value) < spec.min_items:
        return [(path, f"'{name}' needs at least {spec.min_items} item(s), has {len(value)}")]
    problems: list[Problem] = []
    for index, item in enumerate(value):
        item_path = path + (index,)
        if spec.kind == "strings":
            if not isinstance(item, str) or not item.strip():
                problems.append((item_path, f"items of '{name}' must be non-empty strings"))
            else:
                problems += _run_check(spec, item, item_path)
        else:
            problems += _mapping_check(item, spec, item_path, f"items of '{name}'")
    if spec.kind == "strings":
        problems += duplicates_check(value, path, f"entry in '{name}'")
    return problems


def _keyed_check(value: Any, spec: Field, path: tuple, name: str) -> list[Problem]:
    if not isinstance(value, dict) or len(value) < max(spec.min_items, 1):
        return [(path, f"'{name}' must be a non-empty mapping of id -> entry")]
    problems: list[Problem] = []
    for key, item in value.items():
        message = spec.key_check(key) if spec.key_check else None
        if message:
            problems.append((path + (key,), message))
            continue
        problems += _mapping_check(item, spec, path + (key,), f"each entry of '{name}'")
    return problems


def _mapping_check(item: Any, spec: Field, path: tuple, what: str) -> list[Problem]:
    """One mapping of objects or keyed: its fields (those of its `type` with variants), then the spec's check."""
    if not isinstance(item, dict):
        return [(path, f"{what} must be a mapping")]
    fields = spec.fields or {}
    if spec.variants is not None:
        kind = item.get("type")
        if kind not in spec.variants:
            return [(path + ("type",), f"type must be one of: {', '.join(spec.variants)}")]
        fields = spec.variants[kind]
    problems = fields_check(item, fields, path)
    return problems or _run_check(spec, item, path)


def _run_check(spec: Field, value: Any, path: tuple) -> list[Problem]:
    """The spec's own check: a message about the value, or (a path inside the value, message)."""
    found = spec.check(value) if spec.check else None
    if isinstance(found, tuple):
        return [(path + found[0], found[1])]
    return [(path, found)] if found else []


def duplicates_check(values: list, path: tuple, what: str) -> list[Problem]:
    """Each string that repeats an earlier one, at its index."""
    seen: set = set()
    problems: list[Problem] = []
    for index, value in enumerate(values):
        if not isinstance(value, str):
            continue  # reported as the wrong type elsewhere
        if value in seen:
            problems.append((path + (index,), f"duplicate {what} '{value}'"))
        seen.add(value)
    return problems
