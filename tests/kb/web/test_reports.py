"""Shared reports, votes and the curators' report (issue 10): secrets never stored, expiry and purge, only the
creator deletes, one vote per report, staff-only curation, Drain-style templates."""

from __future__ import annotations

import datetime as dt
import io
import re

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from kb.models import CaseMatchDay, ContentState, LineTemplate, Report, Vote
from kb.reports import store
from kb.reports.redact import clean_text, mask_text, redact_text
from kb.reports.templates import cluster_lines, draft_pattern, draft_signature, line_template
from tests.kb.web.test_results_page import sixty_four_rank_log

pytestmark = pytest.mark.django_db

# (secret as it appears in a log, the part that must never be stored). Formats: Hugging Face user tokens
# (hf_ + 34), GitHub classic (ghp_ + 36) and fine-grained (github_pat_ + 82) tokens, AWS key ids and secret
# keys (AWS docs' example values), W&B 40-hex API keys, OAuth bearer tokens, URL credentials, PEM keys.
SECRETS = [
    ("export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"),
    ("huggingface_hub.login(token='hf_QwErTyUiOpAsDfGhJkLzXcVbNm98765432')", "hf_QwErTyUiOpAsDfGhJkLzXcVbNm98765432"),
    (
        "git clone https://ghp_1234567890abcdefghijklmnopqrstuvwxyzAB@github.com/org/repo",
        "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    ),
    (
        "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('"SecretAccessKey": "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"', "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"),
    ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    (
        "wandb: Appending key for api.wandb.ai to your netrc file: wandb login 89abcdef0123456789abcdef0123456789abcdef",
        "89abcdef0123456789abcdef0123456789abcdef",
    ),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.abc123XYZ' https://x", "eyJhbGciOiJIUzI1NiJ9"),
    ("MASTER_ADDR=postgres://trainer:S3cr3t!pass@10.0.0.4:5432/db", "S3cr3t!pass"),
    ("pip install --index-url https://builder:tok-9f8e7d6c@pypi.internal.example/simple pkg", "tok-9f8e7d6c"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDxY1rZmV3RkFnZk1hY2hpbmVLZXlGb3JUZXN0aW5nT25seQAAAJgAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq1N3fakefakefakefakefakefakefakefakefakefakefake0\n",
        "MIIEowIBAAKCAQEA7bq1N3",
    ),
    ("redis password=hunter2hunter2 connecting", "hunter2hunter2"),
]
MARKER = (
    "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
    "OpType=_ALLGATHER_BASE, NumelIn=131334656, NumelOut=1050677248, Timeout(ms)=600000) ran for 600512 milliseconds "
    "before timing out."
)


@pytest.mark.parametrize("text, secret", SECRETS)
def test_each_secret_is_redacted(text, secret):
    assert secret not in redact_text(text)
    assert "[REDACTED]" in redact_text(text)


def test_ordinary_log_lines_are_left_alone():
    for line in (
        MARKER,
        "gpu-node-3:4100:4100 [0] NCCL INFO comm 0x55d0c0a01e0 rank 0 nranks 4 commId 0x6c2b - Init COMPLETE",
        "Training Epoch: 1/1, step 811/1200 completed (loss: 1.28)",
    ):
        assert redact_text(line) == line


def test_masking_hides_hosts_addresses_and_user_names():
    text = "gpu-node-3:4100:4100 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0> host db1.corp.example.com /home/alice/run.py"
    masked = mask_text(text, hosts=["gpu-node-3"])
    for private in ("gpu-node-3", "10.1.2.3", "db1.corp.example.com", "alice"):
        assert private not in masked
    assert "NCCL INFO Bootstrap" in masked


def share(client, log: str, **extra) -> tuple[Report, str]:
    page = client.post("/diagnose", {"log": log}).content.decode()
    payload = re.search(r'name="payload" value="([^"]+)"', page).group(1)
    response = client.post("/d/", {"payload": payload, "log": log, **extra})
    assert response.status_code == 302
    report = Report.objects.get(id=response["Location"].rsplit("/", 1)[1])
    return report, response["Location"]


def test_share_stores_a_redacted_report_at_an_unguessable_url(client):
    secrets_log = "\n".join(text for text, _ in SECRETS)
    log = MARKER + "\n" + secrets_log + "\n" + MARKER.replace("rank3", "rank4").replace("Rank 3", "Rank 4") + "\n"
    report, url = share(client, log, store_log="on")
    assert len(report.id) >= 22 and re.fullmatch(r"/d/[A-Za-z0-9_-]{22,}", url)  # >= 128 random bits
    page = client.get(url).content.decode()
    markdown = client.get(url + ".md").content.decode()
    stored_log = client.get(url + "/log.txt").content.decode()
    raw = Report.objects.filter(id=report.id).values_list("data", "log").get()
    for _, secret in SECRETS:
        assert secret not in str(raw) and secret not in page and secret not in markdown and secret not in stored_log
    assert "Watchdog caught collective operation timeout" in page and "Most likely cause" in markdown


def test_the_full_log_is_stored_only_when_ticked_and_masking_on_request(client):
    log = MARKER + "\nnode-a17:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.9.8.7<0>\n"
    report, _ = share(client, log)
    assert report.log == ""
    masked, _ = share(client, log, mask="on", store_log="on")
    assert masked.masked and "10.9.8.7" not in masked.log and "10.9.8.7" not in str(masked.data)


def test_a_report_survives_a_fresh_client_and_expires(client, settings):
    from django.test import Client

    report, url = share(client, sixty_four_rank_log())
    fresh = Client()
    assert fresh.get(url).status_code == 200
    assert "delete link" not in fresh.get(url).content.decode(), "only the creator sees the delete link"
    assert (report.expires_at - timezone.now()).days in (29, 30)
    Report.objects.filter(id=report.id).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert fresh.get(url).status_code == 404


def test_expiry_is_a_setting(client, settings):
    settings.KB_REPORT_EXPIRY_DAYS = 7
    report, _ = share(client, MARKER)
    assert (report.expires_at - timezone.now()).days in (6, 7)


def test_purge_reports_deletes_only_expired_ones(client):
    old, _ = share(client, MARKER)
    new, _ = share(client, MARKER)
    Report.objects.filter(id=old.id).update(expires_at=timezone.now() - dt.timedelta(days=1))
    out = io.StringIO()
    call_command("purge_reports", stdout=out)
    assert "Deleted 1 expired report" in out.getvalue()
    assert list(Report.objects.values_list("id", flat=True)) == [new.id]


def test_only_the_delete_token_deletes(client):
    from django.test import Client

    report, url = share(client, MARKER)
    page = client.get(url).content.decode()
    delete_url = re.search(r'href="(http://testserver/d/[^"]+/delete\?token=[^"]+)"', page).group(1).replace("&amp;", "&")
    stranger = Client(enforce_csrf_checks=False)
    assert stranger.post(f"{url}/delete", {"token": ""}).status_code == 403
    assert stranger.post(f"{url}/delete", {"token": "not-the-token"}).status_code == 403
    assert Report.objects.filter(id=report.id).exists()
    token = delete_url.split("token=")[1]
    assert stranger.post(f"{url}/delete", {"token": token}).status_code == 200
    assert not Report.objects.filter(id=report.id).exists()


def test_share_and_votes_need_the_csrf_token():
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.post("/d/", {"payload": "x"}).status_code == 403
    assert strict.post("/vote", {"target": "case", "answer": "yes"}).status_code == 403


def test_a_forged_snapshot_is_refused(client):
    assert client.post("/d/", {"payload": "eyJmb3JnZWQiOnRydWV9:abc:def"}).status_code == 400
    assert Report.objects.count() == 0


def test_one_vote_per_report_and_no_log_text_in_votes(client):
    report, url = share(client, sixty_four_rank_log())
    first = client.post("/vote", {"target": "report", "report": report.id, "answer": "no"})
    assert first.status_code in (200, 302)
    again = client.post("/vote", {"target": "report", "report": report.id, "answer": "yes"})
    assert again.status_code == 409
    assert Vote.objects.count() == 1
    vote = Vote.objects.get()
    assert vote.case_slug == report.best_slug and "Watchdog" not in str(Vote.objects.values().get())
    assert LineTemplate.objects.filter(origin="voted-wrong").exists(), "a wrong vote feeds the curators"


def test_a_vote_on_a_result_counts_on_the_case_page(client):
    page = client.post("/diagnose", {"log": sixty_four_rank_log()}).content.decode()
    ballot = re.search(r'name="ballot" value="([^"]+)"', page).group(1)
    slug = re.search(r'<a class="button" id="do-first" href="/kb/([a-z0-9-]+)/#(fix[-0-9]*)"', page)
    response = client.post("/vote", {"target": "result", "ballot": ballot, "answer": "yes", "step": slug.group(2)})
    assert response.status_code in (200, 302)
    assert client.post("/vote", {"target": "result", "ballot": ballot, "answer": "yes"}).status_code == 409
    from kb.reports.store import case_feedback

    counts = case_feedback(slug.group(1))
    assert counts["matched"] == 1 and counts["yes"] == 1 and counts["steps"][0]["step"] == slug.group(2)


CASE_SLUG = "llama3-fsdp-allgather-timeout"


def test_case_feedback_counts_the_window_only():
    """A case page's counts, read in one SQL statement (a kept page is keyed by them): the last 30 days only."""
    today = timezone.now().date()
    CaseMatchDay.objects.create(slug=CASE_SLUG, day=today, count=3)
    CaseMatchDay.objects.create(slug=CASE_SLUG, day=today - dt.timedelta(days=29), count=2)
    CaseMatchDay.objects.create(slug=CASE_SLUG, day=today - dt.timedelta(days=31), count=50)
    CaseMatchDay.objects.create(slug="another-case", day=today, count=7)
    for n, (answer, step) in enumerate(
        [("yes", "fix-2"), ("yes", "fix-1"), ("yes", "fix-2"), ("yes", ""), ("no", ""), ("other", "")]
    ):
        store.vote_record(target="case", answer=answer, ballot=f"case:{n}", case_slug=CASE_SLUG, step=step)
    old = store.vote_record(target="case", answer="yes", ballot="case:old", case_slug=CASE_SLUG, step="fix-3")
    Vote.objects.filter(id=old.id).update(created_at=timezone.now() - dt.timedelta(days=31))
    store.vote_record(target="case", answer="no", ballot="case:another", case_slug="another-case")
    assert store.case_feedback(CASE_SLUG) == {
        "days": 30,
        "matched": 5,
        "yes": 4,
        "no": 1,
        "other": 1,
        "steps": [{"step": "fix-2", "n": 2}, {"step": "fix-1", "n": 1}],
        "votes": 6,
        "voters": 6,
    }
    assert store.case_feedback("no-such-case") == {
        "days": 30,
        "matched": 0,
        "yes": 0,
        "no": 0,
        "other": 0,
        "steps": [],
        "votes": 0,
        "voters": 0,
    }


def test_a_case_view_reads_the_served_revision_with_its_counts_in_one_query(django_assert_num_queries):
    ContentState.objects.all().delete()
    ContentState.objects.create(revision="0123abcd4567")
    CaseMatchDay.objects.create(slug=CASE_SLUG, day=timezone.now().date(), count=2)
    store.vote_record(target="case", answer="no", ballot="case:1", case_slug=CASE_SLUG)
    with django_assert_num_queries(1):
        revision, counts = store.case_page_state(CASE_SLUG)
    assert revision == "0123abcd4567" == ContentState.loaded_revision()
    assert counts == store.case_feedback(CASE_SLUG) and (counts["matched"], counts["no"]) == (2, 1)


def test_a_database_never_loaded_serves_no_revision_to_a_case_view():
    ContentState.objects.all().delete()
    assert store.case_page_state(CASE_SLUG)[0] == "" == ContentState.loaded_revision()


def test_curators_page_needs_a_staff_login(client, django_user_model):
    assert client.get("/curate/").status_code == 302
    user = django_user_model.objects.create_user("reader", password="pw-reader-1")
    client.force_login(user)
    assert client.get("/curate/").status_code == 302
    staff = django_user_model.objects.create_user("curator", password="pw-curator-1", is_staff=True)
    client.force_login(staff)
    client.post("/diagnose", {"log": "2026-01-01 12:00:00 frobnicator ERROR widget 17 failed on /data/x/y\n"})
    page = client.get("/curate/").content.decode()
    assert "frobnicator ERROR widget &lt;num&gt; failed" in page and "pattern:" in page


def test_templates_mask_variable_parts_and_cluster():
    a = line_template("2026-11-02 10:00:01 node-3 ERROR job 1234 failed after 0x1f retries on /home/bob/x.py")
    assert "bob" not in a and "1234" not in a and "0x1f" not in a
    clusters = cluster_lines([line_template(f"Connection to peer {p} refused by server") for p in ("alpha", "beta", "gamma")])
    assert len(clusters) == 1 and clusters[0].count == 3 and clusters[0].template == "Connection to peer <*> refused by server"


def test_draft_signature_matches_its_line_and_is_front_matter():
    line = "NCCL WARN Net : Connection closed by remote peer node-7.example.com<51234>"
    template = line_template(line)
    assert re.search(draft_pattern(template), clean_text(line))
    draft = draft_signature(template)
    assert draft.startswith("  - id: ") and "\n    pattern: " in draft and "release:" in draft
    signature = yaml.safe_load(draft)[0]
    assert re.search(signature["pattern"], signature["examples"][0]["text"]) and re.search(signature["pattern"], clean_text(line))


NATO = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima"]


def test_a_paste_records_its_line_templates_in_a_fixed_number_of_statements_whatever_their_number(
    django_assert_max_num_queries,
):
    """One read of the stored clusters, one update of those the paste grows and one insert of those it makes, in
    one transaction: not a statement per template, which made a paste nothing explained cost 17."""
    seen = [f"{word} daemon refused the request from the scheduler" for word in NATO]
    new = [f"{word} store lost its lease while the trainer waited on it" for word in NATO]
    store.templates_record("unmatched", seen)
    with django_assert_max_num_queries(5):
        assert store.templates_record("unmatched", seen + new) == 24
    rows = {row.template: row for row in LineTemplate.objects.filter(origin="unmatched")}
    assert len(rows) == 24
    assert {(rows[t].count, rows[t].pastes) for t in seen} == {(2, 2)} and {(rows[t].count, rows[t].pastes) for t in new} == {
        (1, 1)
    }
