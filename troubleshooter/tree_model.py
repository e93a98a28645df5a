"""Decision trees as data: questions leading to leaves, and the walks over them.

A tree is questions leading to leaves. A question is a `choice` (each choice names the next node) or a
`value` (a free answer checked by a named rule, with one `next`). A leaf names a case, the fix steps that
apply and the script parts, and may `ask` context questions that return to it. How nodes connect is said
once, by `Tree.edges`; every walk is built on it. Reading and checking tree files is tree_file.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Iterator


@dataclass(frozen=True)
class FactMap:
    """How one fact from a log diagnosis answers a choice question."""

    fact: str
    values: dict[str, str] = field(default_factory=dict)  # fact value -> choice id (first match in order wins)
    versions: tuple[tuple[str | None, str], ...] = ()  # (upper bound exclusive or None, choice id), in order
    many: str | None = None  # choice id when a list fact holds more than one distinct value


@dataclass(frozen=True)
class Choice:
    id: str
    label: str
    help: str = ""
    next: str | None = None


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # "choice" | "value"
    text: str
    help: str = ""
    role: str | None = None
    choices: tuple[Choice, ...] = ()
    rule: str | None = None
    example: str | None = None
    next: str | None = None  # value questions
    facts: tuple[FactMap, ...] = ()

    def choice(self, choice_id: str) -> Choice | None:
        return next((c for c in self.choices if c.id == choice_id), None)

    def next_for(self, answer: str) -> str | None:
        if self.kind == "value":
            return self.next
        choice = self.choice(answer)
        return choice.next if choice else None

    def label_for(self, answer: str) -> str:
        choice = self.choice(answer) if self.kind == "choice" else None
        return choice.label if choice else answer


@dataclass(frozen=True)
class Leaf:
    id: str
    title: str
    case: str
    diagnosis: str
    fix_steps: tuple[str, ...]
    script: tuple[str, ...]  # part ids, in script order
    asks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tree:
    id: str
    title: str
    summary: str
    start: str
    nodes: dict[str, Question | Leaf]
    path: str  # the file, as shown in errors
    purpose: str = "diagnose"  # diagnose: explains a hang; capture: records what the next one needs

    def question(self, node_id: str) -> Question | None:
        node = self.nodes.get(node_id)
        return node if isinstance(node, Question) else None

    def questions(self) -> list[Question]:
        return [n for n in self.nodes.values() if isinstance(n, Question)]

    def leaves(self) -> list[Leaf]:
        return [n for n in self.nodes.values() if isinstance(n, Leaf)]

    def asked(self) -> set[str]:
        """Questions that leaves ask for their scripts (they return to the leaf, they do not branch)."""
        return {q for leaf in self.leaves() for q in leaf.asks}

    def role_questions(self, role: str) -> list[Question]:
        """Several questions may give one role (on different ways through the tree), never two on one way."""
        return [q for q in self.questions() if q.role == role]

    def edges(self, node_id: str) -> list[tuple[str, str]]:
        """(answer, next node) for every way out of a node: the one place that knows how nodes connect.
        A value question's answer is its example; leaves have none (asked questions return to their leaf)."""
        node = self.nodes[node_id]
        if isinstance(node, Leaf):
            return []
        if node.kind == "choice":
            return [(c.id, c.next) for c in node.choices if c.next]
        return [(node.example or "", node.next)] if node.next else []

    def successors(self, node_id: str) -> list[str]:
        return [target for _, target in self.edges(node_id)]


def tree_reachable(tree: Tree, start: str | None = None) -> set[str]:
    """Nodes reachable from `start` (the tree's start by default), the questions leaves ask included."""
    seen: set[str] = set()
    stack = [start or tree.start]
    while stack:
        node_id = stack.pop()
        if node_id in seen or node_id not in tree.nodes:
            continue
        seen.add(node_id)
        node = tree.nodes[node_id]
        stack.extend(node.asks if isinstance(node, Leaf) else tree.successors(node_id))
    return seen


def tree_cycle(tree: Tree) -> list[str]:
    """A cycle through the branching questions as [node, ..., node], or [] when there is none."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node_id: str, trail: list[str]) -> list[str]:
        state[node_id] = 1
        for target in tree.successors(node_id):
            if state.get(target) == 1:
                return trail[trail.index(target) :] + [node_id, target] if target in trail else [node_id, target]
            if target not in state:
                found = visit(target, trail + [node_id])
                if found:
                    return found
        state[node_id] = 2
        return []

    for node_id in tree.nodes:
        if node_id not in state:
            found = visit(node_id, [])
            if found:
                return found
    return []


def tree_branches(tree: Tree) -> Iterator[tuple[list[tuple[str, str]], Leaf]]:
    """Every way through the branching questions to a leaf: ([(question id, answer)...], leaf).
    Asked questions are not expanded here (see tree_walk)."""

    def walk(node_id: str, trail: list[tuple[str, str]]) -> Iterator[tuple[list[tuple[str, str]], Leaf]]:
        node = tree.nodes[node_id]
        if isinstance(node, Leaf):
            yield trail, node
            return
        for answer, target in tree.edges(node_id):
            yield from walk(target, trail + [(node_id, answer)])

    yield from walk(tree.start, [])


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
