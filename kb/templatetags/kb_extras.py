"""Template filters of the knowledge base."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.versions import SOFTWARE_NAMES, versions_text as _versions_text

register = template.Library()


@register.filter
def versions_text(versions: dict) -> str:
    """`{pytorch: '<2.14'}` → 'PyTorch < 2.14'."""
    return _versions_text(versions) if isinstance(versions, dict) else ""


@register.filter
def pins_text(pins: dict) -> str:
    """`{pytorch: '2.14.1', nccl: '2.30.7'}` → 'PyTorch 2.14.1, NCCL 2.30.7'."""
    if not isinstance(pins, dict):
        return ""
    return ", ".join(f"{SOFTWARE_NAMES.get(name, name)} {version}" for name, version in pins.items())


@register.filter
def inline_code(text: str) -> SafeString:
    """Escape, then show `backticked` parts as code."""
    parts = re.split(r"`([^`]+)`", str(text))
    return mark_safe("".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts)))
