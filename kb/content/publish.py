"""Published content: each load writes a new build directory (the search index, plus a snapshot of the
files other apps serve, such as the troubleshooter's trees and script parts) and, once the database has
committed, points `current` at it in one atomic rename.

Web processes read only `current`, so they never see a half-written build, a build ahead of the
database, or a content/ file that the last load refused. The previous build is kept (a worker may still
be reading it); older ones and orphans of interrupted loads are removed at the next load.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

SNAPSHOT = "content"  # inside a build: the published copy of content/ folders other apps serve
SNAPSHOT_FOLDERS = ("trees", "scripts")


def build_dir_new(root: Path, revision: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    build = root / f"build-{revision}-{time.time_ns()}"
    build.mkdir()
    return build


def snapshot_write(build: Path, content_dir: Path) -> None:
    """Copy the folders other apps read at request time into the build."""
    for folder in SNAPSHOT_FOLDERS:
        source = content_dir / folder
        if source.is_dir():
            shutil.copytree(source, build / SNAPSHOT / folder)


def current_build(root: Path) -> Path | None:
    current = root / "current"
    return current.resolve() if current.is_symlink() and current.resolve().is_dir() else None


def current_revision(root: Path) -> str | None:
    build = current_build(root)
    return build.name.split("-")[1] if build is not None else None


def published_snapshot(root: Path) -> Path | None:
    """The snapshot of the build the site serves, or None before the first load."""
    build = current_build(root)
    return build / SNAPSHOT if build is not None else None


def build_swap(root: Path, build: Path) -> None:
    """Point `current` at `build` atomically, keep the one it replaces, remove every other build."""
    previous = current_build(root)
    link_tmp = root / f"current.tmp-{os.getpid()}"
    if link_tmp.is_symlink() or link_tmp.exists():
        link_tmp.unlink()
    link_tmp.symlink_to(build.name)
    os.replace(link_tmp, root / "current")
    builds_prune(root, keep={build.name} | ({previous.name} if previous else set()))


def builds_prune(root: Path, keep: set[str]) -> None:
    """Remove builds not kept, and temporary links left by an interrupted load."""
    for old in root.glob("build-*"):
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
    for link in root.glob("current.tmp-*"):
        link.unlink(missing_ok=True)
