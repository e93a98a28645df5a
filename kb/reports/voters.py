"""Who is voting, as far as a site without accounts can tell: a browser (a random id in a cookie) and its client
address, both kept only as keyed hashes, so the votes table names no browser and no address.

A browser that clears its cookies is a new voter; its address is not, so votes from one address are also capped
per item (kb/reports/store.py). Behind `make serve`'s nginx the app listens on a unix socket and the client's
address comes in nginx's X-Real-IP header; a client that reaches the app over TCP (`make run`) is its own
REMOTE_ADDR, and any X-Real-IP it sends is ignored, so nobody can pose as another address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse

VOTER_COOKIE = "kb_voter"
VOTER_COOKIE_AGE_S = 365 * 24 * 3600


def _keyed(kind: str, value: str) -> str:
    """HMAC-SHA256 with the site's secret: the same browser or address gives the same hash, which cannot be
    turned back into the cookie or the address without the secret."""
    return hmac.new(settings.SECRET_KEY.encode(), f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()


def voter_cookie_value(request: HttpRequest) -> str:
    """This browser's voter id from its cookie, or a new one (which `voter_cookie_set` then gives it)."""
    value = request.COOKIES.get(VOTER_COOKIE, "")
    if 20 <= len(value) <= 64 and value.replace("-", "").replace("_", "").isalnum():
        return value
    return secrets.token_urlsafe(24)


def voter_hash(cookie_value: str) -> str:
    return _keyed("voter", cookie_value)


def voter_cookie_set(request: HttpRequest, response: HttpResponse, cookie_value: str) -> None:
    """Give the browser its voter id (again: each vote renews the year)."""
    response.set_cookie(
        VOTER_COOKIE,
        cookie_value,
        max_age=VOTER_COOKIE_AGE_S,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR over TCP, nginx's X-Real-IP over the unix socket. An IPv6 address counts
    as its /64, which one household or host is given whole."""
    remote = request.META.get("REMOTE_ADDR", "")
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        try:
            address = ipaddress.ip_address(request.META.get("HTTP_X_REAL_IP", "").strip())
        except ValueError:
            return ""
    if address.version == 6 and not address.ipv4_mapped:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address.ipv4_mapped or address) if address.version == 6 else str(address)


def address_hash(request: HttpRequest) -> str:
    address = client_address(request)
    return _keyed("address", address) if address else ""
