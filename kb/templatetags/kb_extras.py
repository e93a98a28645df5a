"""Template filters of the knowledge base."""
from django import template

from kb.diagnosis.versions import versions_text as _versions_text

register = template.Library()


@register.filter
def versions_text(versions: dict) -> str:
    """`{pytorch: '<2.14'}` → 'PyTorch < 2.14'."""
    return _versions_text(versions) if isinstance(versions, dict) else ""
