"""The format documents list what the loaders accept and nothing they refuse (after datasette's test_docs.py).

content/FORMAT.md covers cases and harmless lines; content/trees/FORMAT.md covers trees, script parts, value
rules and roles. Every name is read from the code's own field specs (kb/content/schema.py,
troubleshooter/tree_file.py, parts.py; all written with kb/content/fields.py) and tables (rules.py, roles.py), so a field added to the code without its
documentation, or an example in the documentation that the loader would refuse, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from django.conf import settings

from kb.content.schema import (
    CASE_FIELDS,
    CONDITION_OPERATORS,
    HARMLESS_FIELDS,
    OPTIONAL_SECTIONS,
    REFERENCE_KINDS,
    REQUIRED_SECTIONS,
    SIGNATURE_FIELDS,
    SIGNATURE_FLAGS,
    SOFTWARE,
    TAG_VALUES,
)
from kb.content.fields import Field
from troubleshooter.parts import ENTRY_FIELDS, PART_FIELDS
from troubleshooter.roles import ROLE_VALUES
from troubleshooter.rules import RULES
from troubleshooter.tree_file import (
    CHOICE_FIELDS,
    CHOICE_QUESTION_FIELDS,
    FACT_MAP_FIELDS,
    LEAF_FIELDS,
    NODE_TYPES,
    TREE_FIELDS,
    VALUE_QUESTION_FIELDS,
    VERSION_RANGE_FIELDS,
)

CASES_DOC = (Path(settings.CONTENT_DIR) / "FORMAT.md").read_text(encoding="utf-8")
TREES_DOC = (Path(settings.CONTENT_DIR) / "trees" / "FORMAT.md").read_text(encoding="utf-8")


def yaml_blocks(doc: str) -> list[dict]:
    """The ```yaml examples of a document, parsed (a front-matter example's `---` lines are document breaks)."""
    blocks = [
        data for block in re.findall(r"```yaml\n(.*?)```", doc, re.S) for data in yaml.safe_load_all(block) if data is not None
    ]
    assert blocks and all(isinstance(b, dict) for b in blocks)
    return blocks


def yaml_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from yaml_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from yaml_keys(item)


def documented(name: str, doc: str, blocks: list[dict]) -> bool:
    """Written as a key in an example, or named in `backticks` in the prose (`name` or `name: value`)."""
    return name in {key for block in blocks for key in yaml_keys(block)} or f"`{name}`" in doc or f"`{name}: " in doc


def field_names(fields: dict[str, Field]) -> Iterator[str]:
    for name, field in fields.items():
        yield name
        if field.fields:
            yield from field_names(field.fields)


def refused_keys(data: dict, fields: dict[str, Field], where: str = "") -> list[str]:
    """Keys of an example that the schema would refuse, at any depth, as dotted paths."""
    refused = []
    for key, value in data.items():
        if key not in fields:
            refused.append(f"{where}{key}")
            continue
        nested = fields[key].fields
        for item in value if isinstance(value, list) else []:
            if nested and isinstance(item, dict):
                refused += refused_keys(item, nested, f"{where}{key}[].")
    return refused


def section(doc: str, heading: str) -> str:
    start = doc.index(heading)
    end = doc.find("\n#", start + len(heading))
    return doc[start : end if end != -1 else len(doc)]


# --- content/FORMAT.md: cases and harmless lines ------------------------------------------------------------

CASE_DOC_BLOCKS = yaml_blocks(CASES_DOC)


@pytest.mark.parametrize("name", sorted(set(field_names(CASE_FIELDS)) | set(field_names(HARMLESS_FIELDS))))
def test_every_case_and_harmless_field_is_documented(name):
    assert documented(name, CASES_DOC, CASE_DOC_BLOCKS), f"content/FORMAT.md does not mention the field '{name}'"


def test_the_documented_examples_use_only_fields_the_loader_accepts():
    for block in CASE_DOC_BLOCKS:
        schema = next((fields for fields in (CASE_FIELDS, HARMLESS_FIELDS, SIGNATURE_FIELDS) if set(block) <= set(fields)), None)
        assert schema is not None, f"no schema accepts all of {sorted(block)}"
        assert refused_keys(block, schema) == [], block


def test_the_tag_facets_and_values_are_the_schema_s():
    listed = re.findall(r"^- `([a-z]+)`: (.*?)(?=^- `|^\n)", section(CASES_DOC, "Allowed tag values"), re.M | re.S)
    documented_tags = {facet: tuple(v.strip() for v in values.split(",")) for facet, values in listed}
    assert documented_tags == TAG_VALUES
    front_matter = next(b for b in CASE_DOC_BLOCKS if "slug" in b)
    assert set(front_matter["tags"]) == set(TAG_VALUES)


