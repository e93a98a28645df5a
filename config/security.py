"""Content-Security-Policy header: no inline script, no third-party origin (the site runs air-gapped). Control and
bidirectional characters from a log or a query shown as visible escapes in every HTML page."""

import re
from typing import Callable

from django.http import HttpRequest, HttpResponse

from diagnosis.markdown_safe import visible_controls

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response


# The UTF-8 bytes of what diagnosis.markdown_safe.visible_controls escapes: a cheap test before decoding a page.
_CONTROL_BYTES_RE = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)
# The bytes those begin with: the one-byte controls, and the lead bytes of the multi-byte ones. Scanning a page with
# either pattern costs about 3 ns a byte in re (0.2-0.6 ms for a 58 KB case page, a quarter of a cached page's
# time); bytes.translate drops every other byte in 20 us, and what is left says where to look.
_SINGLE_BYTE_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_MULTI_BYTE_LEADS = bytes([0xC2, 0xD8, 0xE2])
_NOT_A_LEAD = bytes(b for b in range(256) if b not in _SINGLE_BYTE_CONTROLS + _MULTI_BYTE_LEADS)


def has_controls(content: bytes) -> bool:
    """Whether the UTF-8 text holds a character visible_controls escapes: any one-byte control, or a multi-byte one
    at one of the (few) places its lead byte occurs."""
    leads = content.translate(None, _NOT_A_LEAD)
    if not leads:
        return False
    if leads.translate(None, _MULTI_BYTE_LEADS):
        return True
    for lead in set(leads):
        at = content.find(lead)
        while at != -1:
            if _CONTROL_BYTES_RE.match(content, at):
                return True
            at = content.find(lead, at + 1)
    return False


class VisibleControlsMiddleware:
    """ESC (terminal colours and links), U+202E (text shown reversed) and the other invisible controls that a log
    or a query carries reach a page as `\\x1b`, `\\u202e`: autoescaping stops markup, not display spoofing."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.streaming and response.get("Content-Type", "").startswith("text/html") and has_controls(response.content):
            response.content = visible_controls(response.content.decode(response.charset, errors="replace")).encode(
                response.charset
            )
        return response
