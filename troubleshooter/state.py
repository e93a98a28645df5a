"""The wizard's state as it travels in the URL query: answers keyed by question id, which of them a log gave,
and which one the user is changing. Pure: no Django.

Two reserved keys sit beside the answers. Node ids start with a letter (tree_file.NODE_ID_RE), so a key
starting with '_' can never be a question: `_log` (repeated) names each answer read from a log, so every step
can say where an answer came from; `_change` names the answer the user is revising, so its question is shown
again with that answer selected. A state is canonical when it holds only answers that are on the path or can
still be asked: equal steps then have equal URLs, and a stale answer cannot resurface after an earlier change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from troubleshooter.echo import text_shown
from troubleshooter.engine import Step, StateError, step_resolve
from troubleshooter.facts import answers_from_facts
from troubleshooter.tree_model import Tree, tree_branches

LOG_KEY = "_log"
CHANGE_KEY = "_change"


@dataclass(frozen=True)
class State:
    answers: dict[str, str] = field(default_factory=dict)
    from_log: frozenset[str] = frozenset()  # ids of answers read from a log and not revised by the user since
    change: str | None = None  # the question whose answer the user is revising


def state_parse(query: Mapping[str, Sequence[str]]) -> State:
    """A query (key -> every value given for it) as a State; a question answered twice is a tampered or hand-made URL."""
    answers: dict[str, str] = {}
    from_log: set[str] = set()
    change: str | None = None
    for key, values in query.items():
        if key == LOG_KEY:
            from_log.update(values)
        elif key == CHANGE_KEY:
            if len(values) != 1:
                raise StateError("This link changes more than one answer at once; change one at a time.")
            change = values[0]
        elif len(values) != 1:
            raise StateError(f"'{text_shown(key)}' is answered {len(values)} times in this link; each question takes one answer.")
        else:
            answers[key] = values[0]
    return State(answers, frozenset(from_log), change)


def state_query(state: State) -> list[tuple[str, str]]:
    """The state as URL query pairs, sorted, so equal states have equal URLs."""
    pairs = list(state.answers.items()) + [(LOG_KEY, node_id) for node_id in state.from_log]
    if state.change is not None:
        pairs.append((CHANGE_KEY, state.change))
    return sorted(pairs)


def state_resolve(tree: Tree, state: State) -> tuple[Step, State, str | None]:
    """The step a state names, the canonical state for it, and the first problem with the state (None when valid).

    A bad answer is dropped (step_resolve), then so is every answer that is neither on the path nor still ahead,
    with its log mark; a change of an answer that is gone is forgotten."""
    step, error = step_resolve(tree, state.answers)
    kept = {a.question.id for a in step.path} | (step.ahead & step.answers.keys())
    canonical = State(
        answers={k: v for k, v in step.answers.items() if k in kept},
        from_log=state.from_log & kept,
        change=state.change if state.change in kept else None,
    )
    return step, canonical, error


def state_revised(state: State, node_id: str) -> State:
    """The state in which the user gives `node_id` a new answer: the log no longer vouches for it, and the change is done."""
    return State({k: v for k, v in state.answers.items() if k != node_id}, state.from_log - {node_id}, None)


def state_from_facts(tree: Tree, facts: Mapping[str, Any]) -> State:
    """The state a log diagnosis hands to the wizard: what its facts answer, each marked as read from the log,
    canonical, so the wizard opens at the first question the log left open.

    With a confident diagnosis (the fact `case`), what that case settles comes too (see _case_answers), so the
    wizard never asks again what the log already told."""
    answers = answers_from_facts(tree, dict(facts))
    answers = {**_case_answers(tree, str(facts.get("case") or ""), answers), **answers}
    _, canonical, _ = state_resolve(tree, State(answers, frozenset(answers)))
    return canonical


def _case_answers(tree: Tree, case: str, answers: Mapping[str, str]) -> dict[str, str]:
    """The answers a diagnosed case settles, among the ways to its leaves that agree with the facts' answers: when
    they all end at one leaf, the shortest way's answers, less those a script reads (a question with a role, such as
    InfiniBand or RoCE, is still asked); when they end at several, only the answers every way shares (the wizard
    then asks the question that tells those leaves apart)."""
    if not case:
        return {}
    ways = [
        (dict(trail), leaf.id)
        for trail, leaf in tree_branches(tree)
        if leaf.case == case and all(answers.get(question, answer) == answer for question, answer in trail)
    ]
    if not ways:
        return {}
    if len({leaf for _, leaf in ways}) == 1:
        shortest = min((way for way, _ in ways), key=len)
        return {q: a for q, a in shortest.items() if not getattr(tree.question(q), "role", None)}
    first = ways[0][0]
    return {q: a for q, a in first.items() if all(way.get(q) == a for way, _ in ways)}


def state_pairs_for_form(state: State, node_id: str) -> Iterable[tuple[str, str]]:
    """The query pairs a step's form carries besides the answer it asks for, sorted: the state less that answer."""
    return state_query(state_revised(state, node_id))
