"""Facts from tool output pasted as evidence: nccl-tests, CUDA samples' peer-to-peer test, `df` of
/dev/shm, `nvidia-smi topo -m`, `ibv_devinfo`, `ls -la` of a build directory, the Flight Recorder
analyzer's report, and NCCL's RAS client (diagnosis/readers/ras.py).

Each reader looks for its tool's own header or field names first (scanner literals), so a log without
that tool's output costs one substring search per reader.
"""

from __future__ import annotations

import re
from typing import Any

from diagnosis.readers import ras
from diagnosis.scan.scanner import TextScanner

from diagnosis.readers.base import FileReading, JobParts, Window

# nccl-tests (src/common.cu): the run header, then one row per size, then "# Avg bus bandwidth".
NCCL_TESTS_HEADER = "# nThread "
NCCL_TESTS_TABLE = "#       size "
NCCL_TESTS_DONE = "# Avg bus bandwidth"
_NCCL_TESTS_ROW = re.compile(
    r"^\s{0,12}\d{1,12}\s+\d{1,12}\s+[a-z0-9_]{2,10}\s+[a-z_]{2,6}\s+-?\d{1,4}\s+[\d.]{1,12}\s", re.MULTILINE
)

# CUDA samples simpleP2P: peer access per pair, then a verification pass over the copied buffer.
P2P_PEER = "> Peer access from "
P2P_VERIFY_FAILED = "Verification error @ element"
P2P_PASSED = "Test passed"

# CUDA samples p2pBandwidthLatencyTest: a bandwidth matrix per mode, each under its own heading. With peer access
# enabled a GPU pair should copy at least as fast as the staged copy through the host; far slower means the platform
# advertises P2P and does not deliver it (ACS, IOMMU), and a test that stops under a heading hung in that copy.
P2P_BW_DISABLED = "Unidirectional P2P=Disabled Bandwidth Matrix"
P2P_BW_ENABLED = "Unidirectional P2P=Enabled Bandwidth"  # "(P2P Writes) Matrix" in current samples, "Matrix" before
P2P_BW_HEADINGS = (P2P_BW_DISABLED, P2P_BW_ENABLED, "Bidirectional P2P=", "P2P=Disabled Latency", "P2P=Enabled Latency")
P2P_BW_SLOWER = 0.5  # enabled below half the staged copy's bandwidth
_MATRIX_ROW = re.compile(r"^\s{0,8}(\d{1,3})((?:[ \t]+[\d.]{1,10}){1,64})[ \t]*$")

# df -h: "shm  64M  0  64M  0% /dev/shm" (Docker names the filesystem shm; Kubernetes and hosts tmpfs).
_DF_SHM = re.compile(r"^\S{1,64}\s+([\d.]{1,8})([KMGT]?)i?\s+\S{1,12}\s+\S{1,12}\s+\d{1,3}%\s+/dev/shm\s*$", re.MULTILINE)
_UNITS = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}

# nvidia-smi topo -m: a matrix whose header ends in "CPU Affinity"; cells name the link kind.
TOPO_HEADER = "CPU Affinity"
_TOPO_ROW = re.compile(r"^\s{0,4}GPU\d{1,3}\t[^\n]{0,600}$", re.MULTILINE)
_TOPO_CELL = re.compile(r"\b(NV\d{1,2}|PIX|PXB|PHB|NODE|SYS)\b")

# ibv_devinfo: "state:  PORT_ACTIVE (4)", "link_layer:  Ethernet".
_IB_STATE = re.compile(r"\bstate:\s{1,20}(PORT_[A-Z_]{2,20})")
_IB_LINK = re.compile(r"\blink_layer:\s{1,20}(InfiniBand|Ethernet)")

# ls -la: "-rw-r--r-- 1 user user    0 Nov 21 04:42 lock" beside the build's sources.
_LS_ENTRY = re.compile(
    r"^[-dl][-rwxsStT]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(\d+)\s+([A-Z][a-z]{2})\s+(\d{1,2})\s+"
    r"(\d{1,2}:\d\d|\d{4})\s+(\S[^\n]{0,200})$",
    re.MULTILINE,
)
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))}

