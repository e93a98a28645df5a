"""`python manage.py bench` (via `make bench`): diagnosis MB/s against grep -c, and text-search latency."""
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from kb.benchmark import TYPICAL_ERRORS, bench_log_write, best_of, grep_seconds, latency_summary
from kb.diagnose import diagnosis_run, rules_current
from kb.search.index import search, search_cache_clear


class Command(BaseCommand):
    help = "Benchmark log diagnosis against grep and measure text-search latency."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--megabytes", type=int, default=50)
        parser.add_argument("--runs", type=int, default=3)

    def handle(self, *args, megabytes: int, runs: int, **options) -> None:
        rules_current()  # compile once, outside the timing, as a long-running server does
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.log"
            size = bench_log_write(path, size_bytes=megabytes * 1024 * 1024)
            data = path.read_bytes()
            mb = size / (1024 * 1024)
            seconds, diagnosis = best_of(runs, lambda: diagnosis_run([("bench.log", data)]))
            grep_s, grep_count = grep_seconds(path, runs)
        top = diagnosis.matches[0] if diagnosis.matches else None
        self.stdout.write(f"log: {mb:.1f} MB, {diagnosis.stats['lines']} lines, {grep_count} watchdog lines (deterministic)")
        self.stdout.write(f"diagnose: {seconds * 1000:.0f} ms = {mb / seconds:.1f} MB/s "
                          f"(best of {runs}; top case {top.slug if top else 'none'} at {top.confidence if top else 0:.2f})")
        self.stdout.write(f"grep -c baseline: {grep_s * 1000:.0f} ms = {mb / grep_s:.1f} MB/s")
        self.stdout.write(f"ratio diagnose/grep: {seconds / grep_s:.1f}x")
        search(TYPICAL_ERRORS[0], index_dir=settings.SEARCH_INDEX_DIR)  # open the index once, as a warm worker has
        for cached in (False, True):
            samples = []
            for _ in range(5):
                for line in TYPICAL_ERRORS:
                    if not cached:
                        search_cache_clear()  # measure Whoosh itself, not the per-worker result cache
                    started = time.perf_counter()
                    search(line, index_dir=settings.SEARCH_INDEX_DIR)
                    samples.append((time.perf_counter() - started) * 1000)
            label = "repeated (result cache)" if cached else "uncached"
            self.stdout.write(f"text search {label}, {len(TYPICAL_ERRORS)} typical error lines x5: {latency_summary(samples)}")
