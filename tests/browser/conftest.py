"""Real-browser fixtures: Debian's chromium driven by Playwright against pytest-django's live server.

live_server makes each test transactional, and Django empties the test database after such a test.
The content the rest of the suite expects is therefore loaded again after this folder's tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import transaction

from kb.content.revision import content_revision
from kb.content.load import content_check, content_rows_write
from kb.models import Case

# Playwright's sync API runs an event loop in this thread for the whole session (one Chromium for every test),
# which makes Django refuse database calls from it; the tests' own database calls are synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class BrowserPage:
    page: object  # playwright.sync_api.Page
    base_url: str
    console_errors: list[str] = field(default_factory=list)  # JavaScript errors and CSP violations
    failed_responses: list[tuple[int, str]] = field(default_factory=list)  # (status, path) of every 4xx/5xx


@pytest.fixture(scope="session")
def content_validated() -> tuple:
    """The content, read and validated once for the session (the published index stays on disk)."""
    docs, harmless, errors = content_check(settings.CONTENT_DIR)
    assert not errors, [str(e) for e in errors]
    return docs, harmless, content_revision(settings.CONTENT_DIR)


@pytest.fixture(scope="module", autouse=True)
def _content_reloaded_after_flush(django_db_blocker, content_validated) -> Iterator[None]:
    """The rows only: the flush emptied the database, not the published build."""
    yield
    with django_db_blocker.unblock(), transaction.atomic():
        if not Case.objects.exists():
            content_rows_write(*content_validated)


@pytest.fixture
def content_in_db(transactional_db, content_validated) -> None:
    """An earlier browser test's flush emptied the database: write the validated rows back (a fraction of a
    full load, which would also rebuild the index the flush did not touch)."""
    if not Case.objects.exists():
        with transaction.atomic():
            content_rows_write(*content_validated)


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """One Chromium for the whole session; each test gets a fresh context."""
    if not CHROMIUM.exists():
        pytest.fail("chromium is not installed: run make test, which installs it with apt")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _context_page(chromium, live_server, javascript: bool) -> Iterator[BrowserPage]:
    context = chromium.new_context(accept_downloads=True, java_script_enabled=javascript)
    if javascript:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    result = BrowserPage(page=page, base_url=live_server.url)
    page.on(
        "console",
        lambda message: (
            result.console_errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on(
        "response",
        lambda response: (
            result.failed_responses.append((response.status, urlsplit(response.url).path)) if response.status >= 400 else None
        ),
    )
    page.on("pageerror", lambda error: result.console_errors.append(str(error)))
    try:
        yield result
    finally:
        context.close()


@pytest.fixture
def browser_page(content_in_db, live_server, chromium) -> Iterator[BrowserPage]:
    yield from _context_page(chromium, live_server, javascript=True)


@pytest.fixture
def browser_page_without_js(content_in_db, live_server, chromium) -> Iterator[BrowserPage]:
    yield from _context_page(chromium, live_server, javascript=False)
