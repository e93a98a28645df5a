"""Template context shared by every page. A page kept by kb/page_cache.py is rendered without its request, so
without this processor: it is given `site_name`, and `page_url` per request."""

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest

SITE_NAME = "Hang Doctor"


def site(request: HttpRequest) -> dict:
    return {"site_name": SITE_NAME, "page_url": page_url(request), "account": account(request)}


def account_kind(request: HttpRequest) -> str:
    """Who the header greets: "" (nobody signed in), "user", or "staff" (who also gets the way into /curate/)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    return "staff" if user.is_staff else "user"


def account(request: HttpRequest, name: str | None = None) -> dict:
    """The header's signed-in indicator: `name` given is a kept page's hole for the user name (kb/page_cache.py)."""
    kind = account_kind(request)
    if not kind:
        return {}
    return {"name": name if name is not None else request.user.get_username(), "staff": kind == "staff"}


def page_url(request: HttpRequest) -> str:
    """The page's absolute URL for link previews; just its path when the Host header is not one this site
    answers to (building a URL from a foreign Host raises, and the error page must still render)."""
    try:
        return request.build_absolute_uri()
    except DisallowedHost:
        return request.get_full_path()
