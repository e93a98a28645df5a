"""Per-address limits on the POSTs that cost the most or guess passwords, for `make run` (no nginx in front).

`make serve` limits these in nginx (deploy/nginx.conf: `diagnose` and `login` zones), where every client address is
known; behind it the app sees a unix socket, so this limiter is off there (KB_APP_RATE_LIMIT follows DEBUG).
  - POST /search runs a full diagnosis of a pasted log, like /diagnose (turn 3: 156 diagnoses in 30 s from one
    address through /search, against 10 through /diagnose).
  - POST /admin/login/, which is also the curators' login (/curate/ sends staff there): 30 wrong passwords in
    9.3 s from one address.
A token bucket per (rule, address) in the default cache: `burst` requests at once, then `per_minute`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


@dataclass(frozen=True)
class Rule:
    name: str
    path: str
    per_minute: float
    burst: int
    message: str


RULES = (
    Rule("search", "/search", 10, 5, "Too many diagnoses from your address in a short time. Wait a minute and try again."),
    Rule(
        "login",
        "/admin/login/",
        6,
        5,
        "Too many sign-in attempts from your address in a short time. Wait a minute and try again.",
    ),
)


def allowed(rule: Rule, address: str, now: float | None = None) -> tuple[bool, int]:
    """(whether this request may go on, seconds until the next one may), for `address` under `rule`."""
    now = time.monotonic() if now is None else now
    cache = caches["default"]
    key = f"kb-rate:{rule.name}:{address}"
    tokens, last = cache.get(key) or (float(rule.burst), now)
    tokens = min(float(rule.burst), tokens + (now - last) * rule.per_minute / 60)
    if tokens < 1:
        cache.set(key, (tokens, now), timeout=120)
        return False, max(1, int((1 - tokens) * 60 / rule.per_minute + 0.999))
    cache.set(key, (tokens - 1, now), timeout=120)
    return True, 0


class RateLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and getattr(settings, "KB_APP_RATE_LIMIT", False):
            for rule in RULES:
                if request.path == rule.path:
                    ok, wait = allowed(rule, request.META.get("REMOTE_ADDR", ""))
                    if not ok:
                        return _too_many(request, rule, wait)
        return self.get_response(request)


def _too_many(request: HttpRequest, rule: Rule, wait: int) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"error": rule.message}, status=429)
    else:
        response = render(request, "error.html", {"title": "Too many requests", "message": rule.message}, status=429)
    response["Retry-After"] = str(wait)
    return response
