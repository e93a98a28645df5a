"""`python manage.py loadtest_inputs --paths F --log L`: the request mix and the 1 MB log for `make loadtest`."""

from itertools import islice
from pathlib import Path

from django.core.management.base import BaseCommand
from django.urls import reverse

from tools.benchmark import TYPICAL_ERRORS, bench_log_write
from kb.models import Case
from troubleshooter.library import library_published
from troubleshooter.tree_model import tree_walk
from troubleshooter.links import script_url, step_url
from urllib.parse import urlencode


class Command(BaseCommand):
    help = "Write the mixed request list and the 1 MB log that the load test sends."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--paths", type=Path, required=True)
        parser.add_argument("--log", type=Path, required=True)

    def handle(self, *args, paths: Path, log: Path, **options) -> None:
        bench_log_write(log, size_bytes=1024 * 1024, ranks=16)
        lines = [f"GET {case.get_absolute_url()}" for case in Case.objects.only("slug")]
        lines += [f"GET {reverse('kb:search')}?{urlencode({'q': q})}" for q in TYPICAL_ERRORS]
        library = library_published()
        for tree_id, tree in sorted(library.trees.items()):
            for answers in islice(tree_walk(tree), 0, 400, 40):
                partial = dict(list(answers.items())[: max(1, len(answers) // 2)])
                lines += [
                    f"GET {step_url(tree_id, partial)}",
                    f"GET {step_url(tree_id, answers)}",
                    f"GET {script_url(tree_id, answers)}",
                ]
        lines += [f"GET {reverse('kb:home')}"] * 2
        # One diagnose post of the 1 MB log for every ten other requests.
        mixed = []
        diagnose = f"POST {reverse('kb:api_diagnose')}"
        for index, line in enumerate(lines):
            mixed.append(line)
            if index % 10 == 9:
                mixed.append(diagnose)
        paths.write_text("\n".join(mixed) + "\n")
        self.stdout.write(f"{len(mixed)} requests in the mix, {sum(1 for m in mixed if m.startswith('POST'))} of them 1 MB posts")
