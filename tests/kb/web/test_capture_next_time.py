"""When a log shows a timeout but not why, the page offers a script that records what the next run needs,
built from what the log lacks (content/trees/capture.yaml), with the log's launcher and PyTorch answered."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.kb.html_checks import assert_valid_html

pytestmark = pytest.mark.django_db

TIMEOUT = (
    "[rank1]:[E1123 04:00:01.100 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for "
    "600001 milliseconds before timing out.\n"
)
LAUNCH = "+ torchrun --nnodes 1 --nproc_per_node 2 train.py\n"
PYSPY = (
    "=== rank 0 ===\nProcess 501: python train.py\nPython v3.11.9 (/usr/bin/python3.11)\n\n"
    'Thread 501 (active): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2501)\n'
    "    train_step (train.py:88)\n"
    "=== rank 1 ===\nProcess 502: python train.py\nPython v3.11.9 (/usr/bin/python3.11)\n\n"
    'Thread 502 (active): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2501)\n'
    "    train_step (train.py:88)\n"
)


def _capture_link(client, log: str) -> str | None:
    response = client.post("/diagnose", {"log": log})
    page = response.content.decode()
    assert_valid_html(response.content)
    found = re.search(r'<p class="capture">.*?<a href="([^"]+)"', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_a_timeout_with_nothing_that_explains_it_offers_the_capture_script_with_the_launcher_answered(client):
    link = _capture_link(client, LAUNCH + TIMEOUT)
    assert link is not None and urlsplit(link).path == "/troubleshoot/capture/"
    answers = parse_qs(urlsplit(link).query)
    assert answers["launcher"] == ["torchrun"] and "stacks" not in answers


def test_stacks_in_the_log_are_not_asked_for_again(client):
    link = _capture_link(client, LAUNCH + TIMEOUT + PYSPY)
    assert link is not None and parse_qs(urlsplit(link).query)["stacks"] == ["have"]


def test_a_log_whose_cause_is_known_offers_no_capture_script(client):
    from tests.kb.web.test_results_page import sixty_four_rank_log

    assert _capture_link(client, sixty_four_rank_log()) is None


def test_the_capture_script_turns_on_the_flight_recorder_and_asks_ncclras(client):
    """Answered to the end (no stacks, no dumps, torchrun, PyTorch 2.5+): the script exports the recorder's
    variables and runs ncclras among its checks."""
    query = "stacks=none&recorder=none&launcher=torchrun&torch=ge-2.5&dump-dir=/shared/fr"
    page = client.get(f"/troubleshoot/capture/?{query}", follow=True).content.decode()
    assert "Record where every rank waits" in page
    script = b"".join(client.get(f"/troubleshoot/capture/fix.sh?{query}", follow=True)).decode()
    assert "export TORCH_NCCL_DUMP_ON_TIMEOUT=" in script or "TORCH_NCCL_DUMP_ON_TIMEOUT" in script
    assert "ncclras -t 10" in script and "py-spy" in script


def test_the_troubleshooter_link_never_leads_to_the_capture_tree():
    """Facts that answer more of the capture tree's questions (launcher, PyTorch, stacks, recorder) than of any
    other tree's: the hand-off to the troubleshooter still goes to a tree that diagnoses."""
    from troubleshooter.links import capture_url_for_facts, wizard_url_for_facts

    facts = {"launcher": "torchrun", "torch_version": "2.6.0", "rank_stacks": "present", "flight_recorder": "present"}
    assert urlsplit(capture_url_for_facts(facts)).path == "/troubleshoot/capture/"
    assert urlsplit(wizard_url_for_facts(facts)).path == "/troubleshoot/hang/"


def test_each_capture_leaf_cites_the_triage_steps_of_what_its_script_records():
    """A leaf's fix steps are the triage guide's sections on the evidence its script parts collect, no more."""
    from django.conf import settings

    from troubleshooter.library import library_read
    from troubleshooter.tree_model import Leaf

    subject = {
        "rank-stacks": "stacks",
        "debug-server": "stacks",
        "flight-recorder": "Flight Recorder",
        "nccl-ras": "NCCL which ranks",
        "nccl-debug-triage": "transport",
    }
    guide = (settings.CONTENT_DIR / "cases" / "nccl-watchdog-timeout-triage.md").read_text()
    titles = dict((anchor, title) for title, anchor in re.findall(r"^### \d+\. (.+) \{#(fix-\d+)\}$", guide, re.M))
    tree = library_read(settings.CONTENT_DIR).trees["capture"]
    for leaf in (node for node in tree.nodes.values() if isinstance(node, Leaf)):
        cited = [titles[step] for step in leaf.fix_steps]
        wanted = [subject[part] for part in leaf.script]
        assert all(any(word in title for title in cited) for word in wanted), (leaf.id, cited)
        assert all(any(word in title for word in wanted) for title in cited), (leaf.id, cited)
