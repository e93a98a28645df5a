"""The content revision: a short hash over every content file. Kept apart from the case reader, whose Markdown
and YAML imports the system check and the command line need not pay for."""

from __future__ import annotations

import hashlib
from pathlib import Path

CONTENT_SUFFIXES = {".md", ".yaml", ".yml", ".sh"}


def content_revision(content_dir: Path) -> str:
    """A short hash over every content file, so the database and scripts can say what they were built from."""
    digest = hashlib.sha256()
    for path in sorted(p for p in content_dir.rglob("*") if p.is_file() and p.suffix in CONTENT_SUFFIXES):
        digest.update(str(path.relative_to(content_dir)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


LOAD_HINT = "Run: python manage.py load_content"


def drift_text(loaded: str | None, current: str) -> str | None:
    """What to say when the loaded content is not content/ as it is now (None when it is)."""
    if loaded is None:
        return "No content has been loaded into the database."
    if loaded != current:
        return f"The database holds content revision {loaded}, but content/ is at {current}."
    return None
