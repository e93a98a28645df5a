"""`python manage.py validate_content`: report every content problem without touching the database."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kb.content.load import content_check


class Command(BaseCommand):
    requires_system_checks: list = []  # the content-drift warning is what this command resolves
    help = "Check every content file and print file:line for each problem."

    def handle(self, *args, **options) -> None:
        docs, harmless, errors = content_check(settings.CONTENT_DIR)
        for error in errors:
            self.stderr.write(str(error))
        if errors:
            raise CommandError(f"{len(errors)} content problem(s).")
        self.stdout.write(f"{len(docs)} cases and {len(harmless)} harmless entries are valid.")
