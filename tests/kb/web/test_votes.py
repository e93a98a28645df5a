"""Votes a reader can believe (issue 33 item 5, issue 34 finding 6): each browser answers once per item and kind and is
told its answer back; a signed ballot counts once whatever target it is sent as; one address counts a few times
per item however often its cookies are cleared, the sharer of a report always; `/vote` is limited per address;
a tally names steps by title and counts votes and distinct voters apart; who voted is kept only as hashes."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from kb import page_cache
from kb.models import Case, Vote
from kb.reports import store
from kb.reports.voters import VOTER_COOKIE
from tests.kb.web.test_reports import share
from tests.kb.web.test_results_page import sixty_four_rank_log

pytestmark = pytest.mark.django_db

SLUG = "llama3-fsdp-allgather-timeout"
CASE_URL = f"/kb/{SLUG}/"


@pytest.fixture(autouse=True)
def fresh_pages():
    page_cache.clear()  # a case page kept by another test would show another test's counts
    yield
    page_cache.clear()


def browser(address: str = "192.0.2.10") -> Client:
    """A browser of its own (its own cookies) at a client address."""
    return Client(REMOTE_ADDR=address)


def report_vote(client: Client, report_id: str, answer: str = "yes", **extra) -> object:
    return client.post("/vote", {"target": "report", "report": report_id, "answer": answer, **extra})


def case_page_ballot(client: Client) -> str:
    return re.search(r'name="ballot" value="([^"]+)"', client.get(CASE_URL).content.decode()).group(1)


@pytest.fixture
def shared_report():
    sharer = browser("198.51.100.7")
    report, _ = share(sharer, sixty_four_rank_log())
    return sharer, report


def test_a_second_vote_from_the_same_browser_does_not_change_the_count(shared_report):
    _, report = shared_report
    reader = browser()
    assert report_vote(reader, report.id, "no").status_code == 200
    again = report_vote(reader, report.id, "yes")
    assert again.status_code == 409
    assert report.votes.count() == 1 and report.votes.get().answer == "no"


def test_a_second_vote_is_told_the_answer_that_was_counted(shared_report):
    _, report = shared_report
    reader = browser()
    report_vote(reader, report.id, "no")
    again = report_vote(reader, report.id, "yes").content.decode()
    assert "already counted" in again and "it did not fix it" in again


def test_a_teammates_vote_from_another_browser_counts(shared_report):
    _, report = shared_report
    report_vote(browser("192.0.2.10"), report.id, "no")
    assert report_vote(browser("192.0.2.11"), report.id, "yes").status_code == 200
    assert report.votes.count() == 2


def test_the_report_page_shows_a_voter_their_own_answer_and_every_reader_the_tally(shared_report):
    _, report = shared_report
    step = report.data["matches"][0]["steps"][1]
    reader, teammate = browser("192.0.2.10"), browser("192.0.2.11")
    report_vote(reader, report.id, "yes", step=step["id"])
    own = reader.get(report.get_absolute_url()).content.decode()
    assert "Your answer was already counted" in own and f"step “{step['title']}”" in own
    assert 'class="vote-form"' not in own
    theirs = teammate.get(report.get_absolute_url()).content.decode()
    assert 'class="vote-form"' in theirs, "the first vote does not close the report to everyone else"
    assert f"1 person voted: 1 said it fixed the job (1 named step “{step['title']}”)" in theirs
    assert f"named step “{step['id']}”" not in theirs


def test_the_sharers_vote_counts_after_strangers_from_the_sharers_own_network(shared_report):
    sharer, report = shared_report
    for n in range(store.VOTES_PER_ADDRESS_PER_ITEM):
        assert report_vote(browser("198.51.100.7"), report.id, "no").status_code == 200, f"stranger {n}"
    assert report_vote(browser("198.51.100.7"), report.id, "no").status_code == 409, "a fourth stranger is capped"
    assert report_vote(sharer, report.id, "yes").status_code == 200
    assert report.votes.filter(answer="yes").count() == 1


def test_twenty_votes_from_one_address_with_cookies_cleared_count_only_up_to_the_cap(shared_report):
    _, report = shared_report
    answers = [report_vote(browser("203.0.113.5"), report.id, "yes").status_code for _ in range(20)]
    assert report.votes.count() == store.VOTES_PER_ADDRESS_PER_ITEM == 3
    assert answers.count(200) == 3 and set(answers[3:]) == {409}


def test_a_signed_ballot_counts_once_whatever_target_it_is_sent_as():
    """Issue 34: one case-page ballot was counted three times, as a case, a troubleshooter and a result vote."""
    reader = browser()
    ballot = case_page_ballot(reader)
    statuses = [
        browser(f"192.0.2.{20 + n}").post("/vote", {"target": target, "ballot": ballot, "ref": SLUG, "answer": "yes"}).status_code
        for n, target in enumerate(["case", "wizard", "result"])
    ]
    assert statuses == [200, 409, 409]
    assert Vote.objects.count() == 1 and Vote.objects.get().target == "case"


def test_one_browser_votes_once_per_case_through_its_page_however_many_pages_it_loads():
    reader = browser()
    first, second = case_page_ballot(reader), case_page_ballot(reader)
    assert first != second
    assert reader.post("/vote", {"target": "case", "ballot": first, "answer": "yes"}).status_code == 200
    assert reader.post("/vote", {"target": "case", "ballot": second, "answer": "no"}).status_code == 409
    assert Vote.objects.count() == 1


def test_a_ballot_that_names_no_kind_is_refused():
    from django.core import signing

    from kb.report_views import BALLOT_SALT

    old = signing.dumps({"n": "nonce-before-kinds", "c": SLUG, "t": []}, salt=BALLOT_SALT)
    assert browser().post("/vote", {"target": "case", "ballot": old, "answer": "yes"}).status_code == 400
    assert Vote.objects.count() == 0


def test_votes_from_one_address_are_limited_per_minute():
    reader_address = "192.0.2.77"
    slugs = list(Case.objects.filter(guide=False).values_list("slug", flat=True)[: store.VOTES_PER_ADDRESS_PER_MINUTE + 1])
    statuses = []
    for slug in slugs:
        reader = browser(reader_address)
        page = reader.get(f"/kb/{slug}/").content.decode()
        ballot = re.search(r'name="ballot" value="([^"]+)"', page).group(1)
        statuses.append(reader.post("/vote", {"target": "case", "ballot": ballot, "answer": "yes"}).status_code)
    assert statuses[:-1] == [200] * store.VOTES_PER_ADDRESS_PER_MINUTE and statuses[-1] == 429


def test_the_case_page_tally_names_the_step_by_its_title():
    reader = browser()
    reader.post("/vote", {"target": "case", "ballot": case_page_ballot(reader), "answer": "yes", "step": "fix-2"})
    title = next(s["title"] for s in Case.objects.get(slug=SLUG).fix_steps() if s["id"] == "fix-2")
    counts = reader.get(CASE_URL).content.decode()
    assert f"1 named step “{title}”" in counts and "named step “fix-2”" not in counts


def test_the_case_page_counts_pastes_votes_and_distinct_voters_apart():
    reader = browser()
    page = reader.post("/diagnose", {"log": sixty_four_rank_log()}).content.decode()
    result_ballot = re.search(r'name="ballot" value="([^"]+)"', page).group(1)
    assert reader.post("/vote", {"target": "result", "ballot": result_ballot, "answer": "yes"}).status_code == 200
    assert reader.post("/vote", {"target": "case", "ballot": case_page_ballot(reader), "answer": "yes"}).status_code == 200
    best = Vote.objects.get(target="result").case_slug
    counts = re.search(r'<p class="counts">(.*?)</p>', reader.get(f"/kb/{best}/").content.decode(), re.S).group(1)
    if best == SLUG:
        assert "answer to 1 paste; 1 person voted (2 votes): 2 said it fixed the job" in counts
    else:
        assert "answer to 1 paste; 1 person voted: 1 said it fixed the job" in counts


def test_who_voted_is_kept_only_as_hashes(shared_report):
    _, report = shared_report
    reader = browser("192.0.2.10")
    report_vote(reader, report.id, "no")
    cookie = reader.cookies[VOTER_COOKIE]
    vote = report.votes.get()
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert len(vote.voter) == len(vote.address) == 64
    assert cookie.value not in str(Vote.objects.values().get()) and "192.0.2.10" not in str(Vote.objects.values().get())


def test_an_address_header_from_a_client_over_tcp_is_ignored(shared_report):
    """Only nginx, over the unix socket, says who the client is; a TCP client cannot pose as other addresses."""
    _, report = shared_report
    for n in range(5):
        report_vote(Client(REMOTE_ADDR="203.0.113.9", HTTP_X_REAL_IP=f"10.0.0.{n}"), report.id, "yes")
    assert report.votes.count() == store.VOTES_PER_ADDRESS_PER_ITEM


def test_behind_the_proxy_the_client_address_is_nginxs_x_real_ip(shared_report):
    _, report = shared_report
    for n in range(5):
        report_vote(Client(REMOTE_ADDR="", HTTP_X_REAL_IP=f"10.0.0.{n}"), report.id, "yes")
    assert report.votes.count() == 5


def test_a_nul_in_a_vote_field_is_dropped_not_a_server_error(shared_report):
    _, report = shared_report
    response = report_vote(browser(), report.id, "no", step="fix-1\x00", other_case="x\x00y", next="/\x00")
    assert response.status_code in (200, 302) and "\x00" not in str(Vote.objects.values().get())


def test_a_second_vote_without_javascript_links_back_to_the_page_voted_on(shared_report):
    _, report = shared_report
    reader, url = browser(), report.get_absolute_url()
    assert report_vote(reader, report.id, "no", next=url).status_code == 302
    again = report_vote(reader, report.id, "yes", next=url)
    assert again.status_code == 409 and f'<a href="{url}">Back to the page you voted on</a>' in again.content.decode()
