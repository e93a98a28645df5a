"""The wizard's step engine: (tree, answers) -> the next question or the leaf. Pure: no Django, no I/O.

State is a flat mapping of question id -> answer, as it travels in the URL query. Walking always
starts at the tree's start and follows the answers, so a state names its step whatever order the
answers were given in, answers off the current path are kept (revisiting an earlier question
keeps later ones) and a question the log already answered is skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Iterator, Mapping

from troubleshooter.rules import RULES
from troubleshooter.trees import Leaf, Question, Tree, tree_branches


class StateError(ValueError):
    """A state the tree cannot take: an unknown question, an invalid answer, or a loop.

    `node` names the question whose answer is at fault, when there is one, so a view can show that
    question again with the message."""

    def __init__(self, message: str, node: str | None = None) -> None:
        self.node = node
        super().__init__(message)


@dataclass(frozen=True)
class Answered:
    question: Question
    value: str

    @property
    def label(self) -> str:
        return self.question.label_for(self.value)


@dataclass(frozen=True)
class Step:
    tree: Tree
    answers: dict[str, str]  # every valid answer in the state, canonical, including those off the path
    path: tuple[Answered, ...]  # the answers used to get here, in the order they were asked
    question: Question | None = None
    leaf: Leaf | None = None

    @property
    def roles(self) -> dict[str, str]:
        """Answers on the path by role (launcher, torch, iface...): what the script composer reads."""
        return {a.question.role: a.value for a in self.path if a.question.role}


def answers_check(tree: Tree, answers: Mapping[str, str]) -> dict[str, str]:
    """Validate every answer against its question; return them canonical (trimmed, integers normalised)."""
    clean: dict[str, str] = {}
    for node_id, raw in answers.items():
        question = tree.question(node_id)
        if question is None:
            what = "a diagnosis, not a question" if node_id in tree.nodes else "not a question in this troubleshooter"
            raise StateError(f"'{text_shown(node_id)}' is {what}; the link may be from an older version.", None)
        value = raw.strip()
        if question.kind == "choice":
            if question.choice(value) is None:
                raise StateError(f"'{text_shown(value)}' is not one of the answers to “{question.text}”.", node_id)
        else:
            error, value = RULES[question.rule].check(value)
            if error:
                raise StateError(f"{question.text} {error}", node_id)
        clean[node_id] = value
    return clean


def tree_step(tree: Tree, answers: Mapping[str, str]) -> Step:
    """Follow the answers from the start to the first unanswered question, or to a leaf and its asked questions."""
    clean = answers_check(tree, answers)
    path: list[Answered] = []
    seen: set[str] = set()
    node_id = tree.start
    while True:
        if node_id in seen:
            raise StateError("This troubleshooter loops back on itself here; please report it.", node_id)
        seen.add(node_id)
        node = tree.nodes[node_id]
        if isinstance(node, Leaf):
            for asked_id in node.asks:
                question = tree.nodes[asked_id]
                if asked_id not in clean:
                    return Step(tree, clean, tuple(path), question=question)
                path.append(Answered(question, clean[asked_id]))
            return Step(tree, clean, tuple(path), leaf=node)
        if node_id not in clean:
            return Step(tree, clean, tuple(path), question=node)
        path.append(Answered(node, clean[node_id]))
        node_id = node.next_for(clean[node_id])


def step_resolve(tree: Tree, answers: Mapping[str, str]) -> tuple[Step, str | None]:
    """The step for a state, or, when the state is bad, the step without the bad answers and the first message.

    A wrong answer is dropped (so its question is asked again) and an unknown key is ignored; the
    caller answers 400 with the message but can still show a usable step."""
    remaining = dict(answers)
    first_error: str | None = None
    for _ in range(len(answers) + 1):
        try:
            return tree_step(tree, remaining), first_error
        except StateError as err:
            first_error = first_error or str(err)
            if err.node in remaining:
                del remaining[err.node]
            else:
                remaining = {key: value for key, value in remaining.items() if tree.question(key) is not None}
    return tree_step(tree, {}), first_error


def tree_walk(tree: Tree) -> Iterator[dict[str, str]]:
    """Every complete state of the tree: each branch to a leaf, crossed with every answer to the leaf's asks.

    Free values take their question's example. Used by tests to check every script the tree can produce."""
    for trail, leaf in tree_branches(tree):
        base = dict(trail)
        options: list[list[tuple[str, str]]] = []
        for asked_id in leaf.asks:
            question = tree.nodes[asked_id]
            if asked_id in base:
                continue
            if question.kind == "choice":
                options.append([(asked_id, c.id) for c in question.choices])
            else:
                options.append([(asked_id, question.example or "")])
        for combination in product(*options):
            yield {**base, **dict(combination)}


def state_query(answers: Mapping[str, str]) -> list[tuple[str, str]]:
    """Answers as URL query pairs, sorted by question id so equal states have equal URLs."""
    return sorted(answers.items())


def text_shown(text: str, limit: int = 60) -> str:
    """Untrusted text made fit to echo in a page or message: control characters visible as \\xNN (a NUL is not
    even valid HTML), long text shortened. HTML escaping is still the template's job."""
    visible = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return visible if len(visible) <= limit else visible[: limit - 3] + "..."
