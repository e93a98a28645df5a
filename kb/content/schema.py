"""The case file schema, in one place: fields, types, allowed values, and the checks on them.

content/FORMAT.md documents the same rules for authors; change both together.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Callable

from diagnosis.scan.literals import required_literals, sre_parse
from diagnosis.conditions import condition_problems
from diagnosis.versions import SOFTWARE_NAMES, version_spec_valid
from kb.content.fields import Field, duplicates_check, fields_check
from kb.content.yamllines import Problem

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SIGNATURE_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FACT_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

TAG_VALUES: dict[str, tuple[str, ...]] = {
    "framework": (
        "pytorch",
        "pytorch-fsdp",
        "pytorch-ddp",
        "megatron-lm",
        "transformer-engine",
        "hf-transformers",
        "hf-accelerate",
        "hf-trl",
        "autotrain-advanced",
        "peft",
        "deepspeed",
        "llama-recipes",
        "nccl-tests",
    ),
    "component": (
        "nccl",
        "pytorch-distributed",
        "torchrun",
        "tcpstore",
        "open-mpi",
        "ucx",
        "userbuffers",
        "cpp-extension",
        "cuda",
        "infiniband",
        "ethernet",
        "pcie",
        "nvlink",
        "docker",
        "kubernetes",
        "linux-kernel",
        "filesystem",
    ),
    "phase": (
        "launch",
        "rendezvous",
        "init",
        "compile",
        "model-setup",
        "data-preprocessing",
        "training",
        "checkpoint",
    ),
}

REFERENCE_KINDS = ("docs", "source", "issue", "pr", "article")
# Software a version range can name (signatures, fix steps, harmless lines, reviewed_against): the names the
# diagnosis shows (diagnosis.versions.SOFTWARE_NAMES), so a name cannot be allowed here and unknown there.
SOFTWARE = tuple(SOFTWARE_NAMES)
SIGNATURE_FLAGS = ("ignorecase",)
WEIGHT_RANGE = (-10.0, 10.0)

# Body sections every case must have, in this order, as level-2 headings with these ids.
REQUIRED_SECTIONS = ("symptoms", "signatures", "root-cause", "fix", "prevention", "background")
OPTIONAL_SECTIONS = ("corrections", "versions")
RENDERED_SECTIONS = ("references",)  # rendered from front matter by the page template


def _slug_check(value: str) -> str | None:
    return None if SLUG_RE.match(value) else f"'{value}' is not a slug (lowercase words joined by '-')"


def _url_check(value: str) -> str | None:
    return None if re.match(r"^https?://[^\s]+$", value) else f"'{value}' is not an http(s) URL"


def _one_of(values: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in values else f"'{value}' is not one of: {', '.join(values)}"

    return check


def _id_check(value: str) -> str | None:
    return None if SIGNATURE_ID_RE.match(value) else f"id '{value}' must be lowercase words joined by '-'"


def _software_map_check(value: Any, valid: Callable[[str], bool], mapping_hint: str, item_hint: str) -> str | None:
    """A non-empty mapping from known software names to strings that `valid` accepts."""
    if not isinstance(value, dict) or not value:
        return f"must map software names to {mapping_hint}"
    for name, item in value.items():
        if name not in SOFTWARE:
            return f"unknown software '{name}' (allowed: {', '.join(SOFTWARE)})"
        if not isinstance(item, str) or not valid(item):
            return f"'{item}' for {name} is not {item_hint}"
    return None


def _versions_check(value: Any) -> str | None:
    """`{software: "PEP 440 specifiers"}`, e.g. `{pytorch: ">=2.2,<2.14", nccl: ">=2.24"}`."""
    return _software_map_check(
        value,
        version_spec_valid,
        "version specifiers, e.g. {pytorch: '>=2.2,<2.14'}",
        "a version specifier such as '>=2.2,<2.14'",
    )


def _version_pins_check(value: Any) -> str | None:
    """`{software: "release"}`: the releases a page was reviewed against."""
    return _software_map_check(
        value,
        lambda version: version_spec_valid("==" + version),
        "the versions reviewed against, e.g. {pytorch: '2.14.1'}",
        "a version such as '2.14.1'",
    )


def _check_tags(value: Any, path: tuple) -> list[Problem]:
    if not isinstance(value, dict):
        return [(path, "'tags' must map each of framework, component, phase to a list")]
    problems: list[Problem] = []
    for facet in value:
        if facet not in TAG_VALUES:
            problems.append((path + (facet,), f"unknown tag facet '{facet}' (allowed: {', '.join(TAG_VALUES)})"))
    for facet, allowed in TAG_VALUES.items():
        items = value.get(facet)
        if not isinstance(items, list) or not items:
            problems.append((path, f"tags.{facet} must be a non-empty list"))
            continue
        for index, item in enumerate(items):
            if item not in allowed:
                problems.append((path + (facet, index), f"tag {facet} '{item}' is not allowed (allowed: {', '.join(allowed)})"))
    return problems


# Where a claim the machine cannot check was read (an Xid's meaning, a driver table, a version range): the file or
# page and the release, and the day it was read. `manage.py claims` lists them oldest first (issue 32, item 3).
SOURCE_FIELDS = {
    "read": Field("string", required=True, max_len=400),
    "checked": Field("date", required=True),
}


def _source_check(value: Any, path: tuple) -> list[Problem]:
    problems = fields_check(value, SOURCE_FIELDS, path, "a mapping with read and checked")
    checked = value.get("checked") if isinstance(value, dict) else None
    if not problems and checked > datetime.date.today():
        problems.append((path + ("checked",), f"checked {checked} is in the future"))
    return problems


SOURCE_FIELD = Field("any", fields=SOURCE_FIELDS, validate=_source_check)

EXAMPLE_FIELDS = {
    "text": Field("string", required=True),
    "release": Field("string", required=True, max_len=120),  # which program and release prints it
}

SIGNATURE_FIELDS = {
    "id": Field("string", required=True, check=_id_check),
    "description": Field("string", required=True, max_len=300),
    "pattern": Field("string", required=True),
    "weight": Field("number", required=True),
    "anchor": Field("bool"),
    "examples": Field("examples", required=True, min_items=1, fields=EXAMPLE_FIELDS),
    "flags": Field("strings", check=_one_of(SIGNATURE_FLAGS)),
    "versions": Field("mapping", check=_versions_check),
    "source": SOURCE_FIELD,
}

CONDITION_OPERATORS = ("equals", "in", "at_least", "at_most", "present", "contains", "version")

CONDITION_FIELDS = {
    "id": Field("string", required=True, check=_id_check),
    "description": Field("string", required=True, max_len=300),
    "fact": Field("string", required=True),
    **{op: Field("any") for op in CONDITION_OPERATORS},
    "weight": Field("number", required=True),
    "anchor": Field("bool"),
}

FRAME_FIELDS = {
    "id": Field("string", required=True, check=_id_check),
    "description": Field("string", required=True, max_len=300),
    "pattern": Field("string", required=True),
    "depth": Field("number"),
    "weight": Field("number", required=True),
    "anchor": Field("bool"),
    "examples": Field("strings", required=True, min_items=1),
    "versions": Field("mapping", check=_versions_check),
    "source": SOURCE_FIELD,
}

STEP_FIELDS = {
    "anchor": Field(
        "string",
        required=True,
        check=lambda v: None if re.match(r"^fix-\d+$", v) else f"'{v}' is not a fix step anchor such as fix-2",
    ),
    "versions": Field("mapping", check=_versions_check),
    "evidence": Field("strings"),
    "source": SOURCE_FIELD,
}

REFERENCE_FIELDS = {
    "title": Field("string", required=True, max_len=200),
    "url": Field("string", required=True, check=_url_check),
    "kind": Field("string", required=True, check=_one_of(REFERENCE_KINDS)),
}

CASE_FIELDS: dict[str, Field] = {
    "slug": Field("string", required=True, check=_slug_check),
    "title": Field("string", required=True, max_len=120),
    "summary": Field("string", required=True, max_len=600),
    "aliases": Field("strings", check=_slug_check),
    "tags": Field("any", required=True, validate=_check_tags),
    "applies_to": Field(
        "objects",
        required=True,
        min_items=1,
        fields={
            "software": Field("string", required=True, max_len=80),
            "versions": Field("string", required=True, max_len=120),
            "note": Field("string", max_len=400),
        },
    ),
    "symptoms": Field("strings", required=True, min_items=1),
    "signatures": Field("objects", required=True, min_items=1, fields=SIGNATURE_FIELDS),
    "related": Field("strings", check=_slug_check),
    "references": Field(
        "objects",
        required=True,
        min_items=3,
        fields=REFERENCE_FIELDS,
    ),
    "last_reviewed": Field("date", required=True),
    "reviewed_against": Field("mapping", check=_version_pins_check),
    "guide": Field("bool"),
    "do_first": Field("strings", max_len=400),
    "conditions": Field("objects", fields=CONDITION_FIELDS),
    "frames": Field("objects", fields=FRAME_FIELDS),
    "steps": Field("objects", fields=STEP_FIELDS),
}

HARMLESS_FIELDS: dict[str, Field] = {
    "id": Field("string", required=True, check=_slug_check),
    "title": Field("string", required=True, max_len=160),
    "pattern": Field("string", required=True),
    "flags": Field("strings", check=_one_of(SIGNATURE_FLAGS)),
    "printed_by": Field("string", required=True, max_len=300),
    "versions": Field("mapping", check=_versions_check),
    "source": SOURCE_FIELD,
    "why": Field("string", required=True, max_len=1200),
    "instead": Field("string", required=True, max_len=800),
    "examples": Field("examples", required=True, min_items=1, fields=EXAMPLE_FIELDS),
    "references": Field(
        "objects",
        required=True,
        min_items=1,
        fields=REFERENCE_FIELDS,
    ),
}


def case_front_matter_check(data: Any) -> list[Problem]:
    """Every schema problem in one case's front matter, each with the YAML path it concerns."""
    if not isinstance(data, dict):
        return [((), "front matter must be a mapping of field names to values")]
    problems = fields_check(data, CASE_FIELDS, ())
    for index, signature in enumerate(data.get("signatures") or []):
        if isinstance(signature, dict):
            problems += signature_check(signature, ("signatures", index))
    for index, condition in enumerate(data.get("conditions") or []):
        if isinstance(condition, dict):
            problems += [(("conditions", index, key), message) for key, message in condition_problems(condition)]
    for index, frame in enumerate(data.get("frames") or []):
        if isinstance(frame, dict):
            problems += frame_check(frame, ("frames", index))
    evidence_ids = [
        item.get("id") for key in ("signatures", "conditions", "frames") for item in data.get(key) or [] if isinstance(item, dict)
    ]
    problems += duplicates_check(
        evidence_ids, ("signatures",), "evidence id (signatures, conditions and frames share one namespace)"
    )
    known = set(evidence_ids)
    for index, step in enumerate(data.get("steps") or []):
        if not isinstance(step, dict):
            continue
        for e_index, ref in enumerate(step.get("evidence") or []):
            if isinstance(ref, str) and ref not in known:
                problems.append(
                    (
                        ("steps", index, "evidence", e_index),
                        f"'{ref}' is not the id of a signature, condition or frame of this case",
                    )
                )
    problems += duplicates_check(
        [s.get("anchor") for s in data.get("steps") or [] if isinstance(s, dict)], ("steps",), "step anchor"
    )
    return problems