def test_the_reference_kinds_are_the_schema_s():
    kinds = re.search(r"kind: \w+ +# ([a-z |]+)$", CASES_DOC, re.M).group(1)
    assert tuple(kinds.split(" | ")) == REFERENCE_KINDS


def test_the_condition_operators_are_the_schema_s():
    sentence = CASES_DOC[CASES_DOC.index("One operator per condition:") : CASES_DOC.index("The facts and their types")]
    assert set(re.findall(r"`([a-z_]+)`", sentence)) == set(CONDITION_OPERATORS)


def test_the_software_names_are_the_schema_s():
    names = re.search(r"Software names: (.*?)\. They appear", CASES_DOC, re.S).group(1)
    assert {re.sub(r"\s*\(.*\)", "", n).strip() for n in names.split(",")} == set(SOFTWARE)


def test_the_signature_flags_and_body_sections_are_the_schema_s():
    assert all(f"`{flag}`" in CASES_DOC for flag in SIGNATURE_FLAGS)
    table = re.findall(r"^\| [^|]+ \| `\{#([a-z-]+)\}`", section(CASES_DOC, "## Body"), re.M)
    assert tuple(table) == REQUIRED_SECTIONS
    assert all(f"`{{#{anchor}}}`" in CASES_DOC for anchor in OPTIONAL_SECTIONS)


# --- content/trees/FORMAT.md: trees, parts, rules and roles ---------------------------------------------------


def tree_doc_keys() -> dict[str, set[str]]:
    """Keys the tree document's examples use, by the kind of mapping they sit in."""
    seen: dict[str, set[str]] = {
        kind: set()
        for kind in (*NODE_TYPES, "tree", "choice entry", "fact map", "version range", "part", "any entry", *ENTRY_FIELDS)
    }

    def node(data: dict) -> None:
        seen[data["type"]] |= set(data)
        for choice in data.get("choices", []):
            seen["choice entry"] |= set(choice)
        facts(data.get("facts", []))

    def facts(maps: list[dict]) -> None:
        for fact_map in maps:
            seen["fact map"] |= set(fact_map)
            for version_range in fact_map.get("versions", []):
                seen["version range"] |= set(version_range)

    for block in yaml_blocks(TREES_DOC):
        if "start" in block:
            seen["tree"] |= set(block)
        elif "parts" in block:
            for part in block["parts"].values():
                seen["part"] |= set(part)
                for kind in ENTRY_FIELDS:
                    for entry in part.get(kind, []):  # `only` is shown once; it is allowed on every entry
                        seen[kind] |= set(entry) - {"only"}
                        seen["any entry"] |= set(entry) & {"only"}
        elif set(block) == {"facts"}:
            facts(block["facts"])
        else:
            for data in block.values():
                assert isinstance(data, dict) and data.get("type") in NODE_TYPES, f"an example the test cannot place: {block}"
                node(data)
    return seen


@pytest.mark.parametrize(
    "kind, accepted",
    [
        ("tree", TREE_FIELDS),
        ("choice", CHOICE_QUESTION_FIELDS),
        ("value", VALUE_QUESTION_FIELDS),
        ("leaf", LEAF_FIELDS),
        ("choice entry", CHOICE_FIELDS),
        ("fact map", FACT_MAP_FIELDS),
        ("version range", VERSION_RANGE_FIELDS),
        ("part", PART_FIELDS),
        ("any entry", {"only"}),
        *((kind, set(fields) - {"only"}) for kind, fields in ENTRY_FIELDS.items()),
    ],
)
def test_the_tree_examples_show_every_key_the_loader_accepts_and_no_other(kind, accepted):
    assert tree_doc_keys()[kind] == set(accepted), kind


def test_the_rules_table_is_the_rules():
    table = re.findall(r"^\| `([a-z-]+)` \|", section(TREES_DOC, "### Value question"), re.M)
    assert sorted(table) == sorted(RULES)


def test_the_roles_table_is_the_roles():
    rows = re.findall(r"^\| `([a-z]+)` \| (.*) \|$", section(TREES_DOC, "### Roles"), re.M)
    assert {role: tuple(re.findall(r"`([^`]+)`", values)) for role, values in rows} == ROLE_VALUES
