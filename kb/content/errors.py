"""The one error type content problems are reported with: a file, a line and what is wrong."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class ContentError:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class ContentInvalid(Exception):
    """Raised when any content file has a problem; carries every problem found, not just the first."""

    def __init__(self, errors: list[ContentError]) -> None:
        self.errors = sorted(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def display_path(path: Path, root: Path) -> str:
    """Path as the user knows it: relative to the project when possible."""
    try:
        return str(path.resolve().relative_to(root.resolve().parent))
    except ValueError:
        return str(path)
