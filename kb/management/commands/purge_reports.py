"""Delete shared reports past their expiry (run it daily from cron; see README, "Shared reports")."""

from django.core.management.base import BaseCommand

from kb.reports.store import reports_purge


class Command(BaseCommand):
    help = "Delete shared diagnosis reports whose expiry date has passed."

    def handle(self, *args, **options) -> None:
        count = reports_purge()
        self.stdout.write(f"Deleted {count} expired report{'s' if count != 1 else ''}.")
