"""Session set-up shared by every test: the real content/ is loaded once into the test database, with the
search index built in a temporary directory so tests never touch var/."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from hypothesis import HealthCheck, settings as hypothesis_settings

# Property tests: a bounded run for every `make test`, and a long one on demand:
#   HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/kb/web/test_hostile_input.py
hypothesis_settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.register_profile("long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, tmp_path_factory):
    settings.SEARCH_INDEX_DIR = tmp_path_factory.mktemp("index")
    with django_db_blocker.unblock():
        call_command("load_content", verbosity=0)


@pytest.fixture(autouse=True, scope="session")
def app_rate_limit_off():
    """The app's own per-address limits (config/ratelimit.py, on under `make run`) would count every test's POSTs
    from the test client's one address; tests/kb/web/test_rate_limits.py turns them on where it checks them."""
    settings.KB_APP_RATE_LIMIT = False


def pytest_report_header(config) -> str:
    """Say which database this run uses: `make test` runs the suite on SQLite and again on PostgreSQL."""
    return f"database: {settings.DATABASES['default']['ENGINE']}"


DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "admin_client",
    "admin_user",
    "django_user_model",
    "loaded_content",
    "live_server",
}


def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests that touch the database, so the PostgreSQL pass of `make test` runs those and not the
    pure engine and content tests a second time."""
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("database")


# The fixture tree as a content folder: trees/relay.yaml and the script parts its leaves name, scripts/relay.yaml.
FIXTURE_CONTENT = Path(__file__).parent / "troubleshooter"


@pytest.fixture
def relay_served(monkeypatch):
    """The wizard's pages serve the fixture tree and its script parts in place of the published content's trees, so
    page tests check the views, not the wording of content/trees. Case pages and titles still come from the database."""
    from troubleshooter import links, presentation, views
    from troubleshooter.library import library_read

    library = library_read(FIXTURE_CONTENT)
    assert not library.errors and list(library.trees) == ["relay"], library.errors
    for module in (views, presentation, links):
        monkeypatch.setattr(module, "library_published", lambda: library)
    return library
