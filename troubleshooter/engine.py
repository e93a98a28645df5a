"""The wizard's step engine: (tree, answers) -> the next question or the leaf. Pure: no Django, no I/O.

State is a flat mapping of question id -> answer, as it travels in the URL query. Walking always
starts at the tree's start and follows the answers, so a state names its step whatever order the
answers were given in, and a question the log already answered is skipped. A step also says which
questions can still come (`ahead`): answers to those are worth keeping (revisiting an earlier
question keeps later ones), answers to any other question no longer matter (state.py drops them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from troubleshooter.echo import text_shown
from troubleshooter.rules import RULES
from troubleshooter.tree_model import Leaf, Question, Tree, tree_reachable


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
    ahead: frozenset[str] = frozenset()  # questions that can still be asked after this step, the current one included

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
            for index, asked_id in enumerate(node.asks):
                question = tree.nodes[asked_id]
                if asked_id not in clean:
                    return Step(tree, clean, tuple(path), question=question, ahead=frozenset(node.asks[index:]))
                path.append(Answered(question, clean[asked_id]))
            return Step(tree, clean, tuple(path), leaf=node)
        if node_id not in clean:
            ahead = frozenset(n for n in tree_reachable(tree, node_id) if tree.question(n) is not None)
            return Step(tree, clean, tuple(path), question=node, ahead=ahead)
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
