"""Untrusted answers echoed back in messages and pages (pure: the engine's errors and a template filter use it)."""


def text_shown(text: str, limit: int = 60) -> str:
    """Untrusted text made fit to echo in a page or message: control characters visible as \\xNN (a NUL is not
    even valid HTML), long text shortened. HTML escaping is still the template's job."""
    visible = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return visible if len(visible) <= limit else visible[: limit - 3] + "..."
