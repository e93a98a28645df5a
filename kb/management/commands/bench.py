"""`python manage.py bench` (via `make bench`): diagnosis MB/s against grep -c on two log shapes, 64 rank files
on all cores, the command line on a large log (time and peak memory), text-search latency, and the requests per
second gunicorn serves for a case page and a search, against a trivial view in the same run."""

import contextlib
import http.client
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from django.conf import settings
from django.core.management.base import BaseCommand

from tools.benchmark import (
    TYPICAL_ERRORS,
    bench_log_write,
    best_of,
    console_log_write,
    files_split,
    grep_count,
    latency_summary,
    process_children,
    process_status_kb,
    wrk_summary,
)
from config.hugepages import environ_with_huge_pages
from config.memory import memory_available_bytes
from config.serve import worker_budget_bytes, workers_plan
from kb.diagnose import diagnosis_run, rules_current
from kb.search.index import search, search_cache_clear


SHAPES = (("multi-rank Megatron log", bench_log_write), ("torchrun console log", console_log_write))


class Command(BaseCommand):
    help = "Benchmark log diagnosis against grep and measure text-search latency."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--megabytes", type=int, default=50)
        parser.add_argument("--big-megabytes", type=int, default=600, help="size of the command-line run (0 skips it)")
        parser.add_argument(
            "--runs", type=int, default=7, help="each timing is the best of this many runs (a busy machine varies by 20-30%%)"
        )
        parser.add_argument("--page-seconds", type=int, default=6, help="wrk's time per page (0 skips page throughput)")

    def handle(self, *args, megabytes: int, big_megabytes: int, runs: int, page_seconds: int, **options) -> None:
        rules_current()  # compile once, outside the timing, as a long-running server does
        cores = os.cpu_count() or 1
        self.stdout.write(f"machine: {cores} cores")
        with tempfile.TemporaryDirectory() as tmp:
            for shape, writer in SHAPES:
                path = Path(tmp) / f"{shape.split()[0]}.log"
                size = writer(path, size_bytes=megabytes * 1024 * 1024)
                _hung_for_an_hour(path)
                mb = size / (1024 * 1024)
                (seconds, result), (grep_s, watchdog_lines) = best_of(
                    runs, lambda: diagnosis_run([(path.name, path)]), lambda: grep_count(path)
                )
                diagnosis = result.diagnosis
                top = diagnosis.matches[0] if diagnosis.matches else None
                self.stdout.write(
                    f"\n{shape}: {mb:.1f} MB, {diagnosis.stats['lines']} lines, {watchdog_lines} watchdog lines (deterministic)"
                )
                self.stdout.write(
                    f"  diagnose: {seconds * 1000:.0f} ms = {mb / seconds:.1f} MB/s "
                    f"(best of {runs}; top case {top.slug if top else 'none'} at {top.confidence if top else 0:.2f})"
                )
                self.stdout.write(f"  grep -c baseline: {grep_s * 1000:.0f} ms = {mb / grep_s:.1f} MB/s")
                self.stdout.write(f"  ratio diagnose/grep: {seconds / grep_s:.1f}x")
            console = Path(tmp) / "torchrun.log"
            ranks = files_split(console, Path(tmp) / "ranks", 64)
            for rank_file in ranks:
                _hung_for_an_hour(rank_file)
            (one, _), (many, _) = best_of(
                runs,
                lambda: diagnosis_run([(p.name, p) for p in ranks], workers=1),
                lambda: diagnosis_run([(p.name, p) for p in ranks], workers=cores),
            )
            self.stdout.write(
                f"\n64 rank files ({megabytes} MB): one process {one * 1000:.0f} ms, {cores} processes "
                f"{many * 1000:.0f} ms: {one / many:.2f}x the single-core throughput"
            )
            if big_megabytes:
                self._big_runs(Path(tmp), big_megabytes)
            self._start_up(Path(tmp))
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
        if page_seconds:
            self._page_throughput(page_seconds)

    def _page_throughput(self, seconds: int) -> None:
        """One gunicorn (DEBUG off, `make serve`'s worker count, no proxy) on a loopback port; wrk asks for each
        page for `seconds` in all, in rounds, after a warm-up that has every worker compile its templates and open the
        index."""
        wrk = shutil.which("wrk")
        if wrk is None:
            self.stdout.write("\npage throughput: skipped, wrk is not installed (`make bench` installs it with apt)")
            return
        workers = workers_plan(
            cpus=len(os.sched_getaffinity(0)),
            available_bytes=memory_available_bytes(),
            budget_bytes=worker_budget_bytes(max_job_bytes=settings.KB_MAX_JOB_BYTES),
        ).workers
        connections = 2 * workers
        rounds = max(1, seconds // 2)  # whole seconds: wrk reads its duration as an integer
        # A warm-up round, then `rounds` measured rounds of the pages in turn, so that a spell when the shared
        # machine is busier or quieter weighs on every page alike. A page's share of the trivial view's rate is taken
        # in each round (pages next to each other in time) and the median of those shares is the figure.
        rates: dict[str, list[float]] = {label: [] for label, _ in PAGES}
        errors = dict.fromkeys(rates, 0)
        with tempfile.TemporaryDirectory() as tmp, _gunicorn(Path(tmp), workers) as base:
            for measured in [False] + [True] * rounds:
                for label, path in PAGES:
                    round_seconds = seconds // rounds if measured else 1
                    command = [wrk, "-t1", f"-c{connections}", f"-d{round_seconds}s", "--timeout", "10s", base + path]
                    done = subprocess.run(command, capture_output=True, text=True, check=True)
                    if measured:
                        rate, failed = wrk_summary(done.stdout)
                        rates[label].append(rate)
                        errors[label] += failed
        trivial = rates[PAGES[0][0]]
        self.stdout.write(
            f"\npage throughput, one gunicorn run ({workers} sync workers, DEBUG off, no proxy; wrk: 1 thread, "
            f"{connections} connections; {rounds} rounds of {seconds // rounds} s a page, pages in turn):"
        )
        for label, path in PAGES:
            line = f"  {label} {path}: {statistics.mean(rates[label]):.0f} requests/s"
            if label != PAGES[0][0]:
                shares = [rate / base_rate for rate, base_rate in zip(rates[label], trivial)]
                line += (
                    f" = {statistics.median(shares):.0%} of the trivial view's (median of the rounds' "
                    f"{', '.join(f'{share:.0%}' for share in shares)}; target 50%)"
                )
            self.stdout.write(line + (f", {errors[label]} failed" if errors[label] else ""))

    def _big_runs(self, folder: Path, megabytes: int, runs: int = 5) -> None:
        """The command line on a large log of each shape, in its own process: wall time (the best of `runs`), peak
        memory (the highest of the runs), and grep. The shapes take turns, each run followed by grep on the same file,
        so that a slow spell of the machine weighs on both shapes and on grep rather than on one shape's every run."""
        logs = []
        for shape, writer in SHAPES:
            path = folder / f"big-{shape.split()[0]}.log"
            size = writer(path, size_bytes=megabytes * 1024 * 1024)
            _hung_for_an_hour(path)
            logs.append(_BigLog(shape, path, size / (1024 * 1024)))
        for _ in range(runs):
            for log in logs:
                took, peak, code = _command_run([sys.executable, "manage.py", "diagnose", str(log.path), "--json"])
                log.times.append(took)
                log.peak_kb = max(log.peak_kb, peak)
                log.outcome = log.outcome if code == 0 else f"exit {code}"
                ((grep_took, _),) = best_of(1, lambda: grep_count(log.path))
                log.grep_s = min(log.grep_s, grep_took)
        for log in logs:
            seconds = min(log.times)
            self.stdout.write(
                f"\ncommand line on a {log.mb:.0f} MB {log.shape}: {seconds:.2f} s = {log.mb / seconds:.0f} MB/s (best of "
                f"{', '.join(f'{took:.2f}' for took in log.times)} s), peak memory {log.peak_kb / 1024:.0f} MB with its "
                f"workers ({log.outcome}); grep -c {log.grep_s:.2f} s; ratio {seconds / log.grep_s:.1f}x (includes start-up)"
            )
            log.path.unlink()

    def _start_up(self, folder: Path, runs: int = 9) -> None:
        """`manage.py diagnose` on a 3-line log, as a user runs it: the median wall time of whole processes."""
        path = folder / "three.log"
        path.write_text(
            "loading checkpoint\n"
            "[rank1]:[E1123 04:00:01.100 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600001 milliseconds before timing out.\nexiting\n"
        )
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "manage.py", "diagnose", str(path)],
                cwd=settings.BASE_DIR,
                env={**os.environ, "KB_INDEX_DIR": str(settings.SEARCH_INDEX_DIR)},  # the build this process reads
                capture_output=True,
                check=True,
            )
            samples.append(time.perf_counter() - started)
        self.stdout.write(
            f"\ncommand line on a 3-line log, start-up included: median {statistics.median(samples):.2f} s of {runs} runs"
        )


