"""`python manage.py load_content`: validate content/, then write the database and the search index."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kb.content.errors import ContentInvalid
from kb.content.load import content_load


class Command(BaseCommand):
    requires_system_checks: list = []  # the content-drift warning is what this command resolves
    help = "Validate every content file, then load cases into the database and rebuild the search index."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--force", action="store_true", help="load and publish even when this revision is already loaded")

    def handle(self, *args, force: bool = False, **options) -> None:
        try:
            report = content_load(content_dir=settings.CONTENT_DIR, index_dir=settings.SEARCH_INDEX_DIR, force=force)
        except ContentInvalid as err:
            for error in err.errors:
                self.stderr.write(str(error))
            raise CommandError(f"{len(err.errors)} content problem(s); nothing was changed.")
        if report.skipped:
            self.stdout.write(
                f"Content revision {report.revision} is already loaded and published; nothing to do (--force reloads)."
            )
            return
        self.stdout.write(
            f"Loaded {report.total} cases (revision {report.revision}): {report.created} new, "
            f"{report.updated} updated, {report.deleted} removed; search index rebuilt."
        )
