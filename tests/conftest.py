"""Session set-up shared by every test: the real content/ is loaded once into the test database, with the
search index built in a temporary directory so tests never touch var/."""
import pytest
from django.conf import settings
from django.core.management import call_command


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, tmp_path_factory):
    settings.SEARCH_INDEX_DIR = tmp_path_factory.mktemp("index")
    with django_db_blocker.unblock():
        call_command("load_content", verbosity=0)


def pytest_report_header(config) -> str:
    """Say which database this run uses: `make test` runs the suite on SQLite and again on PostgreSQL."""
    return f"database: {settings.DATABASES['default']['ENGINE']}"
