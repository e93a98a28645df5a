"""Request guards that must run before anything reads the body or queries the database.

- A body over the size limit is refused from its Content-Length with a 413 that states the limit, before
  CSRF checking or form parsing would spool it (a 300 MB upload used to reach the disk first).
- A NUL byte in the path is a 400: PostgreSQL refuses NUL in text, and no path of this site contains one
  (query values are validated by the views that read them, with their own messages).
"""

from typing import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

# Multipart framing adds a little to an upload at the limit. The proxy in front (config/serve.py) allows
# KB_MAX_LOG_BYTES plus this margin, so what it refuses this guard would refuse too.
MULTIPART_MARGIN_BYTES = 64 * 1024


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return _refuse(request, 400, "Bad request", "The address contains a NUL character.")
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict) -> HttpResponse | None:
        """After URL resolution (so the view says how it answers errors: JSON for the API, see
        kb.api.answers_json) and before any later middleware's process_view, CSRF's included, reads the body."""
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        limit = settings.KB_MAX_LOG_BYTES
        if declared <= limit + MULTIPART_MARGIN_BYTES:
            return None
        from kb.log_input import LogTooLarge

        refused = LogTooLarge(limit)
        if getattr(view_func, "answers_json", False):
            return JsonResponse({"error": str(refused), "limit_bytes": limit}, status=413)
        return _refuse(request, 413, refused.title, refused.help_text())


def _refuse(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    response = render(request, "error.html", {"title": title, "message": message}, status=status)
    response["Connection"] = "close"  # the unread body must not be taken for the next request
    return response
