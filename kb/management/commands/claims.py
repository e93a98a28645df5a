"""`python manage.py claims` (`make claims`): every claim in content/ that rests on reading alone, oldest first."""

import datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from kb.content.claims import content_claims
from kb.content.prose_ranges import Wordings


class Command(BaseCommand):
    requires_system_checks: list = []  # reads content/ only; the database plays no part
    help = (
        "List every claim the machine cannot check (a signature's, frame's, fix step's or harmless line's source, "
        "each content/names.yaml entry, and each version statement in case prose that no catalogue judges) with what "
        "was read and its age in days, oldest first; undated ones first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than", type=int, default=0, metavar="DAYS", help="only claims read at least DAYS ago (and undated ones)"
        )
        parser.add_argument("--dated", action="store_true", help="leave out undated claims")

    def handle(self, *args, **options) -> None:
        today = datetime.date.today()
        shown = 0
        kinds: dict[str, int] = {}
        for claim in content_claims(settings.CONTENT_DIR, _wordings(Path(settings.CONTENT_DIR))):
            age = claim.age(today)
            if (age is None and options["dated"]) or (age is not None and age < options["older_than"]):
                continue
            shown += 1
            kinds[claim.kind] = kinds.get(claim.kind, 0) + 1
            when = "undated" if age is None else f"{age} days ({claim.checked.isoformat()})"
            read = claim.read or "nothing cited"
            self.stdout.write(f"{when:<20} {claim.file}:{claim.line}  {claim.subject}\n{'':<20} read: {read}")
        self.stdout.write("by kind: " + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
        self.stdout.write(f"{shown} claim(s).")


def _wordings(content_dir: Path) -> Wordings | None:
    """The message catalogue, so that prose statements it judges are not listed (parsed YAML kept in var/cache)."""
    from diagnosis.catalogue import Catalogue

    folder = content_dir / "catalogue" / "messages"
    if not any(folder.glob("*.yaml")):
        return None
    cache = Path(settings.BASE_DIR) / "var" / "cache"
    return Wordings.from_messages(Catalogue.load(folder, use_hyperscan=False, cache_dir=cache))
