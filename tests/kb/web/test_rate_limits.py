"""Per-address limits in the app for `make run` (config/ratelimit.py): POST /search, which diagnoses a pasted log,
and the admin login, which is also the curators' (issue 34: B4, B15). `make serve`'s are nginx's
(tests/deploy/test_serve_stack.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.cache import caches

from config import ratelimit
from config.ratelimit import RULES, allowed
from tests.kb.web.test_reports import MARKER

pytestmark = pytest.mark.django_db
SEARCH = next(rule for rule in RULES if rule.name == "search")


@pytest.fixture(autouse=True)
def limits_on(settings, monkeypatch):
    """The limits on, and the limiter's clock stopped: a bucket refills one request every few seconds, and seven
    sign-ins (each a password hash) took longer than that on a loaded machine, so the sixth was let through."""
    settings.KB_APP_RATE_LIMIT = True
    caches["default"].clear()
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(monotonic=lambda: 1000.0))


def test_log_posts_to_search_past_the_burst_get_429_with_a_message(client):
    statuses = [client.post("/search", {"q": MARKER + "\n"}, REMOTE_ADDR="10.0.0.1").status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429, 429]
    response = client.post("/search", {"q": MARKER + "\n"}, REMOTE_ADDR="10.0.0.1")
    assert "Too many diagnoses from your address" in response.content.decode()
    assert int(response["Retry-After"]) >= 1


def test_another_address_and_searches_by_get_are_not_limited(client):
    for _ in range(6):
        client.post("/search", {"q": MARKER + "\n"}, REMOTE_ADDR="10.0.0.2")
    assert client.post("/search", {"q": MARKER + "\n"}, REMOTE_ADDR="10.0.0.3").status_code == 200
    assert client.get("/search", {"q": "nccl timeout"}, REMOTE_ADDR="10.0.0.2").status_code == 200


def test_wrong_passwords_past_the_burst_get_429_from_the_admin_login(client):
    form = {"username": "curator", "password": "wrong", "next": "/curate/"}
    statuses = [client.post("/admin/login/", form, REMOTE_ADDR="10.0.0.4").status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429, 429]
    response = client.post("/admin/login/", form, REMOTE_ADDR="10.0.0.4")
    assert "Too many sign-in attempts from your address" in response.content.decode()


def test_the_bucket_refills_at_its_rate():
    now = 1000.0
    assert all(allowed(SEARCH, "10.0.0.9", now)[0] for _ in range(SEARCH.burst))
    assert allowed(SEARCH, "10.0.0.9", now) == (False, 6)
    assert allowed(SEARCH, "10.0.0.9", now + 6.1)[0]
