"""Hand-off from log diagnosis: facts answer the questions they can, and the wizard skips those."""

import html
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import html5lib
import pytest
from django.conf import settings

from kb.diagnose import diagnosis_run
from troubleshooter.engine import tree_step
from troubleshooter.facts import answers_from_facts, version_tuple
from troubleshooter.links import wizard_url_for_facts

FIXTURE_LOGS = Path(settings.BASE_DIR) / "tests" / "fixtures" / "logs"


@pytest.fixture(scope="module")
def tree(library):
    return library.trees["hang"]


def test_the_stage_answers_when_the_job_stops(tree):
    assert answers_from_facts(tree, {"stage": "compiling and loading fused kernels"})["when"] == "compile"
    assert answers_from_facts(tree, {"stage": "creating trainer"})["when"] == "trainer"


def test_the_launcher_answers_the_launcher_question(tree):
    assert answers_from_facts(tree, {"launcher": "srun"})["launcher"] == "srun"


@pytest.mark.parametrize("container", ["kubernetes", "docker"])
def test_where_the_ranks_run_is_answered_by_the_container_the_log_shows(tree, container):
    assert answers_from_facts(tree, {"container": container})["container"] == container


@pytest.mark.parametrize(
    "link_layer, fabric",
    [("RoCE", "roce"), ("IB", "infiniband"), (["Ethernet"], "roce"), (["InfiniBand"], "infiniband")],
)
def test_the_rdma_fabric_is_answered_by_the_link_layer_the_log_shows(tree, link_layer, fabric):
    """NCCL's "NET/IB : Using [0]mlx5_0:1/RoCE" line (as a case reads it) or a pasted ibv_devinfo's link_layer."""
    assert answers_from_facts(tree, {"link_layer": link_layer})["ib-fabric"] == fabric


@pytest.mark.parametrize(
    "version, answer",
    [
        ("2.1.2", "lt-2.2"),
        ("2.2.0", "2.2-2.4"),
        ("2.3.1+cu121", "2.2-2.4"),
        ("2.4.1", "2.2-2.4"),
        ("2.5.0", "ge-2.5"),
        ("2.7.0a0+git1234", "ge-2.5"),
        ("1.13.1", "lt-2.2"),
    ],
)
def test_the_pytorch_version_falls_into_its_range(tree, version, answer):
    assert answers_from_facts(tree, {"torch_version": version})["torch"] == answer


def test_the_transformer_engine_version_picks_the_bootstrap_branch(tree):
    assert answers_from_facts(tree, {"te_version": "1.7"})["te-version"] == "lt-1.9"
    assert answers_from_facts(tree, {"te_version": "1.12.0"})["te-version"] == "ge-1.9"


def test_collectives_of_one_family_answer_that_family(tree):
    """FSDP ranks split between _ALLGATHER_BASE and _REDUCE_SCATTER_BASE are one rank behind, not a code desync."""
    assert answers_from_facts(tree, {"op_type": ["_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE"]})["train-log"] == "allgather"


def test_unrelated_collectives_on_different_ranks_answer_mixed(tree):
    assert answers_from_facts(tree, {"op_type": ["ALLREDUCE", "BROADCAST"]})["train-log"] == "mixed"


def test_the_first_framework_in_the_mapping_order_wins(tree):
    answers = answers_from_facts(tree, {"frameworks": ["hf-accelerate", "peft", "megatron-lm"]})
    assert answers["framework"] == "megatron"
    assert answers_from_facts(tree, {"frameworks": ["autotrain-advanced", "hf-accelerate"]})["framework"] == "autotrain"


def test_facts_that_answer_nothing_are_left_out(tree):
    assert (
        answers_from_facts(
            tree,
            {
                "stage": "reading tea leaves",
                "launcher": "",
                "torch_version": "unknown",
                "interfaces": ["eth0"],
                "timeout_ms": 600000,
            },
        )
        == {}
    )


def test_version_text_is_read_up_to_the_first_non_number():
    assert version_tuple("2.3.1+cu121") == (2, 3, 1)
    assert version_tuple("v1.9") == (1, 9)
    assert version_tuple("nightly") is None


def test_prefilled_answers_skip_the_questions_the_log_answered(tree):
    facts = {
        "stage": "creating trainer",
        "op_type": "BROADCAST",
        "frameworks": ["autotrain-advanced"],
        "launcher": "accelerate",
        "kernel_version": "5.4.0",
    }
    step = tree_step(tree, answers_from_facts(tree, facts))
    assert step.question.id == "trainer-link"
    assert [a.question.id for a in step.path] == ["when", "trainer-log", "trainer-framework"]


