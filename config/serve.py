"""`make serve`: nginx in front, gunicorn behind it on a unix socket, both children of this process.

    python -m config.serve --port 8000 [--host 127.0.0.1] [--var var] [--workers N]
                           [--rate 30r/m] [--burst 10] [--rate-exempt ADDR,...]

nginx reads whole requests before a worker sees them (a slow client costs a connection, not a worker), refuses
bodies over the app's limit from their Content-Length, and limits diagnosis POSTs per client address. Its
configuration is deploy/nginx.conf, rendered here into VAR/nginx/ with the port, the paths and the limits read
from Django's settings, so one setting (KB_MAX_LOG_BYTES) sizes both. Pid files, temp files and logs are all
under VAR. If either server exits, the other is stopped and this command exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from config.hugepages import environ_with_huge_pages
from config.memory import memory_available_bytes

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "nginx.conf"
MIB = 1024 * 1024
# What one sync worker needs besides the request: Python, Django, the compiled signatures, the index (measured:
# 50 MiB after start).
WORKER_BASE_BYTES = 64 * MIB
# Peak per byte of the largest request a worker may hold. Measured on one worker (VmHWM): a crafted 45 MB log
# of watchdog lines 641 MiB; a job archive expanding to 166 MB of crafted logs 963 MiB, to 188 MB 874 MiB.
# A job (KB_MAX_JOB_BYTES, 200 MB by default) is the largest input, so the budget is 6 x that: 1.2 GiB.
WORKER_PEAK_PER_JOB_BYTE = 6
# Gunicorn logs the path (%(U)s), never the query string, and no referer; the client is nginx's X-Real-IP.
GUNICORN_ACCESS_FORMAT = '%({x-real-ip}i)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'


@dataclass(frozen=True)
class WorkerPlan:
    workers: int
    by_cpu: int
    by_memory: int
    cpus: int
    available_bytes: int
    budget_bytes: int

    def describe(self) -> str:
        return (
            f"{self.workers} gunicorn workers = min(2 x {self.cpus} CPUs + 1 = {self.by_cpu}, "
            f"{self.available_bytes / MIB:.0f} MiB available / {self.budget_bytes / MIB:.0f} MiB per worker "
            f"= {self.by_memory})"
        )


def worker_budget_bytes(*, max_job_bytes: int) -> int:
    return WORKER_BASE_BYTES + WORKER_PEAK_PER_JOB_BYTE * max_job_bytes


def workers_plan(*, cpus: int, available_bytes: int, budget_bytes: int) -> WorkerPlan:
    """As many workers as the CPUs keep busy (2 x cores + 1, gunicorn's advice for sync workers), but no more
    than the memory holds at each worker's worst case: a worker killed by the OOM killer loses every request."""
    by_cpu = 2 * cpus + 1
    by_memory = available_bytes // budget_bytes
    return WorkerPlan(max(1, min(by_cpu, by_memory)), by_cpu, by_memory, cpus, available_bytes, budget_bytes)


def nginx_binary() -> str | None:
    # Debian installs it in /usr/sbin, which is not on an ordinary user's PATH.
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def nginx_render(
    *,
    host: str,
    port: int,
    var: Path,
    socket: Path,
    max_body_bytes: int,
    too_large_text: str,
    rate: str,
    burst: int,
    rate_exempt: list[str],
    read_timeout_s: int,
) -> str:
    values = {
        # A root master runs its workers as Debian's web user; any other user runs them as itself.
        "user": "user www-data;" if os.geteuid() == 0 else "",
        "var": str(var),
        "socket": str(socket),
        "host": host,
        "port": str(port),
        "max_body_bytes": str(max_body_bytes),
        "too_large_text": too_large_text.replace("\\", "\\\\").replace('"', '\\"'),
        "rate": rate,
        "burst": str(burst),
        "rate_exempt": "\n".join(f"        {address} 1;" for address in rate_exempt),
        "read_timeout": f"{read_timeout_s}s",
    }

    def fill(match: re.Match) -> str:
        return values[match.group(1)]  # a KeyError names a placeholder the template gained and this lost

    return re.sub(r"\{\{(\w+)\}\}", fill, TEMPLATE.read_text())


def _free_stale_socket(socket: Path) -> None:
    if socket.exists():  # left by a killed run; gunicorn would refuse to bind over it
        socket.unlink()


def _wait_for(path: Path, child: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if child.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--var", type=Path, default=ROOT / "var", help="pid, temp, socket and log files go here")
    parser.add_argument("--workers", type=int, default=0, help="0: sized from CPUs and memory")
    parser.add_argument("--rate", default="10r/m", help="diagnosis POSTs per client address (nginx limit_req)")
    parser.add_argument("--burst", type=int, default=5, help="diagnosis POSTs a client may send at once")
    parser.add_argument("--rate-exempt", default="", help="comma list of addresses or CIDRs the rate limit skips")
    parser.add_argument("--timeout", type=int, default=120, help="gunicorn's worker timeout in seconds")
    options = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    from config.guards import MULTIPART_MARGIN_BYTES
    from kb.log_input import LogTooLarge

    nginx = nginx_binary()
    if nginx is None:
        print("serve: nginx is not installed (make serve installs it: apt-get install nginx)", file=sys.stderr)
        return 1
    var = options.var.resolve()
    for folder in ("run", "log", "nginx"):
        (var / folder).mkdir(parents=True, exist_ok=True)
    socket = var / "run" / "gunicorn.sock"
    _free_stale_socket(socket)

    budget = worker_budget_bytes(max_job_bytes=settings.KB_MAX_JOB_BYTES)
    plan = workers_plan(cpus=len(os.sched_getaffinity(0)), available_bytes=memory_available_bytes(), budget_bytes=budget)
    workers = options.workers or plan.workers
    max_body = settings.KB_MAX_LOG_BYTES + MULTIPART_MARGIN_BYTES
    config = var / "nginx" / "nginx.conf"
    config.write_text(
        nginx_render(
            host=options.host,
            port=options.port,
            var=var,
            socket=socket,
            max_body_bytes=max_body,
            too_large_text=LogTooLarge(settings.KB_MAX_LOG_BYTES).help_text(),
            rate=options.rate,
            burst=options.burst,
            rate_exempt=[a.strip() for a in options.rate_exempt.split(",") if a.strip()],
            read_timeout_s=options.timeout + 10,
        )
    )
    check = subprocess.run(
        [nginx, "-t", "-q", "-p", f"{var}/nginx/", "-c", str(config), "-e", "stderr"], capture_output=True, text=True
    )
    if check.returncode != 0:
        print(f"serve: the rendered {config} does not load:\n{check.stderr}", file=sys.stderr)
        return 1

    print(f"serve: {plan.describe() if not options.workers else f'{workers} gunicorn workers (--workers)'}")
    print(f"serve: http://{options.host}:{options.port}/ -> nginx -> gunicorn on unix:{socket}")
    print(
        f"serve: bodies up to {max_body} bytes (KB_MAX_LOG_BYTES {settings.KB_MAX_LOG_BYTES} + "
        f"{MULTIPART_MARGIN_BYTES} multipart margin); diagnosis POSTs {options.rate}, burst {options.burst} per "
        f"client{'; exempt: ' + options.rate_exempt if options.rate_exempt else ''}"
    )
    print(f"serve: logs in {var / 'log'} (access logs without query strings)", flush=True)

    gunicorn = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"unix:{socket}",
            "--workers",
            str(workers),
            "--timeout",
            str(options.timeout),
            "--access-logfile",
            str(var / "log" / "gunicorn-access.log"),
            "--access-logformat",
            GUNICORN_ACCESS_FORMAT,
            "--no-control-socket",  # signals are enough; its default path is in $HOME, shared by every instance
        ],
        cwd=ROOT,
        env=environ_with_huge_pages(os.environ),  # workers decode uploads of up to 50 MB
    )
    if not _wait_for(socket, gunicorn, 60):
        gunicorn.terminate()
        print("serve: gunicorn did not start (its messages are above)", file=sys.stderr)
        return 1
    proxy = subprocess.Popen([nginx, "-p", f"{var}/nginx/", "-c", str(config), "-e", str(var / "log" / "nginx-error.log")])
    children = {"gunicorn": gunicorn, "nginx": proxy}

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        while True:
            ended = [name for name, child in children.items() if child.poll() is not None]
            if ended:
                print(f"serve: {ended[0]} exited with status {children[ended[0]].returncode}; stopping", file=sys.stderr)
                status = 1
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    proxy.send_signal(signal.SIGQUIT)  # nginx: finish the requests in flight, then exit
    gunicorn.send_signal(signal.SIGTERM)  # gunicorn: the same (graceful)
    for child in children.values():
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
    return status


if __name__ == "__main__":
    sys.exit(main())
