"""Published content: each load writes a new build directory (the search index, plus a snapshot of the
files other apps serve, such as the troubleshooter's trees and script parts, and last the rules snapshot, which
marks the build complete) and, once the database has committed, points `current` at it in one atomic rename.

Web processes serve the build of the revision the database holds (`served_build`): `current`, except in the
moment between a load's commit and its swap, or after a load killed in that moment, when it is the newest complete
build of that revision. So they never see a half-written build, a build ahead of the database or behind it, or a
content/ file that the last load refused. The build `current` replaced is kept, with a `previous` link to it (a
worker may still be reading it); every other build, finished or not, is removed by the next load, which also
completes the swap of a load killed after its commit. Loads on one host take a lock on the index folder for all
of this, so one never removes a build that another is about to swap in.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Iterator

SNAPSHOT = "content"  # inside a build: the published copy of content/ folders other apps serve
SNAPSHOT_FOLDERS = ("trees", "scripts")
RULES_FILE = "rules.json"  # the rules snapshot (kb/content/rules_snapshot.py), renamed into place last
CURRENT = "current"
PREVIOUS = "previous"
LOCK_FILE = ".load.lock"
PROBLEM_LOG_EVERY_S = 60.0
_problems_logged: dict[str, float] = {}


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


def build_revision(build: Path) -> str:
    return build.name.split("-")[1]


def build_complete(build: Path) -> bool:
    """Every file of the build is written: the rules snapshot, renamed into place last, is there."""
    return (build / RULES_FILE).is_file()


def current_build(root: Path) -> Path | None:
    current = root / CURRENT
    return current.resolve() if current.is_symlink() and current.resolve().is_dir() else None


def current_revision(root: Path) -> str | None:
    build = current_build(root)
    return build_revision(build) if build is not None else None


def served_build(root: Path, revision: str) -> Path | None:
    """The build the site serves while the database holds `revision`: `current` when it is of that revision, else
    the newest complete build of it (its load committed and has not swapped it in yet, or was killed before it
    could), else `current` (a database loaded by an older release, or none loaded)."""
    try:  # asked on every search: the link's text, without resolving and checking the path (a missing build
        current: Path | None = root / os.readlink(root / CURRENT)  # fails to open, and says so, where it is read)
    except OSError:
        current = None
    if not revision or (current is not None and build_revision(current) == revision):
        return current
    complete = [build for build in root.glob(f"build-{revision}-*") if build.is_dir() and build_complete(build)]
    return max(complete, key=lambda build: int(build.name.rsplit("-", 1)[1])) if complete else current


def published_snapshot(root: Path, revision: str) -> Path | None:
    """The snapshot of the build the site serves for `revision`, or None before the first load."""
    build = served_build(root, revision)
    return build / SNAPSHOT if build is not None else None


def build_problem_log(logger: logging.Logger, message: str) -> None:
    """Log a problem with the published build (none, or one that cannot be read) at ERROR, at most once a minute
    per process and message: every request meets it until content is loaded again, and one line says it."""
    now = time.monotonic()
    if now - _problems_logged.get(message, -PROBLEM_LOG_EVERY_S) >= PROBLEM_LOG_EVERY_S:
        _problems_logged[message] = now
        logger.error(message)


@contextlib.contextmanager
def index_locked(root: Path) -> Iterator[None]:
    """One load at a time on this host, from its first write to its last removal. The kernel releases the lock
    when its holder dies, SIGKILL included."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_swap(root: Path, build: Path) -> None:
    """Point `current` at `build` atomically, `previous` at the build it replaces, and remove every other build.
    Call with the index folder locked."""
    replaced = current_build(root)
    if replaced is not None and replaced != build:
        _link(root, PREVIOUS, replaced.name)  # first: a kill between the two renames leaves both on the old build
    _link(root, CURRENT, build.name)
    builds_prune(root)


def builds_prune(root: Path) -> None:
    """Remove every build but `current` and `previous` (older builds, and the folders of loads that were killed
    or failed), and temporary links left by an interrupted swap. Call with the index folder locked."""
    keep = {(root / name).resolve().name for name in (CURRENT, PREVIOUS) if (root / name).is_symlink()}
    for old in root.glob("build-*"):
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
    for link in root.glob("*.tmp-*"):
        link.unlink(missing_ok=True)


def _link(root: Path, name: str, target: str) -> None:
    temporary = root / f"{name}.tmp-{os.getpid()}"
    if temporary.is_symlink() or temporary.exists():
        temporary.unlink()
    temporary.symlink_to(target)
    os.replace(temporary, root / name)
