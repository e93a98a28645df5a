"""A model-parallel layout is a fact only when the log shows it in use: Megatron prints every size in its argument
table and its start-up lines, and a size of 1 is no layout (issue 33: 'tensor-parallel, pipeline-parallel' was read
from sizes of 1)."""

from __future__ import annotations

import pytest

from diagnosis.engine import log_diagnose
from diagnosis.rules import Rules


def _layouts(text: str) -> list[str]:
    return log_diagnose([("job.log", text.encode())], Rules(signatures=[])).facts.get("parallelism", [])


@pytest.mark.parametrize(
    "line",
    [
        "  tensor_model_parallel_size ...................... 1\n  pipeline_model_parallel_size .................... 1\n",
        "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 1, "
        "pipeline-model-parallel size: 1\n",
        "> initializing tensor model parallel with size 1\n> initializing pipeline model parallel with size 1\n",
        "tp_size=1 pp_size=1 cp_size=1 ep_size=1\n",
    ],
)
def test_sizes_of_one_are_no_model_parallel_layout(line):
    assert _layouts(line) == []


def test_sizes_above_one_are_the_layouts_in_use():
    text = "using world size: 16, data-parallel size: 2, tensor-model-parallel size: 4, pipeline-model-parallel size: 2\n"
    assert _layouts(text) == ["tensor-parallel", "pipeline-parallel"]


def test_a_layout_named_without_a_size_still_counts():
    assert _layouts("[rank0]: building PipelineModule with 4 stages\n") == ["pipeline-parallel"]
