"""`/healthz`: what a load balancer's liveness check gets, over the plain HTTP such checks use."""

import pytest
from django.test import Client


def test_healthz_answers_ok_without_touching_the_database(client: Client) -> None:
    """A database slow for a moment must not take every host out of the balancer's rotation at once. (No
    django_db mark: pytest-django fails this test on any query.)"""
    response = client.get("/healthz")
    assert response.status_code == 200 and response.content == b"ok\n"
    assert response["Content-Type"].startswith("text/plain") and "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_is_not_redirected_to_https_where_pages_are(client: Client, settings) -> None:
    """A balancer checks each host over plain HTTP; a 301 to HTTPS would read as a failed check."""
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/kb/").status_code == 301
