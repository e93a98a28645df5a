"""The curators' report (issue 33 item 6): drafts that pass the content validator against their own examples (every
cluster the real pastes form), one cluster per message whatever the rank prefix or the wrapping, no line that a case,
the triage guide or the known-harmless list explained, counts in pastes, and a curator's Dismiss and This-is-case."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.test import Client

from diagnosis.text import log_text, paste_repair
from kb.content.schema import SIGNATURE_FIELDS, fields_check, signature_check
from kb.models import LineTemplate
from kb.reports import templates as tpl

pytestmark = pytest.mark.django_db

PASTES = Path(__file__).resolve().parents[2] / "fixtures" / "pastes"
SETS = ("tuned", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")  # not heldout6, heldout7: held out


def real_paste_lines() -> list[str]:
    lines = []
    for paste_set in SETS:
        for path in sorted((PASTES / paste_set).glob("*.log")):
            for line in paste_repair(log_text(path.read_bytes())[0]).text.split("\n"):
                if len(line) >= 12 and tpl.INTERESTING_RE.search(line) and tpl._draftable(tpl.line_template(line)):
                    lines.append(line)
    return lines


def draft_problems(template: str, example: str | None = None) -> list:
    parsed = yaml.safe_load(tpl.draft_signature(template, example))
    assert isinstance(parsed, list) and len(parsed) == 1
    signature = parsed[0]
    return fields_check(signature, SIGNATURE_FIELDS, ()) + signature_check(signature, ())


def test_every_draft_from_the_real_pastes_passes_the_validator_against_its_example():
    lines = real_paste_lines()
    assert len(lines) > 300
    tree = tpl.drain()
    first: dict[int, str] = {}
    members: dict[int, list[str]] = {}
    for line in lines:
        template = tpl.line_template(line)
        cluster, _ = tree.add_log_message(template)
        first.setdefault(cluster.cluster_id, template)
        members.setdefault(cluster.cluster_id, []).append(line)
    assert len(first) > 100
    failures = {}
    for cluster in tree.clusters:
        problems = draft_problems(cluster.get_template(), first[cluster.cluster_id])
        if problems:
            failures[cluster.get_template()] = problems
    assert not failures, failures


def test_a_draft_matches_the_lines_of_its_cluster():
    lines = [
        f"[rank{r}]:[E1128 10:{r:02d}:00.{r}12345 {900 + r} frob/Widget.cpp:{40 + r}] Frobnicator ERROR widget {r * 7} failed"
        f" after {r}.5s on /data/run{r}/x.bin (0x{r}f)"
        for r in range(4)
    ]
    clusters = tpl.cluster_lines([tpl.line_template(line) for line in lines])
    assert len(clusters) == 1
    pattern = yaml.safe_load(tpl.draft_signature(clusters[0].template))[0]["pattern"]
    assert all(re.search(pattern, line) for line in lines), pattern
    assert not draft_problems(clusters[0].template)


WATCHDOG = (
    "[E1128 04:12:40.208341770 ProcessGroupNCCL.cpp:685] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Frobnicator watchdog"
    " caught a widget timeout: WorkWidget(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for"
    " 6000{r}1 milliseconds before timing out."
)
PREFIXES = ["[rank{r}]:", "[default{r}]:", "[default{r}]:[rank{r}]:", "{r}: ", "  {r}: ", "[{r}]<stderr>:", "[1,{r}]<stderr>:"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_one_message_from_eight_ranks_is_one_cluster_whatever_the_launcher_prefix(prefix):
    lines = [prefix.format(r=r) + WATCHDOG.format(r=r) for r in range(8)]
    templates = {tpl.line_template(line) for line in lines}
    assert len(templates) == 1, templates
    assert "rank" not in next(iter(templates)).split(" ")[0].lower()


def test_rank_prefixed_lines_of_a_paste_make_one_stored_cluster_counted_once(client):
    log = "\n".join(f"[rank{r}]:" + WATCHDOG.format(r=r) for r in range(8)) + "\n"
    client.post("/diagnose", {"log": log})
    rows = list(LineTemplate.objects.filter(origin="unmatched"))
    assert len(rows) == 1, [r.template for r in rows]
    assert (rows[0].pastes, rows[0].count) == (1, 8)
    assert "Rank <num>" in rows[0].template and "[rank" not in rows[0].template


def wrapped(line: str, width: int) -> list[str]:
    return [line[i : i + width] for i in range(0, len(line), width)]


def test_wrapped_halves_the_diagnosis_rejoined_are_not_clusters(client):
    one = "2026-11-28 10:00:01 frobnicator ERROR widget 17 failed to reach the gizmo service after 3 retries, giving up now"
    two = "2026-11-28 10:00:02 frobnicator ERROR widget 18 failed to reach the gizmo service after 4 retries, giving up now"
    log = "\n".join(wrapped(one, 80) + wrapped(two, 80)) + "\nshort tail\n"
    assert paste_repair(log).joins, "the paste must be one the diagnosis re-joins"
    client.post("/diagnose", {"log": log})
    templates = list(LineTemplate.objects.filter(origin="unmatched").values_list("template", flat=True))
    assert len(templates) == 1, templates
    assert templates[0].endswith("retries, giving up now") and templates[0].startswith("<time> frobnicator ERROR")


def test_lines_the_triage_guide_or_the_harmless_list_explained_are_not_listed(client):
    log = "\n".join(
        [
            "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2,"
            " OpType=BROADCAST, NumelIn=251883520, NumelOut=251883520, Timeout(ms)=600000) ran for 600078 milliseconds"
            " before timing out.",
            "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2,"
            " OpType=BROADCAST, NumelIn=251883520, NumelOut=251883520, Timeout(ms)=600000) ran for 600079 milliseconds"
            " before timing out.",
            "/usr/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py:4964: UserWarning: barrier(): using"
            " the device under current context. You can specify `device_id` in `init_process_group` to mute this warning.",
            "2026-11-28 10:00:01 frobnicator ERROR widget 17 failed",
        ]
    )
    page = client.post("/diagnose", {"log": log}).content.decode()
    assert "nccl-watchdog-timeout-triage" in page  # the guide matched
    templates = list(LineTemplate.objects.values_list("template", flat=True))
    assert templates == ["<time> frobnicator ERROR widget <num> failed"], templates


def test_counts_are_pastes_with_their_lines(client):
    log = "\n".join(f"2026-11-28 10:00:0{i} frobnicator ERROR widget {i} failed" for i in range(3))
    client.post("/diagnose", {"log": log})
    client.post("/diagnose", {"log": log})
    row = LineTemplate.objects.get()
    assert (row.pastes, row.count) == (2, 6)


def staff_client(django_user_model) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.create_user("curator", password="pw-curator-1", is_staff=True))
    return client


def csrf(client: Client, path: str = "/curate/") -> str:
    page = client.get(path).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def a_cluster(client) -> LineTemplate:
    client.post("/diagnose", {"log": "2026-11-28 10:00:01 frobnicator ERROR widget 17 failed\n"})
    return LineTemplate.objects.get()


def test_dismiss_hides_a_cluster_until_it_has_twice_the_pastes(client, django_user_model):
    row = a_cluster(client)
    curator = staff_client(django_user_model)
    assert "frobnicator ERROR" in curator.get("/curate/").content.decode()
    response = curator.post(f"/curate/{row.id}", {"action": "dismiss", "csrfmiddlewaretoken": csrf(curator)})
    assert response.status_code == 302 and response["Location"].startswith("/curate/")
    assert "frobnicator ERROR" not in curator.get("/curate/").content.decode()
    assert "frobnicator ERROR" in curator.get("/curate/?show=dismissed").content.decode()
    client.post("/diagnose", {"log": "2026-11-28 10:00:02 frobnicator ERROR widget 18 failed\n"})
    assert "frobnicator ERROR" in curator.get("/curate/").content.decode(), "twice the pastes: listed again"
    row.refresh_from_db()
    assert row.pastes == 2 and not row.dismissed


def test_this_is_case_links_a_cluster_and_says_where_its_draft_goes(client, django_user_model):
    row = a_cluster(client)
    curator = staff_client(django_user_model)
    token = csrf(curator)
    response = curator.post(f"/curate/{row.id}", {"action": "link", "case": "host-oom-kill", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.case_slug == "host-oom-kill"
    assert "content/cases/host-oom-kill.md" in curator.get("/curate/").content.decode()
    refused = curator.post(f"/curate/{row.id}", {"action": "link", "case": "no-such-case", "csrfmiddlewaretoken": token})
    assert refused.status_code == 400
    row.refresh_from_db()
    assert row.case_slug == "host-oom-kill"


def test_an_htmx_answer_swaps_the_cluster_in_place(client, django_user_model):
    row = a_cluster(client)
    curator = staff_client(django_user_model)
    response = curator.post(
        f"/curate/{row.id}", {"action": "dismiss", "csrfmiddlewaretoken": csrf(curator)}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert response.status_code == 200 and body.startswith(f'<li class="cluster" id="cluster-{row.id}">')
    assert "Show again" in body and "<html" not in body
    assert "HX-Request" in response["Vary"]


def test_curator_actions_need_staff_and_the_csrf_token(client, django_user_model):
    row = a_cluster(client)
    reader = Client()
    reader.force_login(django_user_model.objects.create_user("reader", password="pw-reader-1"))
    for who in (Client(), reader):
        response = who.post(f"/curate/{row.id}", {"action": "dismiss"})
        assert response.status_code == 302 and "/login" in response["Location"]
    curator = staff_client(django_user_model)
    assert curator.post(f"/curate/{row.id}", {"action": "dismiss"}).status_code == 403  # no CSRF token
    assert curator.get(f"/curate/{row.id}").status_code == 405
    row.refresh_from_db()
    assert row.dismissed_at is None and row.case_slug == ""
