"""The hostile-input part of `make loadtest` (issue 34): the archive bombs of the turn-3 probe, posted to the running
stack's /api/diagnose, and a paste while another process holds SQLite's write lock.

    python tests/load/hostile.py --port 8199 [--database var/db.sqlite3]

Each archive must be refused (400 or 413) within 2 s, or, for the two that are within the limits (4,999 members, a
190 MB pickle of None), answered without a 5xx within gunicorn's worker timeout. The paste under the write lock
must come back 200 with its diagnosis ("not counted"), not 500. Posts come from 127.0.0.1, which `make loadtest`
exempts from the rate limit. Prints one line per input and fails (exit 1) when one did not hold.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import http.client
import io
import random
import re
import sqlite3
import string
import sys
import tarfile
import threading
import time
import urllib.parse
from pathlib import Path

WORKER_TIMEOUT_S = 120
REFUSED_WITHIN_S = 2.0
MiB = 1024 * 1024
WATCHDOG = (
    "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
    "OpType=_ALLGATHER_BASE, NumelIn=131334656, NumelOut=1050677248, Timeout(ms)=600000) ran for 600512 milliseconds "
    "before timing out.\n"
)


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def pax_digits() -> bytes:
    """B1: a PAX header of 10^6 digits (CVE-2024-6232): 1,132 bytes, 121 s of a worker before."""
    return gzip.compress(
        _header("././@PaxHeader", 10**6, tarfile.XHDTYPE) + _padded(b"9" * 10**6) + _header("a.log", 0) + bytes(1024)
    )


def bz2_bomb() -> bytes:
    """B2: a 2 MB member, then 1 GiB of zeros in the same bzip2 stream: 2,491 MiB of a worker before."""
    rng = random.Random(1)
    member = "".join(rng.choice(string.ascii_letters) for _ in range(2 * MiB)).encode()
    compressor = bz2.BZ2Compressor(9)
    parts = [compressor.compress(_header("rank0.log", len(member)) + _padded(member))]
    parts += [compressor.compress(bytes(MiB)) for _ in range(1024)]
    return b"".join(parts) + compressor.flush()


def long_name() -> bytes:
    """B2: a GNU long name of 50 MB: 7.5 s and 181 MiB before."""
    return gzip.compress(_header("././@LongLink", 50 * MiB, tarfile.GNUTYPE_LONGNAME) + _padded(b"a" * 50 * MiB) + bytes(1024))


def zip_directory() -> bytes:
    """B14: one member listed 900,000 times in the central directory (46 MB): 6.8-12.7 s, 480 MiB before (10^6)."""
    local = b"PK\x03\x04" + bytes(22) + (5).to_bytes(2, "little") + bytes(2) + b"a.log"
    entry = b"PK\x01\x02" + bytes(24) + (5).to_bytes(2, "little") + bytes(16) + b"a.log"
    directory = entry * 900_000  # 46 MB: within the 50 MB upload limit of `make serve`
    end = b"PK\x05\x06" + bytes(4) + b"\xff\xff" * 2 + len(directory).to_bytes(4, "little") + len(local).to_bytes(4, "little")
    return local + directory + end + bytes(2)


def bad_gzip() -> bytes:
    """B10: gzip magic, then data that is not deflate: 500 (zlib.error) before."""
    return b"\x1f\x8b\x08\x00" + random.Random(2).randbytes(5000)


def many_members() -> bytes:
    """B14: 4,999 one-line members (within the member limit): 22-28 s before."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for n in range(4999):
            data = f"rank {n} step 1\n".encode()
            info = tarfile.TarInfo(f"logs/rank{n}.log")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def pickle_of_nones() -> bytes:
    """B2: a 190 MB pickle of None inside a .tar.gz (185 KB): 29 s and 3,390 MiB of a worker before."""
    body = b"\x80\x02}(X\x07\x00\x00\x00versionX\x03\x00\x00\x002.4X\x07\x00\x00\x00entries(" + b"N" * (190 * MiB) + b"lu."
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("fr/nccl_trace_rank_0")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


# (name, file name it is uploaded as, builder)
REFUSED = [
    ("pax-digits", "job.tar.gz", pax_digits),
    ("bz2-bomb", "job.tar.bz2", bz2_bomb),
    ("long-name", "job.tar.gz", long_name),
    ("zip-directory", "job.zip", zip_directory),
    ("bad-gzip", "job.tar.gz", bad_gzip),
]
WITHIN_LIMITS = [("4999-members", "job.tar.gz", many_members), ("pickle-of-nones", "job.tar.gz", pickle_of_nones)]
BOUNDARY = "hostile-upload-boundary"


def multipart(file_name: str, data: bytes) -> bytes:
    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
    head += "Content-Type: application/octet-stream\r\n\r\n"
    return head.encode() + data + f"\r\n--{BOUNDARY}--\r\n".encode()


def post(
    port: int, path: str, body: bytes, content_type: str, timeout: float, headers: dict[str, str] | None = None
) -> tuple[int, float, bytes]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.monotonic()
    try:
        client.request("POST", path, body=body, headers={"Content-Type": content_type, **(headers or {})})
        response = client.getresponse()
        return response.status, time.monotonic() - started, response.read()
    finally:
        client.close()


def paste_under_write_lock(port: int, database: Path) -> bool:
    """B13: a paste while another process holds SQLite's write lock for 25 s."""
    locked = threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(database, timeout=30, isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        time.sleep(25)
        connection.execute("ROLLBACK")
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    locked.wait(30)
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # the form's CSRF cookie and token first
    client.request("GET", "/diagnose")
    response = client.getresponse()
    cookie = (response.getheader("Set-Cookie") or "").split(";", 1)[0]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', response.read()).group(1).decode()
    client.close()
    body = urllib.parse.urlencode({"log": WATCHDOG, "csrfmiddlewaretoken": token}).encode()
    status, took, page = post(
        port, "/diagnose", body, "application/x-www-form-urlencoded", WORKER_TIMEOUT_S + 10, headers={"Cookie": cookie}
    )
    holder.join()
    ok = status == 200 and b"not counted" in page
    print(f"hostile: paste under a 25 s SQLite write lock: {status} in {took:.1f} s, diagnosis shown uncounted: {ok}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--lock-only", action="store_true", help="only the paste under the write lock")
    parser.add_argument("--database", type=Path, default=Path("var/db.sqlite3"), help="the stack's SQLite file")
    options = parser.parse_args()
    failed = 0
    for name, file_name, build in [] if options.lock_only else REFUSED + WITHIN_LIMITS:
        data = build()
        body = multipart(file_name, data)
        content_type = f"multipart/form-data; boundary={BOUNDARY}"
        status, took, answer = post(options.port, "/api/diagnose", body, content_type, WORKER_TIMEOUT_S + 10)
        refused = any(name == other for other, _, _ in REFUSED)
        ok = status in (400, 413) and took < REFUSED_WITHIN_S if refused else status < 500 and took < WORKER_TIMEOUT_S
        failed += not ok
        print(f"hostile: {name} ({len(data)} bytes): {status} in {took:.2f} s{'' if ok else ' FAILED'}: {answer[:120]!r}")
    if options.database.exists():  # PostgreSQL stacks have none
        failed += not paste_under_write_lock(options.port, options.database)
    print(f"hostile: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