@dataclass
class _BigLog:
    """One shape's large log and what its command-line runs gave."""

    shape: str
    path: Path
    mb: float
    times: list[float] = field(default_factory=list)
    grep_s: float = float("inf")
    peak_kb: int = 0
    outcome: str = "ok"


# The trivial view first: the pages are measured against it.
PAGES = (
    ("trivial view", "/healthz"),
    ("case page", "/kb/llama3-fsdp-allgather-timeout/"),
    ("keyword search", "/search?q=NCCL_SOCKET_IFNAME"),
)


@contextlib.contextmanager
def _gunicorn(folder: Path, workers: int) -> Iterator[str]:
    """gunicorn as `make serve` runs it, on a free loopback port, serving this bench's database and index; yields
    its base URL and stops it on the way out."""
    database = settings.DATABASES["default"]
    environment = environ_with_huge_pages(os.environ)
    environment.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        ALLOWED_HOSTS="127.0.0.1",
        KB_STATIC_ROOT=str(folder / "static"),
        KB_INDEX_DIR=str(settings.SEARCH_INDEX_DIR),
        **({"SQLITE_PATH": str(database["NAME"])} if database["ENGINE"].endswith("sqlite3") else {}),
    )
    manage = [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"]
    subprocess.run(manage, cwd=settings.BASE_DIR, env=environment, check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--no-control-socket",
    ]
    server = subprocess.Popen(command, cwd=settings.BASE_DIR, env=environment, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            finally:
                connection.close()
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start on {base}")
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _hung_for_an_hour(path: Path) -> None:
    """The log of a hung job was last written when it hung, not a second ago: a file written in the last few
    seconds is read as a live log (diagnosis.reading.LIVE_SECONDS), and the bench measures the usual case."""
    then = time.time() - 3600
    os.utime(path, (then, then))


def _command_run(command: list[str]) -> tuple[float, int, int]:
    """Run a command as a user would: its wall time, the sum of its processes' high-water marks (kB), its exit code."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command,
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    peaks: dict[int, int] = {}
    watcher = threading.Thread(target=_high_water_watch, args=(child, peaks), daemon=True)
    watcher.start()
    code = child.wait()
    seconds = time.perf_counter() - started
    watcher.join()
    return seconds, sum(peaks.values()), code


# How often the watcher reads /proc: every 10 ms it took 55-70 ms of CPU a second (every 50 ms, 12), taken from the
# command's workers, which fill every core. A worker reaches its high-water mark in its first windows and keeps it
# until it exits, so reading every 50 ms still finds it (the bench's figures: 273-290 and 294-296 MB either way).
WATCH_SECONDS = 0.05


def _high_water_watch(child: subprocess.Popen, peaks: dict[int, int]) -> None:
    """The high-water mark (VmHWM) of the command and of each worker it forks, until it exits: their sum bounds
    what the run held at once. Read from /proc, since getrusage would count the forked parent's own."""
    while child.poll() is None:
        pending = [child.pid]
        while pending:
            pid = pending.pop()
            peaks[pid] = max(peaks.get(pid, 0), process_status_kb(pid).get("VmHWM", 0))
            pending += process_children(pid)
        time.sleep(WATCH_SECONDS)
