"""Pages rendered once per worker process and reused, with holes for what each request gets of its own.

A case page cost 7 ms of a worker's time and a keyword search's page 2 ms, against 0.15 ms for the trivial view
(`make bench`, issue 14), and most of it was building the same HTML again for every reader of a content revision.
What differs per request is little, and it all sits where a template prints one escaped value: the CSRF token (in
base.html's `hx-headers` and in each form's `{% csrf_token %}`), `og:url` (the address as asked, host and query
string included), and on a case page the vote form's ballot (one vote per shown page) and return address. So a page
is rendered once with a marker in each of those places (`hole`), split at the markers and kept; each request joins
the parts with its own values, escaped as the template would have escaped them. Asking for the CSRF token is what
makes CsrfViewMiddleware set its cookie, as rendering `{{ csrf_token }}` would have.

Why it cannot serve one reader's page to another:
- a page is rendered without its request, so without context processors: nothing of the user, the session or
  their messages can reach it (`request` and `user` are not in its context at all; the test in
  tests/kb/web/test_page_cache.py compares a cached page with the page Django renders with the request);
- every key holds the content revision the database serves, and a page is kept only when that revision is still
  the one served after rendering, so a page whose rows straddled a `load_content` is answered once and never kept;
  the views add what else the page is made of (the case's counts, the search's build and query).

Kept with Django's cache framework under its own alias, `pages` (config/settings.py): a LocMemCache is per process,
evicts the least recently used entry and is bounded by MAX_ENTRIES; what it keeps is the split page, not markers to
look for, so a shared backend would serve it as well.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from django.core.cache import caches
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils.autoreload import file_changed
from django.utils.html import escape

from kb.context import SITE_NAME, page_url
from kb.models import ContentState

ALIAS = "pages"
# Unguessable per process, so no text a page shows (a search query, say) can pose as a hole.
_MARKER = f"hole-{secrets.token_hex(8)}-"
_HOLE_RE = re.compile(rf"{_MARKER}([a-z_]+)-")


def hole(name: str) -> str:
    """What a cached page's context holds where each request's own `name` goes; only in a place the template
    prints it escaped (`{{ value }}`, `{% csrf_token %}`), since the request's value is escaped the same way."""
    if not re.fullmatch(r"[a-z_]+", name):
        raise ValueError(f"a hole's name is lower-case letters and underscores, not {name!r}")
    return f"{_MARKER}{name}-"


@dataclass(frozen=True)
class Page:
    """A rendered page split at its holes: text, a hole's name, text, ..., text. The text is kept encoded: joining
    bytes is a copy, where encoding the 50 KB of a case page for each request cost 0.05 ms."""

    parts: tuple[bytes, ...]
    holes: tuple[str, ...]

    def filled(self, values: dict[str, Callable[[], str]]) -> bytes:
        """The page with each hole's value, each asked once (a CSRF token only for a page that shows one)."""
        got = {name: escape(values[name]()).encode() for name in set(self.holes)}
        parts = list(self.parts)
        parts[1::2] = [got[name] for name in self.holes]
        return b"".join(parts)


def rendered(template_name: str, context: dict[str, Any], *, audience: str = "") -> Page:
    """Render without the request; the holes every page of base.html has are filled by `response`. `audience` is
    kb.context.account_kind's answer, part of the caller's key: the header greets a signed-in reader (their name is
    a hole) and offers staff the curators' page, and an anonymous reader's page holds neither."""
    account = {"name": hole("account_name"), "staff": audience == "staff"} if audience else {}
    html = render_to_string(
        template_name,
        {"site_name": SITE_NAME, "csrf_token": hole("csrf_token"), "page_url": hole("page_url"), "account": account, **context},
    )
    parts = _HOLE_RE.split(html)
    return Page(parts=tuple(part.encode() for part in parts), holes=tuple(parts[1::2]))


def get(revision: str, key: tuple) -> Page | None:
    """The page kept for `key` while the database serves `revision`, if this process has it."""
    return caches[ALIAS].get(_cache_key(revision, key))


def keep(revision: str, key: tuple, page: Page) -> Page:
    """Keep `page` unless content was loaded while it was rendered (then it is this request's answer only)."""
    if ContentState.loaded_revision() == revision:
        caches[ALIAS].set(_cache_key(revision, key), page)
    return page


def response(request: HttpRequest, page: Page, **own: Callable[[], str]) -> HttpResponse:
    """The page with this request's CSRF token, address and `own` values (one callable per hole the view added)."""
    values = {
        "csrf_token": lambda: get_token(request),
        "page_url": lambda: page_url(request),
        "account_name": lambda: request.user.get_username(),
        **own,
    }
    return HttpResponse(page.filled(values))


def clear() -> None:
    """Forget every page this process kept."""
    caches[ALIAS].clear()


def _cache_key(revision: str, key: tuple) -> str:
    """A digest, so that a key of any length or character (a query as typed) is a valid cache key."""
    return "page:" + hashlib.sha256(json.dumps([revision, *key], separators=(",", ":"), sort_keys=True).encode()).hexdigest()


@receiver(setting_changed, dispatch_uid="kb.page_cache.setting_changed")
def _setting_changed(**kwargs: Any) -> None:
    """A page shows settings too (the edit link's prefix, the size limit). They change only where a test changes
    one (Django sends this signal from its test tools); the pages are then rendered again, as a restarted worker
    would render them."""
    clear()


@receiver(file_changed, dispatch_uid="kb.page_cache.template_edited")
def _template_edited(sender: object, file_path: Path, **kwargs: Any) -> None:
    """`manage.py runserver` reloads an edited template without restarting (Django 4.1+): pages rendered from the
    old one go too. Answers None, so the autoreloader still restarts for anything else."""
    if file_path.suffix == ".html":
        clear()