# The Flight Recorder analyzer (torchfrtrace / fr_trace.py) report. Its wording changed over time: the 2.13.0
# wheel's torch/distributed/flight_recorder/components logs "Not all ranks joining collective, sequence number:
# N" then "missing ranks: {1, 3}", and "Collective sequence number: N has errors" then "error msg: Culprit rank
# R; Error type: COLLECTIVE_TYPE_MISMATCH, ..."; earlier copies of tools/flight_recorder logged "Not all ranks
# joining collective N at entry M" / "Collective N at entry M errors", and the first printed "Not all ranks
# joining collective for group ... Missing ranks are {1}" with MatchState names ("MatchState.SIZE_OR_...").
FR_NOT_JOINED = "Not all ranks joining collective"
_FR_MISSING = re.compile(r"[Mm]issing ranks(?::| are) \{([\d, ]{1,4000})\}")
_FR_CULPRIT = re.compile(
    r"Culprit rank \d{1,6}; (?:Error type: |MatchState\.)(COLLECTIVE_TYPE_MISMATCH|SIZE_OR_SYNTAX_MISMATCH"
    r"|COLLECTIVE_DTYPE_MISMATCH|COLLECTIVE_STATE_MISMATCH)"
)
FR_IO_MISMATCH = "Input/output mismatch in the collective sequence number"
_FR_OP_MISMATCHES = {"COLLECTIVE_TYPE_MISMATCH", "SIZE_OR_SYNTAX_MISMATCH", "COLLECTIVE_DTYPE_MISMATCH"}

LITERALS = (
    NCCL_TESTS_HEADER,
    NCCL_TESTS_TABLE,
    NCCL_TESTS_DONE,
    P2P_PEER,
    P2P_VERIFY_FAILED,
    P2P_PASSED,
    *P2P_BW_HEADINGS,
    "/dev/shm",
    TOPO_HEADER,
    "link_layer:",
    "PORT_",
    " lock\n",
    FR_NOT_JOINED,
    "issing ranks",
    "Culprit rank ",
    FR_IO_MISMATCH,
    *ras.LITERALS,
)


def tool_facts(scanner: TextScanner) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    text = scanner.text
    if _present(scanner, NCCL_TESTS_HEADER):
        rows = any(_NCCL_TESTS_ROW.search(text, s, e) for s, e in _lines_after(scanner, NCCL_TESTS_TABLE))
        facts["nccl_tests"] = "results" if rows or _present(scanner, NCCL_TESTS_DONE) else "header-only"
    if _present(scanner, P2P_VERIFY_FAILED):
        facts["p2p_check"] = "failed"
    elif _present(scanner, P2P_PEER) and _present(scanner, P2P_PASSED):
        facts["p2p_check"] = "passed"
    bandwidth = _p2p_bandwidth(scanner)
    if bandwidth:
        facts["p2p_bandwidth"] = bandwidth
    for start, end in scanner.lines_with("/dev/shm"):
        match = _DF_SHM.search(text, start, end + 1 if end < len(text) else end)
        if match:
            facts["shm_size_mb"] = int(float(match.group(1)) * _UNITS[match.group(2)])
            break
    if _present(scanner, TOPO_HEADER):
        links: set[str] = set()
        for match in _TOPO_ROW.finditer(text, _first(scanner, TOPO_HEADER)):
            links.update("NV" if cell.startswith("NV") else cell for cell in _TOPO_CELL.findall(match.group(0)))
            if len(links) >= 6:
                break
        if links:
            facts["gpu_links"] = sorted(links)
    states = {m.group(1) for s, e in scanner.lines_with("PORT_") for m in [_IB_STATE.search(text, s, e)] if m}
    if states:
        facts["ib_port_state"] = sorted(states)
    layers = {m.group(1) for s, e in scanner.lines_with("link_layer:") for m in [_IB_LINK.search(text, s, e)] if m}
    if layers:
        facts["link_layer"] = sorted(layers)
    lock = _build_lock(scanner)
    if lock:
        facts["build_lock"] = lock
    facts.update(_recorder_report(scanner))
    facts.update(ras.ras_facts(scanner))
    return facts


def _p2p_bandwidth(scanner: TextScanner) -> str | None:
    """p2pBandwidthLatencyTest's verdict: "slower" when some GPU pair copies with peer access at under half the
    bandwidth of the staged copy, "normal" when no pair does, "stopped" when the output ends under one of its
    headings with no row (the copy it was measuring never finished); None without the test's output."""
    headings = sorted(span for heading in P2P_BW_HEADINGS for span in scanner.lines_with(heading))
    if not headings:
        return None
    if not _matrix(scanner.text, headings[-1][1] + 1):
        return "stopped"
    disabled = next(iter(scanner.lines_with(P2P_BW_DISABLED)), None)
    enabled = next(iter(scanner.lines_with(P2P_BW_ENABLED)), None)
    if disabled is None or enabled is None:
        return None
    staged, peer = _matrix(scanner.text, disabled[1] + 1), _matrix(scanner.text, enabled[1] + 1)
    pairs = [(a, b) for a in staged for b in range(len(staged[a])) if a != b and a in peer and b < len(peer[a])]
    if not pairs:
        return None
    slower = any(staged[a][b] > 0 and peer[a][b] < P2P_BW_SLOWER * staged[a][b] for a, b in pairs)
    return "slower" if slower else "normal"