def example_text(example: Any) -> str:
    """An example is a line, or `{text, release}` naming the program release that prints it."""
    return example.get("text", "") if isinstance(example, dict) else example


def frame_check(frame: dict, path: tuple) -> list[Problem]:
    """A frame pattern matches one stack frame written `path/to/file.py:function`."""
    pattern = frame.get("pattern")
    if not isinstance(pattern, str):
        return []
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        return [(path + ("pattern",), f"pattern does not compile: {err}")]
    problems: list[Problem] = [(path + ("pattern",), m) for m in pattern_risks(pattern) if "fixed piece" not in m]
    depth = frame.get("depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 50):
        problems.append((path + ("depth",), "depth must be a whole number from 1 to 50"))
    for index, example in enumerate(frame.get("examples") or []):
        if isinstance(example, str) and not compiled.search(example):
            problems.append((path + ("examples", index), "pattern does not match this example"))
    return problems


def harmless_check(data: Any) -> list[Problem]:
    """Every schema problem in one known-harmless entry."""
    if not isinstance(data, dict):
        return [((), "a harmless entry must be a mapping of field names to values")]
    problems = fields_check(data, HARMLESS_FIELDS, ())
    if not problems:
        problems += signature_check(data, ())
    return problems


def signature_flags(signature: dict) -> int:
    return re.IGNORECASE if "ignorecase" in (signature.get("flags") or []) else 0


def signature_check(signature: dict, path: tuple) -> list[Problem]:
    """A pattern must compile, stay linear on long lines, and match every example given for it."""
    problems: list[Problem] = []
    pattern = signature.get("pattern")
    weight = signature.get("weight")
    if isinstance(weight, (int, float)) and not isinstance(weight, bool):
        if not WEIGHT_RANGE[0] <= weight <= WEIGHT_RANGE[1]:
            problems.append((path + ("weight",), f"weight {weight} is outside {WEIGHT_RANGE[0]:g}..{WEIGHT_RANGE[1]:g}"))
    if not isinstance(pattern, str):
        return problems
    try:
        compiled = re.compile(pattern, signature_flags(signature))
    except re.error as err:
        return problems + [(path + ("pattern",), f"pattern does not compile: {err}")]
    problems += [(path + ("pattern",), message) for message in pattern_risks(pattern)]
    for name in compiled.groupindex:
        if not FACT_NAME_RE.match(name):
            problems.append((path + ("pattern",), f"named group '{name}' must be snake_case (it becomes a fact name)"))
    for index, example in enumerate(signature.get("examples") or []):
        example = example_text(example)
        if isinstance(example, str) and not compiled.search(example):
            problems.append((path + ("examples", index), "pattern does not match this example"))
    return problems


def pattern_risks(pattern: str) -> list[str]:
    """Constructs that make Python's backtracking engine slow or that a per-line matcher cannot honour."""
    risks: list[str] = []
    if "(?<" in pattern.replace("(?P<", ""):
        risks.append("lookbehind is not allowed in signature patterns")
    if re.search(r"\(\?[aiLmsux]+[):]", pattern):
        risks.append("inline flags such as (?i) are not allowed; use the signature's flags list")
    if "\\n" in pattern:
        risks.append("a signature pattern matches one line; it cannot contain \\n")
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return risks
    if not required_literals(pattern):
        risks.append(
            "the pattern needs a fixed piece of text (3+ characters) that every match contains, "
            "in each alternative, so the engine can skip logs without it"
        )
    if _nested_repeat(parsed, inside_repeat=False):
        risks.append("nested repetition such as (a+)+ can backtrack exponentially; rewrite the pattern")
    return risks


_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)}


def _nested_repeat(items: Any, inside_repeat: bool) -> bool:
    for op, arg in items:
        if op in _REPEATS:
            low, high, sub = arg
            unbounded = high == sre_parse.MAXREPEAT or high > 1
            if inside_repeat and unbounded:
                return True
            if _nested_repeat(sub, inside_repeat or unbounded):
                return True
        elif op == sre_parse.SUBPATTERN:
            if _nested_repeat(arg[-1], inside_repeat):
                return True
        elif op == sre_parse.BRANCH:
            if any(_nested_repeat(branch, inside_repeat) for branch in arg[1]):
                return True
    return False
