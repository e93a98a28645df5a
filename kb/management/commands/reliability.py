"""`python manage.py reliability`: the engine over the project's own labelled logs, scored, with a
reliability table (how often a match in each confidence band is right)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from tools.corpus import content_rules, corpus_entries, corpus_score, entry_diagnose, entry_verdict


class Command(BaseCommand):
    requires_system_checks: list = []  # reads content/ files, not the database
    help = "Score the diagnosis on tests/fixtures/logs and print its reliability table."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--root", default=str(Path(settings.BASE_DIR) / "tests" / "fixtures" / "logs"))
        parser.add_argument("-v2", "--misses", action="store_true", help="list every log the engine gets wrong")

    def handle(self, *args, root: str, misses: bool, **options) -> None:
        rules = content_rules(settings.CONTENT_DIR)
        verdicts = [entry_verdict(e, entry_diagnose(e, rules)) for e in corpus_entries(Path(root))]
        if misses:
            for v in verdicts:
                if not v.ok:
                    got = ", ".join(f"{s}:{c:.2f}" for s, c in v.top3) or "nothing"
                    self.stdout.write(
                        f"MISS {v.entry.id}: want {v.entry.primary or list(v.entry.acceptable) or 'no match'}; got {got}"
                    )
        score = corpus_score(verdicts)
        fmt = lambda x: "  –  " if x is None else f"{x:.2f}"  # noqa: E731
        self.stdout.write(
            f"\nOwn corpus: {score['all']['n']} logs  top1={fmt(score['all']['top1'])} "
            f"hit3={fmt(score['all']['hit3'])} neg={fmt(score['all']['neg'])}"
        )
        self.stdout.write("\ncategory        n   top1  hit3  neg")
        for name, s in score["by_category"].items():
            self.stdout.write(f"{name:<14}{s['n']:>3}  {fmt(s['top1'])}  {fmt(s['hit3'])}  {fmt(s['neg'])}")
        self.stdout.write("\nReliability of the first match (confidence band → share right)")
        for band in score["bands"]:
            self.stdout.write(f"  {band['band']:<9} n={band['n']:<4} right={band['right']:<4} share={fmt(band['share'])}")
        self.stdout.write(f"Confident first matches (≥ 0.5): {score['confident_n']}, right: {fmt(score['confident_precision'])}")
