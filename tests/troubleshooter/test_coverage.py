"""Meta-tests over the real content: every case the wizard promises is a leaf with its own script."""

import pytest

from troubleshooter.engine import tree_step
from troubleshooter.tree_model import tree_walk
from troubleshooter.rules import RULES

REQUIRED_CASES = [
    "megatron-fused-kernel-compile-hang",
    "llama3-fsdp-allgather-timeout",
    "autotrain-creating-trainer-broadcast-timeout",
    "transformer-engine-mpi-tp-overlap-hang",
    "nccl-socket-ifname-wrong-interface",
    "docker-shm-too-small",
    "pcie-p2p-acs-hang",
    "infiniband-roce-misconfig",
    "collective-mismatch-desync",
    "rendezvous-store-timeout",
    "rank0-long-preprocessing-barrier-timeout",
    "torch-extensions-stale-lock",
    "nccl-watchdog-timeout-triage",
    "host-oom-kill",
    "duplicate-gpu-rank-mapping",
    "gpu-hardware-fault",
    "checkpoint-save-timeout",
    "checkpoint-rename-race",
]


def _reachable_leaves(library):
    return {(tree_id, tree_step(tree, state).leaf.id) for tree_id, tree in library.trees.items() for state in tree_walk(tree)}


@pytest.mark.parametrize("slug", REQUIRED_CASES)
def test_every_promised_case_is_reachable_as_a_leaf(library, slug):
    leaves = {library.trees[t].nodes[leaf].case for t, leaf in _reachable_leaves(library)}
    assert slug in leaves


def test_every_case_has_its_own_script_parts(library):
    """No two cases share the exact same list of parts: each diagnosis gets a script of its own."""
    by_case = {}
    for tree in library.trees.values():
        for leaf in tree.leaves():
            by_case.setdefault(leaf.case, set()).add(leaf.script)
    seen = {}
    for case, scripts in by_case.items():
        for script in scripts:
            assert script not in seen or seen[script] == case, f"{case} and {seen.get(script)} share {script}"
            seen[script] = case


def test_every_leaf_is_reachable(library):
    reached = _reachable_leaves(library)
    for tree_id, tree in library.trees.items():
        for leaf in tree.leaves():
            assert (tree_id, leaf.id) in reached


def test_every_value_question_has_a_rule_and_an_example_that_passes_it(library):
    for tree in library.trees.values():
        for question in tree.questions():
            if question.kind == "value":
                assert question.rule in RULES
                assert RULES[question.rule].check(question.example) == (None, question.example)
