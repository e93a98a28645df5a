"""Case and keyword-search pages rendered once per worker and reused (kb/page_cache.py, issue 14 item 4): each
reader still gets their own CSRF token and ballot, a vote counted anywhere shows on the next view, a content load
is served at once, htmx and plain requests get their own answers, and a worker keeps a bounded number of pages.

A response the test client saw no template rendered for came from the cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.shortcuts import render
from django.test import Client
from django.utils.autoreload import file_changed

from kb import page_cache, views
from kb.models import Alias, Case, ContentState
from kb.reports import store
from kb.reports.store import case_feedback
from kb.views import _case_context, _keyword_results
from tests.kb.case_files import case_text, write_case

pytestmark = pytest.mark.django_db

SLUG = "llama3-fsdp-allgather-timeout"
CASE_URL = f"/kb/{SLUG}/"
SEARCH_URL = "/search?q=NCCL_SOCKET_IFNAME"
HTMX = {"HTTP_HX_REQUEST": "true"}
FORM_TOKEN_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
HEADER_TOKEN_RE = re.compile(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'')


def kept(response) -> bool:
    """The answer came from the page cache: no template was rendered for it."""
    return response.status_code == 200 and not response.templates


def tokens(response) -> set[str]:
    page = response.content.decode()
    return set(FORM_TOKEN_RE.findall(page)) | set(HEADER_TOKEN_RE.findall(page))


def ballot(response) -> str:
    return re.search(r'name="ballot" value="([^"]+)"', response.content.decode()).group(1)


def counts(response) -> str:
    return re.search(r'<p class="counts">(.*?)</p>', response.content.decode(), re.S).group(1)


def without_tokens(page: str) -> str:
    return HEADER_TOKEN_RE.sub("hx-headers=TOKEN", FORM_TOKEN_RE.sub("csrfmiddlewaretoken=TOKEN", page))


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts as a freshly started worker."""
    page_cache.clear()


@pytest.mark.parametrize("url", [CASE_URL, SEARCH_URL])
def test_a_kept_page_gets_each_request_its_own_csrf_token_and_a_post_with_it_is_accepted(url):
    reader, other = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    first, second, others = reader.get(url), reader.get(url), other.get(url)
    assert not kept(first) and kept(second) and kept(others)
    for response in (first, second, others):
        assert len(tokens(response)) == 1, "hx-headers and every form carry the request's one token"
        assert "csrftoken" in response.cookies, "CsrfViewMiddleware sets its cookie on a kept page too"
    assert len(tokens(first) | tokens(second) | tokens(others)) == 3, "every request gets a token of its own"
    (token,) = tokens(second)
    assert reader.post("/search", {"q": "NCCL_SOCKET_IFNAME", "csrfmiddlewaretoken": token}).status_code == 303
    assert other.post("/search", {"q": "NCCL_SOCKET_IFNAME", "csrfmiddlewaretoken": token}).status_code == 403


def test_a_vote_from_a_kept_case_page_is_counted_once_and_returns_to_the_page():
    reader, other = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    reader.get(CASE_URL)
    page, others = reader.get(CASE_URL + "?from=wiki"), other.get(CASE_URL)
    assert kept(page) and kept(others)
    assert ballot(page) != ballot(others), "one ballot per page shown, not one per page kept"
    assert 'name="next" value="/kb/llama3-fsdp-allgather-timeout/?from=wiki"' in page.content.decode()
    (token,) = tokens(page)
    voted = reader.post(
        "/vote",
        {"target": "case", "ref": SLUG, "ballot": ballot(page), "answer": "yes", "next": CASE_URL, "csrfmiddlewaretoken": token},
    )
    assert voted.status_code == 302 and voted["Location"] == CASE_URL
    assert "1 person voted: 1 said it fixed the job" in counts(reader.get(CASE_URL))


def test_a_vote_or_a_paste_counted_by_another_worker_shows_on_the_next_view(client):
    """Another worker writes to the database and never touches this worker's pages."""
    before = client.get(CASE_URL)
    assert kept(client.get(CASE_URL)) and "nobody has voted yet" in counts(before)
    store.vote_record(target="case", answer="no", ballot="case:elsewhere", case_slug=SLUG, target_ref=SLUG)
    after_vote = client.get(CASE_URL)
    assert "1 person voted: 0 said it fixed the job" in counts(after_vote) and "1 said it did not" in counts(after_vote)
    store.match_count(SLUG)
    assert "the answer to 1 paste;" in counts(client.get(CASE_URL))
    assert kept(client.get(CASE_URL))


