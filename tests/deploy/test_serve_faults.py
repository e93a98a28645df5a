"""Faults while `make serve`'s stack is under load (issue 14, item 5): a content reload, a killed worker.

Each test keeps a few clients asking for pages the whole time, bounded in count and time, and counts every answer
that is not a whole page: an error status, a timeout, or a page that lost a part (a search without hits, a
troubleshooter without trees).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.deploy.serving import ROOT, Stack, gunicorn_workers, request
from tests.waiting import wait_for

CASE = "nccl-socket-ifname-wrong-interface"
TITLE = "NCCL bootstraps over the wrong network interface"
LOG_LINE = "NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>"

# What each client asks for in turn, and what a whole answer holds.
PAGES: list[tuple[str, Callable[[bytes], bool]]] = [
    (f"/kb/{CASE}/", lambda body: TITLE.encode() in body and b'id="fix-1"' in body),
    ("/kb/", lambda body: f"/kb/{CASE}/".encode() in body),
    ("/search?q=NCCL_SOCKET_IFNAME", lambda body: b'class="hit-title"' in body),
    ("/api/search?q=NCCL_SOCKET_IFNAME", lambda body: f'"slug": "{CASE}"'.encode() in body),
    ("/troubleshoot/", lambda body: b'class="wizard-start"' in body),
    (
        "/search?q=" + LOG_LINE.replace(" ", "+").replace(":", "%3A").replace("<", "%3C").replace(">", "%3E"),
        lambda body: CASE.encode() in body,
    ),
]


@dataclass
class Traffic:
    """Clients that ask for PAGES in turn, `pause` seconds apart, until stopped (at most `limit` requests each,
    `seconds` in all)."""

    port: int
    clients: int = 4
    pause: float = 0.0
    limit: int = 3000
    seconds: float = 30
    answers: int = 0
    failures: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, offset: int) -> None:
        deadline = time.monotonic() + self.seconds
        for n in range(self.limit):
            if self.stopping.is_set() or time.monotonic() > deadline:
                return
            path, whole = PAGES[(n + offset) % len(PAGES)]
            try:
                status, body = request(self.port, "GET", path, timeout=10)
                failure = None if status == 200 and whole(body) else f"{path}: {status} {body[:200]!r}"
            except (OSError, http.client.HTTPException) as err:  # refused, timed out, or an answer cut off
                failure = f"{path}: {type(err).__name__} {err}"
            with self.lock:
                self.answers += 1
                if failure:
                    self.failures.append(failure)
            time.sleep(self.pause)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        threads = [threading.Thread(target=self.client, args=(n,)) for n in range(self.clients)]
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            self.stopping.set()
            for thread in threads:
                thread.join(timeout=20)


@pytest.fixture(scope="module")
def served(stack: Stack) -> Stack:
    """The stack with content/ loaded, as `make serve` starts it."""
    done = stack.manage("load_content")
    assert done.returncode == 0, done.stderr
    return stack


@pytest.mark.proxy
def test_a_content_reload_while_pages_are_served_fails_no_request(served: Stack, tmp_path: Path) -> None:
    """An operator runs `load_content` on a live host after editing a case: the database rows, the index and the
    troubleshooter's snapshot all change under the workers that serve them."""
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    case_file = content / "cases" / f"{CASE}.md"
    case_file.write_text(case_file.read_text().replace(f'title: "{TITLE}', f'title: "{TITLE} (edited)', 1))
    traffic = Traffic(served.port, clients=2, pause=0.02)  # leaves the loader a core
    loaded = None
    with traffic.running():
        time.sleep(0.5)
        loaded = served.manage("load_content", environment={"KB_CONTENT_DIR": str(content)})
        answered_during_load = traffic.answers
        time.sleep(0.5)
    cases = len(list((content / "cases").glob("*.md")))
    assert loaded is not None and loaded.returncode == 0 and f"Loaded {cases} cases" in loaded.stdout, loaded
    assert answered_during_load >= 30, f"only {answered_during_load} answers while the content loaded"
    assert traffic.failures == [], f"{len(traffic.failures)} of {traffic.answers} failed: {traffic.failures[:5]}"
    assert f"{TITLE} (edited)".encode() in request(served.port, "GET", f"/kb/{CASE}/")[1]


@pytest.mark.proxy
def test_a_killed_worker_loses_only_the_request_it_held(served: Stack) -> None:
    """The kernel's OOM killer, or gunicorn's own timeout, SIGKILLs a worker in the middle of a request: nginx
    answers that one request with its 'restarting or overloaded' page, and every other request is served by the
    other worker, then by the one gunicorn starts in its place."""
    before = gunicorn_workers(served)
    traffic = Traffic(served.port)
    with traffic.running():
        wait_for(lambda: traffic.answers >= 10)  # four clients on two workers: each worker holds a request
        answered_before_kill = traffic.answers
        os.kill(before[0], signal.SIGKILL)
        wait_for(lambda: traffic.answers >= answered_before_kill + 30)
        after = wait_for(lambda: _replaced(gunicorn_workers(served), before))
    assert traffic.answers >= answered_before_kill + 30, "the site stopped answering after the kill"
    assert len(traffic.failures) <= 1, f"{len(traffic.failures)} of {traffic.answers} failed: {traffic.failures[:5]}"
    # The request the worker held: nginx's page if the worker died before answering, or an answer cut off mid-body.
    assert all(
        "The site is restarting or overloaded" in failure or "IncompleteRead" in failure for failure in traffic.failures
    ), traffic.failures
    assert after and before[0] not in after, (before, after)


def _replaced(workers: list[int], before: list[int]) -> list[int]:
    """`workers` once the killed one (the first of `before`) is gone and another has taken its place, else []."""
    return workers if len(workers) == len(before) and before[0] not in workers else []
