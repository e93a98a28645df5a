"""One htmx idiom for every view: the typed request, and the response that is a full page or its fragment.

A view that answers htmx with a fragment and everyone else with a page must say so to caches (`Vary:
HX-Request`), and a history restore (htmx asking for a page it had no snapshot of) wants the page, not the
fragment. `page_or_fragment` does both, so views do not repeat it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def wants_fragment(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def page_or_fragment(
    request: HttpRequest,
    page: str,
    fragment: str,
    context: dict[str, Any],
    *,
    status: int = 200,
) -> TemplateResponse:
    """`fragment` for an htmx request, `page` otherwise, marked as varying by HX-Request. A view whose other
    answers (a redirect, a 204) also depend on htmx says so with Django's `vary_on_headers`."""
    response = TemplateResponse(request, fragment if wants_fragment(request) else page, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response


def error_page(request: HttpRequest, status: int, title: str, message: str) -> TemplateResponse:
    """A refusal or failure said in words: the error page, or its fragment swapped in place for htmx."""
    return page_or_fragment(request, "error.html", "kb/_error.html", {"title": title, "message": message}, status=status)
