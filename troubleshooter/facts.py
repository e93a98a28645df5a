"""Hand-off from log diagnosis to the wizard: facts read from a log answer the questions they can.

Which fact answers which question, and how its values map to choices, is data in the tree
(`facts:` on a question), so adding a mapping is editing YAML, not this module. The fact names and
their types are the diagnosis engine's, declared once in diagnosis.conditions.FACTS.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from troubleshooter.tree_model import FactMap, Tree


def answers_from_facts(tree: Tree, facts: dict[str, Any]) -> dict[str, str]:
    """The answers a diagnosis already gives, keyed by question id; questions it cannot answer are left out."""
    answers: dict[str, str] = {}
    for question in tree.questions():
        for fact_map in question.facts:
            answer = fact_answer(fact_map, facts.get(fact_map.fact))
            if answer is not None:
                answers[question.id] = answer
                break
    return answers


def fact_answer(fact_map: FactMap, value: Any) -> str | None:
    """One fact value through one mapping.

    A list whose values lead to different answers (ranks stuck in unrelated collectives) answers
    `many`; values that agree (_ALLGATHER_BASE on some ranks, _REDUCE_SCATTER_BASE on others: both
    FSDP) answer what they agree on. Otherwise the first value of the mapping, in its order, found in the fact."""
    if value is None or value == "" or value == []:
        return None
    items = _distinct(value if isinstance(value, (list, tuple, set)) else [value])
    if fact_map.versions:
        return _version_answer(fact_map.versions, items[0])
    if fact_map.many and len(items) > 1 and len({_mapped(fact_map, item) for item in items}) > 1:
        return fact_map.many
    folded = {item.casefold() for item in items}
    for fact_value, answer in fact_map.values.items():
        if fact_value.casefold() in folded:
            return answer
    return None


def _mapped(fact_map: FactMap, item: str) -> str | None:
    return next((answer for key, answer in fact_map.values.items() if key.casefold() == item.casefold()), None)


def _distinct(values: Any) -> list[str]:
    seen: list[str] = []
    for value in values if not isinstance(values, set) else sorted(values, key=str):
        text = str(value).strip()
        if text and text not in seen:
            seen.append(text)
    return seen


def version_tuple(text: str) -> tuple[int, ...] | None:
    """'2.3.1+cu121' -> (2, 3, 1); None when the text does not start with a number."""
    match = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def _version_answer(ranges: tuple[tuple[str | None, str], ...], text: str) -> str | None:
    version = version_tuple(text)
    if version is None:
        return None
    for below, answer in ranges:
        if below is None or version < tuple(int(p) for p in below.split(".")):
            return answer
    return None
