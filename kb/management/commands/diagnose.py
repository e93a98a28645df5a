"""`python manage.py diagnose PATH... [--json] [--top N]`: the same diagnosis as the site, on the command line.

Several paths are one job's logs (ranks or nodes); `-` reads standard input.
"""

import json
import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kb.checks import content_drift_check
from kb.diagnose import diagnosis_json, diagnosis_run
from kb.diagnosis.engine import CONFIDENT
from kb.diagnosis.flight_recorder import flight_recorder_detect
from kb.job_input import JobInputError, job_read

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip", ".gz")


def _is_dump(file: Path) -> bool:
    """A Flight Recorder dump given as a file (its start and its keys say so)."""
    with file.open("rb") as handle:
        head = handle.read(1 << 20)
    return flight_recorder_detect(file.name, head)


class Command(BaseCommand):
    help = (
        "Rank the known cases that explain a job's logs, with evidence lines and extracted facts. Paths may be "
        "log files, a directory (torchrun --log-dir, Slurm outputs), a .tar/.tar.gz/.zip of one, or Flight "
        "Recorder dumps."
    )

    # The full system checks import every URLconf and view (a third of the start-up); the one that matters here,
    # whether the loaded content is current, is run by handle().
    requires_system_checks: list = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="log files of one job; '-' reads standard input")
        parser.add_argument("--json", action="store_true", help="print the JSON of the diagnosis contract")
        parser.add_argument("--top", type=int, default=5, help="how many cases to list (default 5)")
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=None,
            help="refuse inputs larger than this (no limit by default: the web limit is for uploads)",
        )

    def handle(self, *args, paths: list[str], json: bool, top: int, max_bytes: int | None, **options) -> None:
        if top < 1:
            raise CommandError("--top must be at least 1")
        for warning in content_drift_check(None):
            self.stderr.write(f"Warning: {warning.msg} {warning.hint}")
        sources: list = []
        ranks: dict[str, int] = {}
        notes: list[str] = []
        for path in paths:
            if path == "-":
                sources.append(("stdin", sys.stdin.buffer))  # read in windows, never whole
                continue
            file = Path(path)
            if not file.exists():
                raise CommandError(f"no such file or directory: {path}")
            if max_bytes is not None and file.is_file() and file.stat().st_size > max_bytes:
                raise CommandError(f"{path} is {file.stat().st_size} bytes; --max-bytes is {max_bytes}")
            if file.is_dir() or file.name.endswith(ARCHIVE_SUFFIXES) or _is_dump(file):
                try:
                    job = job_read(file)
                except JobInputError as err:
                    raise CommandError(f"{path}: {err}") from None
                notes += job.notes
                sources += job.sources()
                ranks.update(job.ranks())
            else:
                sources.append((file.name, file))  # a log: read in windows, never whole
        if not sources:
            raise CommandError("nothing to diagnose: " + ("; ".join(notes) or "no log files found"))
        result = diagnosis_json(diagnosis_run(sources, top=top, workers=os.cpu_count() or 1, ranks=ranks), notes=notes)
        if json:
            self.stdout.write(_json_dump(result))
        else:
            self.stdout.write(_text(result))


def _json_dump(result: dict) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def _text(result: dict) -> str:
    out = []
    stats = result["stats"]
    out.append(f"Read {stats['lines']} lines ({stats['bytes']} bytes) in {stats['ms']} ms.")
    confident = [m for m in result["matches"] if m["confidence"] >= CONFIDENT]
    if "first_failure" in result:
        out.append(f"First failure: {result['first_failure']['summary']}.")
    if confident and confident[0]["kind"] == "guide":
        out.append(
            "Not enough to tell why: the log shows a timeout and nothing that explains it. "
            f"Next step: {confident[0]['title']} ({confident[0]['url']})."
        )
    elif not confident:
        out.append(
            "No failure found in this log: every suspicious line is a known-harmless message."
            if result["harmless"]
            else "No known case explains this log with confidence."
        )
    for number, match in enumerate(result["matches"], 1):
        kind = " (guide)" if match["kind"] == "guide" else ""
        out.append(f"\n{number}. {match['title']}  [{match['slug']}]{kind}  confidence {match['confidence']:.2f}")
        if match["fix_url"]:
            out.append(f"   do this first: {match['fix_url']}")
        for evidence in match["evidence"][:6]:
            where = f"{evidence['file']}:" if "file" in evidence else ""
            out.append(f"   {where}{evidence['line']:>6}  {evidence['text'][:160]}")
    if "ranks" in result:
        out.append(f"\nRanks: {result['ranks']['summary']}")
        groups = result["ranks"]["groups"]
        if len(groups) > 1:
            out.append("  " + " · ".join(f"{g['label']}: {g['where']}{' (odd one out)' if g['odd'] else ''}" for g in groups))
    if "rank_groups" in result:
        out.append("\nWhere is every rank: " + result["rank_groups"]["summary"])
        for group in result["rank_groups"]["groups"]:
            link = f"  -> {group['fix_url']}" if group["fix_url"] else ""
            who = f" ({group['label']})" if group["count"] > 1 else ""
            out.append(f"  {'*' if group['odd'] else ' '} {group['text']}{who}{link}")
    if "flight_recorder" in result:
        out.append(f"\nFlight Recorder: {result['flight_recorder']['summary']}")
        for group in result["flight_recorder"]["groups"]:
            out.append(f"  {'*' if group.get('odd') else ' '} {group['where']}")
    if "stacks" in result:
        out.append(
            "\nStacks: "
            + " · ".join(
                f"{g['label']} in {g['where']}{' (odd one out)' if g['odd'] else ''}" for g in result["stacks"]["groups"]
            )
        )
    for harmless in result["harmless"]:
        where = f"{harmless['file']}:" if "file" in harmless else ""
        out.append(f"\nNot the problem: {where}{harmless['line']}: {harmless['title']} ({harmless['url']})")
    if result["facts"]:
        out.append("\nFacts: " + ", ".join(f"{k}={v}" for k, v in result["facts"].items()))
    return "\n".join(out)
