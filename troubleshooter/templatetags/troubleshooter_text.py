"""Template filters for tree text: content is trusted, but it is still escaped before any markup is added."""
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def backticks(text: str) -> SafeString:
    """Escape, then show `quoted` spans as code: tree help texts quote commands this way."""
    return mark_safe(re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)))