def test_a_kept_case_page_is_the_page_django_renders_with_the_request(client, rf, django_user_model):
    """Rendered without its request, a kept page cannot hold anything of one reader (user, session, messages); it
    is still exactly the page the template gives with the request, but for the token. A staff member's visit keeps
    a page of its own (their header greets them); an anonymous reader's kept page holds nothing of theirs."""
    staff = django_user_model.objects.create_user("staff-reader-7", password="pw-staff-reader-7", is_staff=True)
    client.force_login(staff)
    client.get(CASE_URL)
    Client().get(CASE_URL)
    page = Client().get(CASE_URL)
    assert kept(page)
    context = _case_context(Case.objects.get(slug=SLUG), case_feedback(SLUG))
    context["vote"].update(ballot=ballot(page), next=CASE_URL)
    expected = render(rf.get(CASE_URL), "kb/case_detail.html", context).content.decode()
    assert without_tokens(page.content.decode()) == without_tokens(expected)
    assert "staff-reader-7" not in page.content.decode()


def test_an_address_with_a_query_string_gets_its_own_og_url(client):
    client.get(CASE_URL)
    page = client.get(CASE_URL + "?utm=%22x%3E")
    assert kept(page)
    assert '<meta property="og:url" content="http://testserver/kb/llama3-fsdp-allgather-timeout/?utm=%22x%3E">' in (
        page.content.decode()
    )


@pytest.fixture
def own_content(settings, tmp_path) -> Path:
    """A content/ of one case, loaded, with its own index folder."""
    settings.CONTENT_DIR = tmp_path / "content"
    settings.SEARCH_INDEX_DIR = tmp_path / "index"
    write_case(settings.CONTENT_DIR, "first-case")
    call_command("load_content", verbosity=0)
    return settings.CONTENT_DIR


def test_a_content_load_is_served_at_once(client, own_content):
    """No setting changes between the views: what changes is the revision the database holds."""
    client.get("/kb/first-case/")
    assert kept(client.get("/kb/first-case/"))
    revision = ContentState.loaded_revision()
    write_case(own_content, "first-case", case_text("first-case").replace('title: "Test case first-case"', 'title: "Zanzibar"'))
    call_command("load_content", verbosity=0)
    assert ContentState.loaded_revision() != revision
    page = client.get("/kb/first-case/")
    assert not kept(page) and "<h1>Zanzibar</h1>" in page.content.decode()


def test_a_page_rendered_while_content_was_loaded_is_answered_but_not_kept(client, monkeypatch):
    """The view read the revision before a load committed and the rows after it, so the page may be of either
    revision: it is not kept, not even under the revision the view read, which a later load of the same content
    (content rolled back) makes current again."""
    served = {"revision": "rolled-back"}
    monkeypatch.setattr(ContentState, "loaded_revision", classmethod(lambda cls: served["revision"]))
    counts = store.case_page_state  # the view reads the revision with the case's counts
    monkeypatch.setattr(views, "case_page_state", lambda slug: (served["revision"], counts(slug)[1]))
    render = page_cache.rendered

    def load_commits_while_rendering(*args, **kwargs):
        served["revision"] = "loaded-meanwhile"
        return render(*args, **kwargs)

    monkeypatch.setattr(page_cache, "rendered", load_commits_while_rendering)
    assert client.get(CASE_URL).status_code == 200
    monkeypatch.setattr(page_cache, "rendered", render)
    served["revision"] = "rolled-back"
    assert not kept(client.get(CASE_URL)), "the page that straddled the load was not kept"
    assert kept(client.get(CASE_URL))


def test_a_case_page_is_the_whole_page_for_htmx_too(client):
    """The case page does not branch on htmx (a boosted link wants the page), so it has one answer for both."""
    client.get(CASE_URL)
    assert b"<html" in client.get(CASE_URL, **HTMX).content


def test_a_worker_keeps_a_bounded_number_of_pages(client, settings):
    settings.CACHES = {**settings.CACHES, "pages": {**settings.CACHES["pages"], "OPTIONS": {"MAX_ENTRIES": 4}}}
    urls = [case.get_absolute_url() for case in Case.objects.order_by("slug")[:10]]
    for url in urls:
        assert client.get(url).status_code == 200
    assert kept(client.get(urls[-1])), "the newest page is kept"
    assert not kept(client.get(urls[0])), "the oldest went to make room"


