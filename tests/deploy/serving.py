"""`make serve`'s real stack (config/serve.py: nginx in front, gunicorn behind) on a free loopback port, under a
temporary var directory, with two workers and a 1 MB log limit so each behaviour shows quickly; and the HTTP
helpers its tests share. The fixtures are in conftest.py beside this file."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from config.serve import nginx_binary

ROOT = Path(__file__).resolve().parent.parent.parent
MAX_LOG_BYTES = 1024 * 1024
BURST = 5
WORKERS = 2


@dataclass(frozen=True)
class Stack:
    port: int
    logs: Path
    output: Path
    environment: dict[str, str]  # the stack's settings: run manage.py with these to act on its database and index
    server: subprocess.Popen  # python -m config.serve, the parent of nginx and gunicorn

    def manage(self, *args: str, environment: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """manage.py with the stack's settings (and `environment` on top)."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.environment, **(environment or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connection(port: int, source: str, timeout: float = 5) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))


def request(
    port: int,
    method: str,
    path: str,
    *,
    source: str = "127.0.0.1",
    body: bytes | None = None,
    timeout: float = 5,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    client = connection(port, source, timeout)
    try:
        sent = {**({"Content-Type": "text/plain"} if body is not None else {}), **(headers or {})}
        client.request(method, path, body=body, headers=sent)
        response = client.getresponse()
        return response.status, response.read()
    finally:
        client.close()


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def gunicorn_workers(stack: Stack) -> list[int]:
    """The stack's gunicorn worker pids: the children of the gunicorn master that config.serve started."""
    master = next(pid for pid in children(stack.server.pid) if "gunicorn" in command_line(pid))
    return sorted(children(master))


def stack_started() -> Iterator[Stack]:
    nginx = nginx_binary()
    if nginx is None:  # a failure, not a skip: `make test` installs it, so its absence is a broken set-up
        pytest.fail("nginx is not installed; `make test` installs it (apt-get install nginx)")
    # Not pytest's tmp_path: that is private to its user, and a root master runs nginx's workers as www-data.
    work = Path(tempfile.mkdtemp(prefix="kb-stack-"))
    work.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    environment.update(
        DEBUG="0",
        SECRET_KEY="stack-test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        SECURE_SSL_REDIRECT="0",
        SQLITE_PATH=str(work / "db.sqlite3"),
        KB_INDEX_DIR=str(work / "index"),
        KB_STATIC_ROOT=str(work / "static"),
        KB_MAX_LOG_BYTES=str(MAX_LOG_BYTES),
    )
    manage = [sys.executable, "manage.py"]
    preparing = [
        subprocess.Popen(manage + args, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL)
        for args in (["migrate", "--noinput"], ["collectstatic", "--noinput", "--verbosity", "0"])
    ]
    assert all(p.wait(timeout=60) == 0 for p in preparing)
    port = free_port()
    output = open(work / "serve.out", "w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "config.serve",
            "--port",
            str(port),
            "--var",
            str(work / "var"),
            "--workers",
            str(WORKERS),
            "--rate",
            "6r/m",
            "--burst",
            str(BURST),
        ],
        cwd=ROOT,
        env=environment,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if request(port, "GET", "/kb/", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("make serve's stack did not start:\n" + (work / "serve.out").read_text())
            time.sleep(0.2)
        yield Stack(port=port, logs=work / "var" / "log", output=work / "serve.out", environment=environment, server=server)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        output.close()
        shutil.rmtree(work, ignore_errors=True)