@pytest.mark.django_db
def test_the_wizard_url_for_facts_opens_at_the_first_unanswered_question(client, loaded_content, tree):
    url = wizard_url_for_facts(
        {"stage": "userbuffers setup", "launcher": "mpirun", "frameworks": ["megatron-lm", "transformer-engine"]}
    )
    assert urlsplit(url).path == "/troubleshoot/hang/"
    pairs = parse_qsl(urlsplit(url).query)
    answers = {k: v for k, v in pairs if not k.startswith("_")}
    assert {"when": "init", "init-log": "userbuffers", "te-launcher": "mpirun"}.items() <= answers.items()
    assert "compile-what" not in answers, "the log's answer for a branch this path can no longer reach is left out"
    assert {v for k, v in pairs if k == "_log"} == set(answers), "every answer is marked as read from the log"
    assert [k for k, _ in pairs] == sorted(k for k, _ in pairs)
    page = client.get(url).content.decode()
    assert tree.question("te-version").text in page


@pytest.mark.django_db
@pytest.mark.parametrize("log", sorted(p.name for p in FIXTURE_LOGS.glob("*.log")))
def test_a_real_diagnosis_hands_off_to_a_working_wizard_page(client, loaded_content, log):
    """The facts the diagnosis engine reads from a real log make a wizard URL that answers 200."""
    diagnosis = diagnosis_run([(log, (FIXTURE_LOGS / log).read_bytes())])
    url = wizard_url_for_facts(diagnosis.facts)
    response = client.get(url)
    assert response.status_code == 200, (url, response.content[:500])


@pytest.mark.django_db
def test_a_megatron_log_continues_at_the_first_question_it_leaves_open(client, loaded_content, tree):
    """Real content: Megatron's fused-kernel stage answers when the job stops, its framework what is compiled."""
    log = (FIXTURE_LOGS / "heldout" / "megatron-fused-srun-label-torch24.log").read_text()
    results = client.post("/diagnose", {"log": log}).content.decode()
    link = re.search(r'<a class="button" href="([^"]+)">Continue in the troubleshooter', results).group(1)
    page = client.get(html.unescape(link))
    assert page.status_code == 200
    shown = html5lib.parse(page.content, namespaceHTMLElements=False)
    assert "".join(shown.find(".//h2[@id='step-focus']").itertext()) == tree.question("megatron-state").text
    listed = ["".join(li.itertext()) for li in shown.findall(".//ol[@class='answer-list']/li")]
    assert tree.question("when").choice("compile").label in listed[0]
    assert tree.question("compile-what").choice("megatron").label in listed[1]
    assert all("from your log" in item for item in listed)
    assert any("srun" in item for item in listed), "the launcher the log names waits for its question"


@pytest.mark.parametrize(
    "stage, answer",
    [("building datasets", "preprocess"), ("building dataset indices", "preprocess"), ("building model", "trainer")],
)
def test_megatron_start_up_stages_answer_when_the_job_stops(tree, stage, answer):
    assert answers_from_facts(tree, {"stage": stage})["when"] == answer


@pytest.mark.parametrize("log", ["k8s-shm-lasterror-only-torch20.log", "roce-status12-srun-torch24.log"])
def test_a_confident_diagnosis_hands_off_past_what_its_case_settles(client, loaded_content, tree, log):
    """Smart Answers never asks what it knows: a docker-shm or InfiniBand diagnosis opens the troubleshooter past
    the questions its case settles, each listed as the log's answer with a Change link."""
    results = client.post("/diagnose", {"log": (FIXTURE_LOGS / "heldout" / log).read_text()}).content.decode()
    assert "Most likely cause" in results
    link = re.search(r'<a class="button" href="([^"]+)">Continue in the troubleshooter', results).group(1)
    page = client.get(html.unescape(link))
    shown = html5lib.parse(page.content, namespaceHTMLElements=False)
    focus = shown.find(".//h2[@id='step-focus']")
    assert focus is None or "".join(focus.itertext()) != tree.question(tree.start).text
    listed = ["".join(li.itertext()) for li in shown.findall(".//ol[@class='answer-list']/li")]
    assert len(listed) >= 2 and all("from your log" in item for item in listed)


@pytest.mark.parametrize(
    "log, shown, first_open",
    [
        ("k8s-shm-lasterror-only-torch20.log", "In Kubernetes pods", "How much shared memory should each container get, in GiB?"),
        ("roce-status12-srun-torch24.log", "RoCE (RDMA over Ethernet)", "Which RDMA devices and ports should NCCL use?"),
    ],
)
def test_the_hand_off_never_asks_where_the_ranks_run_or_on_which_fabric_when_the_log_shows_it(
    client, loaded_content, log, shown, first_open
):
    """Issue 33, item 1, as a new user found it: a `kubectl logs` paste was asked "Where do the ranks run?" and a paste
    whose NCCL lines say ".../RoCE" was asked "Which RDMA fabric is it?"."""
    results = client.post("/diagnose", {"log": (FIXTURE_LOGS / "heldout" / log).read_text()}).content.decode()
    link = re.search(r'<a class="button" href="([^"]+)">Continue in the troubleshooter', results).group(1)
    tree = html5lib.parse(client.get(html.unescape(link)).content, namespaceHTMLElements=False)
    assert "".join(tree.find(".//h2[@id='step-focus']").itertext()).strip() == first_open
    listed = ["".join(li.itertext()) for li in tree.findall(".//ol[@class='answer-list']/li")]
    assert any(shown in item and "from your log" in item for item in listed)