def _matrix(text: str, pos: int, limit: int = 66) -> dict[int, list[float]]:
    """The rows of a matrix printed from `pos` on (its column header line skipped), by row label."""
    rows: dict[int, list[float]] = {}
    for number, (start, end) in enumerate(_lines_from(text, pos, limit)):
        line = text[start:end]
        match = _MATRIX_ROW.match(line)
        if match:
            try:
                rows[int(match.group(1))] = [float(cell) for cell in match.group(2).split()]
            except ValueError:  # "1.2.3": not a number, not this table
                break
        elif number > 0 or "D\\D" not in line and "GPU" not in line:
            break
    return rows


def _recorder_report(scanner: TextScanner) -> dict[str, Any]:
    """The same facts as from the dumps themselves (diagnosis.readers.flight_recorder), read from the analyzer's
    text: ranks that never joined a collective, and ranks that issued a different op, size or dtype."""
    facts: dict[str, Any] = {}
    text = scanner.text
    if _present(scanner, FR_NOT_JOINED):
        missing = {
            int(rank)
            for s, e in scanner.lines_with("issing ranks")
            for m in [_FR_MISSING.search(text, s, e)]
            if m
            for rank in m.group(1).replace(" ", "").split(",")
            if rank
        }
        if missing:
            facts["fr_missing_ranks"] = sorted(missing)
    kinds = {m.group(1) for s, e in scanner.lines_with("Culprit rank ") for m in [_FR_CULPRIT.search(text, s, e)] if m}
    if kinds & _FR_OP_MISMATCHES or _present(scanner, FR_IO_MISMATCH):
        facts["fr_mismatch"] = True
    return facts


def _build_lock(scanner: TextScanner) -> str | None:
    """A zero-byte `lock` in a pasted `ls -la` of a build directory: "stale" when it is older than every other
    file listed with it (left by an earlier, killed build), "fresh" when it is as new as the sources."""
    text = scanner.text
    for start, end in scanner.lines_with(" lock\n"):
        entry = _LS_ENTRY.match(text, start, end + 1)
        if not entry or entry.group(5).strip() != "lock" or entry.group(1) != "0":
            continue
        block_start = text.rfind("\n$ ", 0, start)
        block_start = 0 if block_start == -1 else block_start
        others = [
            m
            for m in _LS_ENTRY.finditer(text, block_start, min(len(text), end + 4000))
            if m.group(5).strip() not in ("lock", ".", "..")
        ]
        if not others:
            return "fresh"
        lock_time = _ls_time(entry)
        return "stale" if all(lock_time < _ls_time(m) for m in others) else "fresh"
    return None


def _ls_time(entry: re.Match) -> tuple[int, int, int]:
    """(month, day, minutes) of an ls date; a year instead of a time sorts as the start of that day."""
    clock = entry.group(4)
    minutes = int(clock[:-3]) * 60 + int(clock[-2:]) if ":" in clock else -1
    return _MONTHS.get(entry.group(2), 0), int(entry.group(3)), minutes


def _present(scanner: TextScanner, literal: str) -> bool:
    return next(iter(scanner.lines_with(literal)), None) is not None


def _first(scanner: TextScanner, literal: str) -> int:
    return next(iter(scanner.lines_with(literal)))[0]


def _lines_after(scanner: TextScanner, literal: str, limit: int = 40):
    """The lines after the first occurrence of `literal` (the rows of a table)."""
    span = next(iter(scanner.lines_with(literal)), None)
    if span is not None:
        yield from _lines_from(scanner.text, span[1] + 1, limit)


def _lines_from(text: str, pos: int, limit: int):
    """(start, end) of the lines from `pos` on, at most `limit` of them."""
    for _ in range(limit):
        if pos >= len(text):
            return
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        yield pos, end
        pos = end + 1


class ToolsReader:
    """Output of diagnostic tools pasted with a log (nccl-tests, topo -m, ibv_devinfo, fr_trace, ncclras): facts only,
    merged with the facts reader's."""

    name = "tools"
    literals = frozenset((literal, False) for literal in LITERALS)

    def read(self, window: Window, part: FileReading) -> None:
        part.facts.update(tool_facts(window.scanner))

    def merge(self, into: FileReading, later: FileReading) -> None:
        """Its facts are merged with the facts reader's."""

    def shift(self, part: FileReading, by: int) -> None:
        """It keeps no line numbers."""

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        """Its facts are added with the facts reader's."""


READER = ToolsReader()
