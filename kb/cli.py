"""`manage.py diagnose`: the same diagnosis as the site, on the command line, for a login node with a log of
any size. One implementation, two ways in:

- `fast_main`, which manage.py calls before it starts Django: the rules and the case addresses come from the
  rules snapshot that `load_content` published with the index (kb/content/rules_snapshot.py), so a short log is
  answered without Django's start-up or the database;
- the Django management command (kb/management/commands/diagnose.py), which takes the rules from the database;
  manage.py falls back to it when no snapshot is published or an option of Django's own is given.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from config.memory import memory_available_bytes
from kb.content.revision import LOAD_HINT, content_revision, drift_text
from kb.content.rules_snapshot import rules_snapshot_read
import diagnosis
from diagnosis.result import Result, json_text
from diagnosis.readers.flight_recorder import flight_recorder_detect
from diagnosis.reading import Source

HELP = (
    "Rank the known cases that explain a job's logs, with evidence lines and extracted facts. Paths may be "
    "log files, a directory (torchrun --log-dir, Slurm outputs), a .tar/.tar.gz/.zip of one, or Flight "
    "Recorder dumps."
)
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip", ".gz")


class CliError(Exception):
    """A refusal the command line reports in one line (Django's CommandError, or the same words without it)."""


def arguments_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="log files of one job; '-' reads standard input")
    parser.add_argument("--json", action="store_true", help="print the JSON of the diagnosis contract")
    parser.add_argument("--top", type=int, default=5, help="how many cases to list (default 5)")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        help="refuse inputs larger than this (no limit by default: the web limit is for uploads)",
    )


@dataclass
class PathsJob:
    """The job's sources (logs stay files, read in windows, never whole), and what reading directories and archives
    said of them: the ranks their paths name, notes on what was set aside, the dumps already unpickled."""

    sources: list[tuple[str, Source]] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unpickled: dict[str, Any] = field(default_factory=dict)

    def read_facts(self) -> dict[str, Any]:
        """diagnosis.diagnose's keyword arguments for what was read besides the sources."""
        return {"ranks": self.ranks, "notes": self.notes, "unpickled": self.unpickled}


def sources_read(paths: list[str], max_bytes: int | None) -> PathsJob:
    """The job named by command-line paths: files, directories, archives and '-' for standard input."""
    read = PathsJob()
    sources, notes = read.sources, read.notes
    for path in paths:
        if path == "-":
            sources.append(("stdin", sys.stdin.buffer))
            continue
        file = Path(path)
        if not file.exists():
            raise CliError(f"no such file or directory: {path}")
        if max_bytes is not None and file.is_file() and file.stat().st_size > max_bytes:
            raise CliError(f"{path} is {file.stat().st_size} bytes; --max-bytes is {max_bytes}")
        if file.is_dir() or file.name.endswith(ARCHIVE_SUFFIXES) or _is_dump(file):
            from diagnosis.job_files import JobInputError, job_read  # tarfile, zipfile and their codecs: 7 ms a start otherwise

            try:
                job = job_read(file)
            except JobInputError as err:
                raise CliError(f"{path}: {err}") from None
            notes += job.notes
            sources += job.sources()
            read.ranks.update(job.ranks())
            read.unpickled.update(job.unpickled())
        else:
            sources.append((file.name, file))
    if not sources:
        raise CliError("nothing to diagnose: " + ("; ".join(notes) or "no log files found"))
    return read


# The most a worker holds while it reads a run of a large log's windows: the bench's 600 MB logs peaked at 118-140 MB a
# worker (the sum of high-water marks, 2 workers on the 2-core development machine, 16 on a 16-core one).
WORKER_BYTES = 160 * 1024 * 1024


def workers_allowed() -> int:
    """A worker process a core, but no more than a quarter of the memory left can hold: a login node is shared, and a
    large log is read by every worker at once (16 cores: about 2 GB in all for a 600 MB log, against 0.35 GB on 2)."""
    cores = os.cpu_count() or 1
    try:
        available = memory_available_bytes()
    except (OSError, ValueError):  # no /proc/meminfo (macOS): a worker a core
        return cores
    return max(1, min(cores, available // 4 // WORKER_BYTES))


def top_check(top: int) -> None:
    if top < 1:
        raise CliError("--top must be at least 1")


def answer_text(result: Result, as_json: bool) -> str:
    return json_text(result.to_json()) if as_json else result.to_text()


def _is_dump(file: Path) -> bool:
    """A Flight Recorder dump given as a file (its start and its keys say so)."""
    with file.open("rb") as handle:
        head = handle.read(1 << 20)
    return flight_recorder_detect(file.name, head)


# Options Django's own management commands take: given one, manage.py leaves the command to Django.
DJANGO_OPTIONS = (
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
    "-v",
    "--verbosity",
)


def fast_main(
    argv: list[str],
    *,
    content_dir: Path | None = None,
    index_dir: Path | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int | None:
    """Answer `manage.py diagnose ARGS` from the published rules snapshot; None leaves it to Django (no
    snapshot yet, help asked for, or an option of Django's own)."""
    if any(arg in ("-h", "--help") or arg.startswith(DJANGO_OPTIONS) for arg in argv):
        return None
    if content_dir is None or index_dir is None:
        settings = importlib.import_module(os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"))
        content_dir, index_dir = Path(settings.CONTENT_DIR), Path(settings.SEARCH_INDEX_DIR)
    snapshot = rules_snapshot_read(index_dir)
    if snapshot is None:
        return None
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    parser = argparse.ArgumentParser(prog="manage.py diagnose", description=HELP)
    arguments_add(parser)
    args = parser.parse_args(argv)
    drift = drift_text(snapshot.revision, content_revision(content_dir))
    if drift:
        stderr.write(f"Warning: {drift} {LOAD_HINT}\n")
    try:
        top_check(args.top)
        job = sources_read(args.paths, args.max_bytes)
    except CliError as err:
        stderr.write(f"CommandError: {err}\n")
        return 1
    result = diagnosis.diagnose(
        job.sources, snapshot.rules, snapshot.catalog, top=args.top, workers=workers_allowed(), **job.read_facts()
    )
    stdout.write(answer_text(result, args.json) + "\n")
    return 0
