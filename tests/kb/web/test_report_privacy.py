"""What a shared report leaves behind and what crawlers may index (issue 34: B16, B18): the delete token is kept
hashed only, the Markdown and log of a report are `noindex`, and the static manifest is not served."""

from __future__ import annotations

import re

import pytest
from django.contrib.sessions.models import Session
from django.http import HttpResponse
from django.test import Client, RequestFactory

from config.static import StaticFilesMiddleware
from kb.reports.store import token_hash
from tests.kb.web.test_reports import MARKER, share


def delete_token(page: str) -> str:
    return re.search(r'href="http://testserver/d/[^"]+/delete\?token=([^"]+)"', page).group(1)


@pytest.mark.django_db
def test_the_session_table_holds_the_delete_tokens_hash_not_the_token(client):
    report, url = share(client, MARKER + "\n")
    token = delete_token(client.get(url).content.decode())
    sessions = [str(s.get_decoded()) for s in Session.objects.all()]
    assert sessions and not any(token in s for s in sessions)
    assert any(token_hash(token) in s for s in sessions)


@pytest.mark.django_db
def test_the_delete_link_is_shown_to_the_sharer_only_from_its_short_lived_cookie(client):
    _, url = share(client, MARKER + "\n")
    assert "/delete?token=" in client.get(url).content.decode()
    client.cookies.pop("kb_new_report")
    page = client.get(url).content.decode()
    assert "/delete?token=" not in page and "You shared this report" in page


@pytest.mark.django_db
def test_a_delete_cookie_for_another_report_shows_no_delete_link(client):
    _, first = share(client, MARKER + "\n")
    cookie = client.cookies["kb_new_report"].value
    _, second = share(client, MARKER.replace("rank3", "rank5") + "\n")
    stranger = Client()
    stranger.cookies["kb_new_report"] = cookie
    assert "/delete?token=" not in stranger.get(second).content.decode()
    assert "/delete?token=" in stranger.get(first).content.decode()  # the cookie is the token: its holder may delete


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", [".md", "/log.txt"])
def test_the_markdown_and_the_log_of_a_report_are_not_indexed(client, suffix):
    _, url = share(client, MARKER + "\n", store_log="on")
    response = client.get(url + suffix)
    assert response.status_code == 200 and response["X-Robots-Tag"] == "noindex"


@pytest.fixture
def static_root(tmp_path, settings):
    (tmp_path / "css").mkdir()
    (tmp_path / "css" / "site.css").write_text("body{}")
    (tmp_path / "staticfiles.json").write_text('{"paths": {"css/site.css": "css/site.abc.css"}}')
    settings.STATIC_ROOT = str(tmp_path)
    settings.WHITENOISE_AUTOREFRESH = False
    return tmp_path


@pytest.mark.parametrize("autorefresh", [False, True])
def test_the_static_manifest_is_not_served_but_static_files_are(static_root, settings, autorefresh):
    settings.WHITENOISE_AUTOREFRESH = autorefresh
    middleware = StaticFilesMiddleware(lambda request: HttpResponse("not a static file", status=404))
    static = settings.STATIC_URL.rstrip("/")
    assert middleware(RequestFactory().get(f"{static}/staticfiles.json")).status_code == 404
    assert middleware(RequestFactory().get(f"{static}/css/site.css")).status_code == 200
