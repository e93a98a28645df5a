"""Template context shared by every page. A page kept by kb/page_cache.py is rendered without its request, so
without this processor: it is given `site_name`, and `page_url` per request."""

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest

SITE_NAME = "Hang Doctor"


def site(request: HttpRequest) -> dict:
    return {"site_name": SITE_NAME, "page_url": page_url(request)}


def page_url(request: HttpRequest) -> str:
    """The page's absolute URL for link previews; just its path when the Host header is not one this site
    answers to (building a URL from a foreign Host raises, and the error page must still render)."""
    try:
        return request.build_absolute_uri()
    except DisallowedHost:
        return request.get_full_path()
