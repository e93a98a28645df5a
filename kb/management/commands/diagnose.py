"""`python manage.py diagnose PATH... [--json] [--top N]`: the same diagnosis as the site, on the command line.

Several paths are one job's logs (ranks or nodes); `-` reads standard input.
"""
import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kb.diagnose import diagnosis_json, diagnosis_run
from kb.diagnosis.engine import CONFIDENT


class Command(BaseCommand):
    help = "Rank the known cases that explain a log, with evidence lines and extracted facts."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="log files of one job; '-' reads standard input")
        parser.add_argument("--json", action="store_true", help="print the JSON of the diagnosis contract")
        parser.add_argument("--top", type=int, default=5, help="how many cases to list (default 5)")

    def handle(self, *args, paths: list[str], json: bool, top: int, **options) -> None:
        if top < 1:
            raise CommandError("--top must be at least 1")
        sources = []
        for path in paths:
            if path == "-":
                data = sys.stdin.buffer.read()
                name = "stdin"
            else:
                file = Path(path)
                if not file.is_file():
                    raise CommandError(f"no such file: {path}")
                data = file.read_bytes()
                name = file.name
            if len(data) > settings.KB_MAX_LOG_BYTES:
                raise CommandError(f"{path} is {len(data)} bytes; the limit is {settings.KB_MAX_LOG_BYTES} (KB_MAX_LOG_BYTES)")
            sources.append((name, data))
        result = diagnosis_json(diagnosis_run(sources, top=top))
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
    if not any(m["confidence"] >= CONFIDENT for m in result["matches"]):
        out.append("No known case explains this log with confidence.")
    for number, match in enumerate(result["matches"], 1):
        out.append(f"\n{number}. {match['title']}  [{match['slug']}]  confidence {match['confidence']:.2f}")
        for evidence in match["evidence"][:6]:
            where = f"{evidence['file']}:" if "file" in evidence else ""
            out.append(f"   {where}{evidence['line']:>6}  {evidence['text'][:160]}")
    if "ranks" in result:
        out.append(f"\nRanks: {result['ranks']['summary']}")
    if result["facts"]:
        out.append("\nFacts: " + ", ".join(f"{k}={v}" for k, v in result["facts"].items()))
    return "\n".join(out)
