"""The hostile part of `make loadtest`, run beside wrk's mix: adversarial diagnosis posts and slow clients.

    python tests/load/adversaries.py --port 8199 --seconds 32

- 5 clients from 127.0.0.2 post a crafted 1 MB log (watchdog timeouts from ever new ranks and sequence numbers,
  the costliest input per byte measured) to /api/diagnose, each as soon as its last answer came and at most once
  a second: the per-address limit answers most with 429, and those it lets through cost a worker about 0.3 s.
  (Unpaced, they upload hundreds of MB/s that nginx must read and discard; on the one 2-core machine that
  measures the load generator, not the server.)
- 5 clients from 127.0.0.3 declare a 1 MB body and send 512 bytes every 2 s (inside nginx's 10 s body timeout),
  reconnecting when closed: without the proxy's buffering each held a sync worker.
Both come from their own loopback addresses, so wrk's mix from 127.0.0.1 (exempt from the limit: it stands for
many users) meets the limit only through them. Prints one summary line.
"""

import argparse
import collections
import http.client
import socket
import threading
import time

ADVERSARIAL_SOURCE = "127.0.0.2"
SLOW_SOURCE = "127.0.0.3"
LOG_BYTES = 1024 * 1024


def crafted_log(size: int) -> bytes:
    lines, total, i = [], 0, 0
    while total < size:
        line = (
            f"[rank{i}]:[E1121 04:00:{i % 60:02d}.123 ProcessGroupNCCL.cpp:616] [Rank {i}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLGATHER_BASE, NumelIn={i}, "
            f"NumelOut={i}, Timeout(ms)=600000) ran for 600{i % 1000:03d} milliseconds before timing out.\n"
        ).encode()
        lines.append(line)
        total += len(line)
        i += 1
    return b"".join(lines)[:size]


def adversary(port: int, body: bytes, until: float, statuses: collections.Counter, lock: threading.Lock) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(ADVERSARIAL_SOURCE, 0))
        try:
            connection.request("POST", "/api/diagnose", body=body, headers={"Content-Type": "text/plain"})
            response = connection.getresponse()
            response.read()
            outcome = str(response.status)
        except OSError as err:
            outcome = type(err).__name__
        finally:
            connection.close()
        with lock:
            statuses[outcome] += 1
        time.sleep(max(0.0, started + 1 - time.monotonic()))


def slow_client(port: int, until: float, counts: collections.Counter, lock: threading.Lock) -> None:
    client = None
    while time.monotonic() < until:
        try:
            if client is None:
                client = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(SLOW_SOURCE, 0))
                client.sendall(
                    b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\n\r\n" % LOG_BYTES
                )
                with lock:
                    counts["connections"] += 1
            client.sendall(b"x" * 512)
            with lock:
                counts["trickled bytes"] += 512
        except OSError:
            if client is not None:
                client.close()
            client = None
            with lock:
                counts["closed by the server"] += 1
        time.sleep(2)
    if client is not None:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    options = parser.parse_args()
    until = time.monotonic() + options.seconds
    body, lock = crafted_log(LOG_BYTES), threading.Lock()
    statuses: collections.Counter = collections.Counter()
    slow: collections.Counter = collections.Counter()
    threads = [threading.Thread(target=adversary, args=(options.port, body, until, statuses, lock)) for _ in range(5)]
    threads += [threading.Thread(target=slow_client, args=(options.port, until, slow, lock)) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    answered = ", ".join(f"{count} x {status}" for status, count in sorted(statuses.items()))
    print(
        f"adversaries: 5 clients posted a crafted 1 MB log {sum(statuses.values())} times ({answered}); "
        f"5 slow clients held {slow['connections']} connections, trickled {slow['trickled bytes']} bytes, "
        f"closed by the server {slow['closed by the server']} times"
    )


if __name__ == "__main__":
    main()
