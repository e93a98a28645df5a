"""`python manage.py diagnose PATH... [--json] [--top N]` under Django, with the rules from the database.
manage.py answers without Django when the content's rules snapshot is published (kb/cli.py says how)."""

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from kb.checks import content_drift_check
from kb.cli import HELP, CliError, answer_text, arguments_add, sources_read, top_check, workers_allowed
from kb.diagnose import diagnosis_run


class Command(BaseCommand):
    help = HELP
    # The full system checks import every URLconf and view (a third of the start-up); the one that matters here,
    # whether the loaded content is current, is run by handle().
    requires_system_checks: list = []

    def add_arguments(self, parser) -> None:
        arguments_add(parser)

    def handle(self, *args, paths: list[str], json: bool, top: int, max_bytes: int | None, **options) -> None:
        try:
            top_check(top)
            for warning in content_drift_check(None):
                self.stderr.write(f"Warning: {warning.msg} {warning.hint}")
            job = sources_read(paths, max_bytes)
        except CliError as err:
            raise CommandError(str(err)) from None
        try:
            result = diagnosis_run(job.sources, top=top, workers=workers_allowed(), **job.read_facts())
        except DatabaseError as err:  # a fresh checkout: no database, or no tables in it, and no published snapshot
            raise CommandError(f"no content is loaded here ({err}). Run: make content") from None
        self.stdout.write(answer_text(result, json))
