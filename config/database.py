"""Short, honest answers when the database or the temp space fails, instead of a 500 and a traceback.

- The database cannot be reached (PostgreSQL down or restarting, SQLite locked past its timeout): 503 with
  "the knowledge base is briefly unavailable" and Retry-After, as JSON for the API, and one log line.
- A NUL character in a value the database refuses (PostgreSQL text cannot hold one): 400 naming it.
- The temp space is full while an upload is received: 507 saying so.

`DatabaseUnavailableMiddleware` answers for an error a view raises; `kb.views.server_error` (handler500) calls
`failure_response` too, for one another middleware raises (a session saved after the view, say). The answer is
marked as logged, so Django does not log a traceback of about 76 lines for each of them as well.
"""

from __future__ import annotations

import errno
import logging
from typing import Callable

from django.db import DataError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

logger = logging.getLogger("kb.database")

RETRY_AFTER_S = 30


def failure_response(request: HttpRequest, error: BaseException | None) -> HttpResponse | None:
    """The answer for a failure of the database or of the temp space, or None for any other error."""
    if isinstance(error, (OperationalError, InterfaceError)):
        status, title = 503, "The knowledge base is briefly unavailable"
        message = "Its database cannot be reached just now. Please try again in a minute."
        logger.error("database unavailable: %s %s: %s", request.method, request.path, _first_line(error))
    elif isinstance(error, DataError) and "NUL" in str(error):
        status, title = 400, "Bad request"
        message = "A field of the request contains a NUL character, which cannot be stored."
        logger.warning("NUL refused by the database: %s %s", request.method, request.path)
    elif isinstance(error, OSError) and error.errno == errno.ENOSPC:
        status, title = 507, "No room for the upload just now"
        message = (
            "The server's temporary space is full, so the upload could not be received. Please try again in a few "
            "minutes, or send a smaller log."
        )
        logger.error("temp space full: %s %s: %s", request.method, request.path, _first_line(error))
    else:
        return None
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"error": f"{title}: {message}"}, status=status)
    else:
        response = render(request, "error.html", {"title": title, "message": message}, status=status)
    if status == 503:
        response["Retry-After"] = str(RETRY_AFTER_S)
    response._has_been_logged = True  # django.utils.log.log_response: the line above is the one log line
    return response


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200] if text else ''}"


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return failure_response(request, exception)