def test_an_alias_still_redirects_and_an_unknown_slug_is_still_not_found(client):
    alias = Alias.objects.select_related("case").first()
    client.get(alias.case.get_absolute_url())
    for _ in range(2):
        assert client.get(f"/kb/{alias.slug}/").status_code == 301
        assert client.get("/kb/no-such-case/").status_code == 404


def test_an_edited_template_is_shown_at_once_under_runserver(client):
    """runserver reloads an edited template without restarting, and says so with `file_changed`."""
    client.get(CASE_URL)
    file_changed.send(sender=None, file_path=Path("templates/base.html"))
    assert not kept(client.get(CASE_URL))
    file_changed.send(sender=None, file_path=Path("kb/views.py"))
    assert kept(client.get(CASE_URL)), "a Python file restarts the server instead"


def test_a_kept_search_page_is_the_page_django_renders_with_the_request(client, rf, django_user_model):
    staff = django_user_model.objects.create_user("staff-reader-7", password="pw-staff-reader-7", is_staff=True)
    client.force_login(staff)
    client.get(SEARCH_URL)
    Client().get(SEARCH_URL)
    page = Client().get(SEARCH_URL)
    assert kept(page) and "staff-reader-7" not in page.content.decode()
    context = {"query": "NCCL_SOCKET_IFNAME", **_keyword_results("NCCL_SOCKET_IFNAME")}
    expected = render(rf.get(SEARCH_URL), "kb/search.html", context).content.decode()
    assert without_tokens(page.content.decode()) == without_tokens(expected)


def test_a_search_reads_the_new_build_after_a_content_load(client, own_content):
    client.get("/search?q=zanzibar")
    before = client.get("/search?q=zanzibar")
    assert kept(before) and b"No page mentions" in before.content
    write_case(own_content, "first-case", case_text("first-case").replace('title: "Test case first-case"', 'title: "Zanzibar"'))
    call_command("load_content", verbosity=0)
    after = client.get("/search?q=zanzibar")
    assert not kept(after) and b'href="/kb/first-case/' in after.content


def test_a_search_follows_its_build_when_the_same_revision_is_built_again(client, own_content):
    """`load_content --force` publishes a new build of the same revision; the hits are read from it again, as the
    index's own result cache reads them (kb.search.index)."""
    client.get("/search?q=barrier")
    assert kept(client.get("/search?q=barrier"))
    call_command("load_content", "--force", verbosity=0)
    assert not kept(client.get("/search?q=barrier"))


def test_htmx_and_plain_requests_each_get_their_own_answer_in_either_order(client):
    headers = {"htmx": HTMX, "plain": {}}
    for order in (("htmx", "plain"), ("plain", "htmx")):
        page_cache.clear()
        rendered = {kind: client.get(SEARCH_URL, **headers[kind]) for kind in order}
        again = {kind: client.get(SEARCH_URL, **headers[kind]) for kind in order}
        assert not any(kept(r) for r in rendered.values()) and all(kept(r) for r in again.values())
        for answers in (rendered, again):
            assert b"<html" in answers["plain"].content and b"<html" not in answers["htmx"].content
            assert b'class="hit-title"' in answers["htmx"].content
            for response in answers.values():
                assert {"HX-Request", "HX-Target"} <= {v.strip() for v in response["Vary"].split(",")}
    restore = client.get(SEARCH_URL, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert b"<html" in restore.content, "a history restore gets the page"


def test_a_kept_page_greets_each_signed_in_reader_by_their_own_name_and_offers_staff_the_curators_page(django_user_model):
    """Issue 33: no signed-in indicator and no way into /curate/ from the site. The name is a hole of the kept page."""
    first, second = (
        django_user_model.objects.create_user(name, password=f"pw-{name}", is_staff=True)
        for name in ("curator-ann", "curator-bo")
    )
    reader = django_user_model.objects.create_user("reader-cy", password="pw-reader-cy")
    pages = {}
    for user in (first, second, reader):
        client = Client()
        client.force_login(user)
        client.get(CASE_URL)
        pages[user.username] = client.get(CASE_URL)
    assert kept(pages["curator-bo"]), "the second curator gets the page kept for the first"
    assert "Signed in as <strong>curator-bo</strong>" in pages["curator-bo"].content.decode()
    assert "curator-ann" not in pages["curator-bo"].content.decode()
    assert 'href="/curate/"' in pages["curator-bo"].content.decode()
    assert "Signed in as <strong>reader-cy</strong>" in pages["reader-cy"].content.decode()
    assert 'href="/curate/"' not in pages["reader-cy"].content.decode()
    assert "Signed in" not in Client().get(CASE_URL).content.decode()
