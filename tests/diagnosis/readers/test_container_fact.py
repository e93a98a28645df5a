"""Where the ranks run, as a paste shows it: the troubleshooter asks it of every network and shared-memory fix, and
the hand-off must not ask it again when the log already says (issue 33, item 1)."""

import pytest

from diagnosis.readers.facts import fact_literals, facts_extract
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator


def facts(text: str) -> dict:
    return facts_extract(TextScanner(text, fact_literals()), LineLocator(text))[0]


@pytest.mark.parametrize(
    "line, container",
    [
        ("$ kubectl -n vision logs pytorchjob-detr-ft-worker-0", "kubernetes"),
        ("Events for PyTorchJob llama-ft: pod llama-ft-worker-3 restarted", "kubernetes"),
        ("$ docker run --gpus all --shm-size=1g -it nvcr.io/nvidia/pytorch:24.05-py3 torchrun train.py", "docker"),
        ("$ podman exec -it trainer-0 python -c 'import torch'", "docker"),
    ],
)
def test_the_command_a_paste_shows_says_where_the_ranks_run(line, container):
    assert facts(line + "\n[rank0]: step 10 loss 2.31\n")["container"] == container


def test_a_docker_network_interface_says_nothing_of_where_the_ranks_run():
    line = "node-1:4121:4190 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0> [1]docker0:172.17.0.1<0>"
    assert "container" not in facts(line + "\n")
