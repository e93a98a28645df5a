"""The large-upload part of `make loadtest` (issue 14, item 5): 8 clients each upload a crafted 45 MB log at once.

    python tests/load/uploads.py --port 8199 --var var [--clients 8] [--megabytes 45]

The log is the costliest input per byte measured (watchdog timeouts from ever new ranks and sequence numbers, as
tests/load/adversaries.py sends in 1 MB pieces), uploaded as a file to /api/diagnose from 127.0.0.1, which
`make loadtest` exempts from the rate limit. While the uploads run, the gunicorn master and workers of the stack
serving VAR are sampled every 0.2 s. It prints one line and fails (exit 1) when an answer is not a 200 diagnosis (one cut
short at the diagnosis budget, `partial`, is one),
when one took longer than gunicorn's worker timeout, or when a worker's peak memory passed the budget
config/serve.py sizes the worker count by (so the host's memory, not luck, bounds what the uploads cost).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from adversaries import crafted_log  # noqa: E402
from config.serve import worker_budget_bytes  # noqa: E402
from tools.benchmark import bench_log_write, process_status_kb  # noqa: E402

WORKER_TIMEOUT_S = 120  # config/serve.py's default --timeout, which `make serve` keeps
BOUNDARY = "loadtest-upload-boundary"


@dataclass
class Memory:
    """The stack's gunicorn processes: the peak of their summed resident memory, and each worker's own peak."""

    socket: str
    peak_total_bytes: int = 0
    worker_peaks: dict[int, int] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)

    def gunicorn(self) -> tuple[int | None, list[int]]:
        """The master and its workers (forked, so they have the master's command line: the master is the one whose
        parent is not one of them)."""
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if "gunicorn" in command and f"unix:{self.socket}" in command:
                parents[int(entry.name)] = parent
        master = next((pid for pid, parent in parents.items() if parent not in parents), None)
        return master, [pid for pid, parent in parents.items() if parent == master]

    def sample(self) -> None:
        while not self.stopping.wait(0.2):
            master, workers = self.gunicorn()
            total = 0
            for pid in ([master] if master else []) + workers:
                status = process_status_kb(pid)
                total += status.get("VmRSS", 0) * 1024
                if pid != master:
                    self.worker_peaks[pid] = max(self.worker_peaks.get(pid, 0), status.get("VmHWM", 0) * 1024)
            self.peak_total_bytes = max(self.peak_total_bytes, total)


def upload(port: int, body: bytes, results: list, lock: threading.Lock) -> None:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3 * WORKER_TIMEOUT_S)  # queued, then served
    try:
        connection.request(
            "POST", "/api/diagnose", body=body, headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
        )
        response = connection.getresponse()
        answer = response.read()
        status = response.status
        partial = status == 200 and json.loads(answer)["stats"].get("partial")
        outcome = f"{status}{' partial' if partial else ''}"
    except OSError as err:
        outcome = type(err).__name__
    finally:
        connection.close()
    with lock:
        results.append((outcome, time.monotonic() - started))


def megatron_log(size: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "megatron.log"
        bench_log_write(path, size_bytes=size)
        return path.read_bytes()


def multipart(log: bytes) -> bytes:
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="rank-all.log"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    return head + log + f"\r\n--{BOUNDARY}--\r\n".encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--var", type=Path, required=True, help="the var folder of the `make serve` being tested")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--megabytes", type=int, default=45)
    parser.add_argument(
        "--shape",
        choices=("crafted", "megatron"),
        default="crafted",
        help="crafted: the costliest per byte; megatron: `make bench`'s 64-rank training log, as a real job writes",
    )
    parser.add_argument("--max-job-bytes", type=int, default=4 * 50 * 1024 * 1024, help="the stack's KB_MAX_JOB_BYTES")
    options = parser.parse_args()

    size = options.megabytes * 1024 * 1024
    body = multipart(crafted_log(size) if options.shape == "crafted" else megatron_log(size))
    memory = Memory(socket=str(options.var.resolve() / "run" / "gunicorn.sock"))
    if memory.gunicorn()[0] is None:
        print(f"uploads: no gunicorn serves unix:{memory.socket}", file=sys.stderr)
        return 1
    sampler = threading.Thread(target=memory.sample)
    sampler.start()
    results: list[tuple[str, float]] = []
    lock = threading.Lock()
    clients = [threading.Thread(target=upload, args=(options.port, body, results, lock)) for _ in range(options.clients)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    memory.stopping.set()
    sampler.join()

    budget = worker_budget_bytes(max_job_bytes=options.max_job_bytes)
    workers = len(memory.worker_peaks)
    worst_worker = max(memory.worker_peaks.values(), default=0)
    seconds = sorted(seconds for _, seconds in results)
    slowest = seconds[-1]
    outcomes = sorted(outcome for outcome, _ in results)
    mib = 1024 * 1024
    print(
        f"uploads: {options.clients} x {options.megabytes} MB ({options.shape}) at once: answers {', '.join(outcomes)}; "
        f"in {', '.join(f'{s:.0f}' for s in seconds)} s (worker timeout {WORKER_TIMEOUT_S} s); "
        f"gunicorn's peak resident memory {memory.peak_total_bytes / mib:.0f} MiB over {workers} workers, "
        f"a worker's peak {worst_worker / mib:.0f} MiB (budget {budget / mib:.0f} MiB a worker)"
    )
    failures = []
    if any(not outcome.startswith("200") for outcome in outcomes):
        failures.append("an upload was not answered with a diagnosis")
    if slowest >= WORKER_TIMEOUT_S:
        failures.append("an upload took as long as the worker timeout")
    if worst_worker > budget:
        failures.append("a worker passed its memory budget")
    for failure in failures:
        print(f"uploads: FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
