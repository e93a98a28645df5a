"""Stage 2: turn the committed harvest files into the catalogue YAML, deterministically (pure: no sources, no clock).

Usage: .venv/bin/python tools/catalogue/build.py [--check]
Reads content/catalogue/harvest/<program>.tsv, writes content/catalogue/messages/<program>.yaml. With --check it
writes nothing and exits 1 when a committed catalogue differs from what the harvest builds.

Per program, rows with the same (style, template, severity) across releases become one entry: first and last
release that print that exact wording, the releases in between that do not (absent_in), the file at the first
release, typed fields, and a meaning from MEANINGS (first rule that matches wins).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HARVEST_DIR, MESSAGES_DIR, HarvestRow, harvest_read, release_key  # noqa: E402

SCHEMA_VERSION = 1
# A template must hold this much literal text (stripped runs, together) to be told from other text: "%s" and "%s %d"
# cannot, "%s:%d -> %d" (NCCL's error-propagation line) can.
MIN_LITERAL = 3

# printf conversions as C and Python print them; brace fields as str.format / f-strings / fmt print them.
PRINTF_SPEC = re.compile(
    r"%(?:\((?P<key>\w+)\))?(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?(?P<len>hh|h|ll|l|z|j|t|L|q)?(?P<conv>[diouxXeEfgGcsp%])"
)
BRACE_SPEC = re.compile(r"\{\{|\}\}|\{(?P<name>[^{}]*)\}")

SEVERITIES = {
    "WARN": "WARN",
    "WARNING": "WARN",
    "INFO": "INFO",
    "VERSION": "INFO",
    "ERROR": "ERROR",
    "CRITICAL": "ERROR",
    "RAISE": "ERROR",
    "unknown": "unknown",
}

# Field types: the vocabulary FORMAT.md lists. A field's type comes from its name (the f-string expression, or for
# printf the word before it) and its conversion.
FIELD_TYPES: list[tuple[str, re.Pattern[str]]] = [
    ("rank", re.compile(r"^(rank|nranks|local_?rank|global_?rank|group_?rank|peer|root|world_?size|src|dst|localrank)$", re.I)),
    ("errno", re.compile(r"^(errno|err|error_?code|ret|res|result|rc)$", re.I)),
    ("interface", re.compile(r"^(interface|iface|if_?name|ifname|dev_?name|socket_?ifname|nic)$", re.I)),
    ("collective", re.compile(r"^(op_?type|collective|coll|op|opname|op_?name|func)$", re.I)),
    ("seqnum", re.compile(r"^(seq|seq_?num|seqnum|op_?count|opcount|sequence_?number)$", re.I)),
    ("timeout_ms", re.compile(r"^(timeout|timeout_?ms|time_?out|ms|milliseconds)$", re.I)),
    ("host", re.compile(r"^(host|hostname|host_?name|master_?addr|node)$", re.I)),
    ("address", re.compile(r"^(addr|address|ip|endpoint|port|master_?port|sockaddr|url)$", re.I)),
    ("device", re.compile(r"^(device|dev|cuda_?dev|gpu|device_?id|busid|bus_?id|cudadev)$", re.I)),
    ("pid", re.compile(r"^(pid|worker_?pid|process_?id)$", re.I)),
    ("signal", re.compile(r"^(signal|sig|signum|signal_?name)$", re.I)),
    ("exitcode", re.compile(r"^(exitcode|exit_?code|returncode|return_?code)$", re.I)),
]

# Meanings: the vocabulary FORMAT.md lists. Rules are tried in order on the template's text; the first match wins.
# The scope is None (any), or '|'-separated programs or program:SEVERITY. Patterns are case-insensitive.
MEANING_RULES: list[tuple[str, str | None, str]] = [
    (
        "watchdog.timeout",
        "torch",
        r"Watchdog caught collective operation timeout|timed out in blocking wait|milliseconds before timing out|Timeout at NCCL work",
    ),
    ("watchdog.heartbeat", "torch", r"watchdog got stuck|heart ?beat monitor|heartbeat|watchdog hang"),
    ("flight_recorder.dump", "torch", r"flight.?recorder|dump(ing)? (nccl trace|debug info)|NCCLPG debug info|dump signal"),
    (
        "watchdog.exception",
        "torch",
        r"watchdog thread terminated with exception|detected by watchdog|Some NCCL operations have failed or timed out|taking the entire process down|NCCL communicator encountered error|raised the following async exception",
    ),
    ("barrier.timeout", None, r"failed to pass monitoredBarrier|store based barrier|store_based_barrier|barrier .*timed out"),
    (
        "collective.mismatch",
        None,
        r"mismatch between collectives|Detected mismatch between|CollectiveFingerPrint|collectives? .*(do not|don't|does not) match|collective mismatch",
    ),
    (
        "config.mismatch",
        None,
        r"Mismatched NCCL version|version mismatch|mismatch in info from procs|mismatchs? with NCCL device|inconsistent",
    ),
    ("nccl.version", "nccl", r"^NCCL version|^cudaDriverVersion|version %d"),
    (
        "nccl.interface",
        "nccl|ncclrdmasharp",
        r"Using( network| interface)?\b.*%s|Bootstrap : Using|NET/Socket : Using|NET/IB : Using|No usable listening interface|no socket interface|interfaces found",
    ),
    ("gloo.timeout", "torch", r"^Timed out waiting|ms for (recv|send) operation to complete"),
    (
        "socket.connection_closed",
        None,
        r"Connection closed by (peer|remote)|Connection reset by peer|remote process exited|Broken pipe|closed the connection|unexpected EOF|Connection closed|Socket closed|peer .*(closed|disconnected)",
    ),
    (
        "socket.listen_failed",
        None,
        r"failed to listen|(failed to|cannot|could not) bind (to )?(a |the )?(socket|port|address|ip|any)|Address already in use|EADDRINUSE",
    ),
    (
        "socket.connect_failed",
        None,
        r"connect(ion)? (to .*)?(failed|refused|timed out|error)|failed to connect|Connect to .* failed|could not connect|Connection refused|retrying connect|connect.*retr(y|ies)|Connect: exceeded|No route to host|connectFullMesh",
    ),
    (
        "store.timeout",
        None,
        r"(TCPStore|store|key)\b.*(time[d ]?out|Timeout)|(timed out|timeout)\b.*\b(store|key)|Socket Timeout|wait timeout after|client socket has timed out",
    ),
    ("store.error", "torch|deepspeed", r"TCPStore|c10d store|key-value store|store server|HashStore|\bstore\b"),
    ("ib.completion_error", "nccl|ncclrdmasharp", r"Got completion|completion with error|wc\.status|wc->status|ibv_poll_cq"),
    ("ib.error", "nccl:WARN|ncclrdmasharp:WARN", r"NET/IB|ibv_|\bIB\b|RoCE|\bGID\b"),
    ("net.error", "nccl:WARN|ncclrdmasharp:WARN", r"^NET/|Net ?:|NET/Plugin|libnccl-net|socket|Call to (recv|send)|Proxy"),
    ("nccl.remote_error", "nccl|torch", r"ncclRemoteError|Remote error|remote (process|peer)"),
    (
        "nccl.system_error",
        "nccl|torch|ncclrdmasharp",
        r"ncclSystemError|System call|Call to .* failed|failed with error|unhandled system error",
    ),
    (
        "nccl.invalid_usage",
        "nccl|torch",
        r"ncclInvalidUsage|ncclInvalidArgument|invalid usage|Invalid (argument|rank|root|type|operation|value|communicator)|Duplicate GPU|not a valid|must be called",
    ),
    ("gpu.lost", None, r"fallen off the bus|GPU is lost|ECC error|uncorrectable|\bXid\b|NVML_ERROR_GPU_IS_LOST"),
    ("cuda.oom", None, r"out of memory|CUDA_ERROR_OUT_OF_MEMORY"),
    (
        "cuda.error",
        None,
        r"CUDA error|Cuda failure|cudaError|CUDA driver|unspecified launch failure|illegal memory access|device-side assert|no CUDA-capable device|CUDA kernel errors",
    ),
    (
        "mpi.daemon_lost",
        "openmpi",
        r"lost communication with a remote daemon|daemon .*(died|failed|lost)|unable to reach|orted .*(failed|died)",
    ),
    (
        "dataloader.worker_killed",
        "torch|deepspeed",
        r"DataLoader worker .*(killed|exited unexpectedly)|bus error|shared memory|\bshm\b",
    ),
    ("shm.error", None, r"shared memory|/dev/shm|\bshm_open|posix_fallocate"),
    ("dataloader.timeout", "torch", r"DataLoader timed out"),
    (
        "process.killed",
        None,
        r"exited on signal|killed by signal|terminated with signal|SIGKILL|got signal|received signal|death signal|exited unexpectedly|\bKilled\b",
    ),
    ("process.stopping", "torch|deepspeed", r"closing signal|Stopping worker group|shutting down workers|Killing subprocess"),
    (
        "process.failed",
        None,
        r"failed \(exitcode|exitcode|exit code|return code|MPI_ABORT|non-zero status|ChildFailedError|worker group failed|terminated with exit code|error file",
    ),
    ("rendezvous.timeout", "torch|deepspeed", r"rendezvous.*(timed out|timeout)|(timed out|timeout).*rendezvous"),
    ("rendezvous.error", "torch|deepspeed", r"rendezvous|RendezvousClosedError|rdzv"),
    ("elastic.restart", "torch|deepspeed", r"restart|max_restarts"),
    (
        "build.failed",
        "torch|deepspeed",
        r"Error building extension|ninja|compil|nvcc|linker|Error checking compiler|\bg\+\+|build",
    ),
    ("build.lock_wait", "torch|deepspeed", r"\block\b|baton"),
    (
        "nccl.init",
        "nccl",
        r"Init COMPLETE|comm %p rank %d|ncclCommInitRank|Channel %|Trees|Ring|Setting affinity|Connected all|NVLS|topology|CollNet|CUDA Dev",
    ),
    ("timeout.other", None, r"timed out|timeout"),
]
_MEANINGS = [(meaning, program, re.compile(pattern, re.I)) for meaning, program, pattern in MEANING_RULES]


@dataclass
class Entry:
    program: str
    style: str
    template: str
    severity: str
    rows: list[HarvestRow] = field(default_factory=list)


# Library strings that are no message: operator schemas ("allreduce_(Tensor[] tensors, …) -> …") and compiler-made
# function signatures (__PRETTY_FUNCTION__: "constexpr c10::… [with T = …]").
NOT_A_MESSAGE = re.compile(
    r"\) -> |Tensor\[\]|Tensor\(a|^\w+\(Tensor|^(constexpr|static|virtual|inline) |\[with \w+ = |^[\w:<>]+ c10::"
)


def piece_style(text: str) -> str:
    """A binary string that is itself a whole format (fmt's `{}`, printf's `%s`) is matched as one; others are pieces."""
    if re.search(r"\{(:[^{}]*)?\}", text):
        return "brace"
    if "{" not in text and re.search(r"%(-?\d+)?(\.\d+)?(l|ll|z)?[sdufx]", text):
        return "printf"
    return "pieces"


def literal_runs(style: str, template: str) -> list[str]:
    """The template's literal text between its fields (fields removed, escapes resolved)."""
    if style == "pieces":
        return [template]
    spec = PRINTF_SPEC if style == "printf" else BRACE_SPEC
    runs, last = [], 0
    for m in spec.finditer(template):
        whole = m.group(0)
        if whole in ("%%", "{{", "}}"):
            continue
        runs.append(template[last : m.start()])
        last = m.end()
    runs.append(template[last:])
    unescape = (lambda t: t.replace("%%", "%")) if style == "printf" else (lambda t: t.replace("{{", "{").replace("}}", "}"))
    return [unescape(r) for r in runs]


def longest_literal(style: str, template: str) -> str:
    return max((r.strip() for r in literal_runs(style, template)), key=len, default="")


def field_type(name: str, conv: str | None) -> str:
    for type_name, pattern in FIELD_TYPES:
        if pattern.match(name):
            return type_name
    if conv in ("p",):
        return "pointer"
    if conv in ("x", "X"):
        return "hex"
    if conv in ("d", "i", "u", "o"):
        return "int"
    if conv in ("f", "e", "g", "E", "G"):
        return "float"
    return "str"


def fields_of(style: str, template: str) -> list[dict[str, str]]:
    """Name and type of every field, in order; printf fields are named after the word printed before them."""
    out: list[dict[str, str]] = []
    if style == "pieces":
        return out
    spec = PRINTF_SPEC if style == "printf" else BRACE_SPEC
    used: dict[str, int] = {}
    for m in spec.finditer(template):
        if m.group(0) in ("%%", "{{", "}}"):
            continue
        if style == "printf":
            conv = m.group("conv")
            before = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", PRINTF_SPEC.sub(" ", template[: m.start()])[-40:])
            name = m.group("key") or (before[-1] if before else "value")
        else:
            conv = None
            raw = m.group("name")
            spec_part = raw.split(":", 1)[1] if ":" in raw else ""
            conv = spec_part[-1:] if spec_part[-1:] in "dxXfeg" else None
            name = re.split(r"[!:.\[]", raw)[0] or "value"
            if name == "value":
                before = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", BRACE_SPEC.sub(" ", template[: m.start()])[-40:])
                name = before[-1] if before else "value"
        name = re.sub(r"\W", "_", name)[:40] or "value"
        used[name] = used.get(name, 0) + 1
        unique = name if used[name] == 1 else f"{name}_{used[name]}"
        out.append({"name": unique, "type": field_type(name, conv)})
    return out


def meaning_of(program: str, severity: str, template: str) -> str:
    for meaning, only, pattern in _MEANINGS:
        if only is not None and not {program, f"{program}:{severity}"} & set(only.split("|")):
            continue
        if pattern.search(template):
            return meaning
    return "other"


def slug_of(template: str, style: str) -> str:
    words = re.findall(r"[A-Za-z][A-Za-z0-9]+", " ".join(literal_runs(style, template)))
    stop = {"the", "a", "an", "of", "to", "for", "in", "on", "and", "or", "is", "was", "be", "with", "by", "at", "from"}
    kept = [w.lower() for w in words if w.lower() not in stop][:5]
    return "_".join(kept) or "message"


def area_of(path: str) -> str:
    """A short area name from the file: src/transport/net_ib.cc → net_ib, libtorch_cpu.so#…/TCPStore.cpp → tcpstore."""
    path = path.split("#", 1)[-1]
    stem = Path(path).stem.lower()
    return re.sub(r"[^a-z0-9]+", "_", stem).strip("_") or "main"


def build_program(program: str, rows: list[HarvestRow]) -> str:
    """The catalogue YAML text for one program's harvest."""
    releases = sorted({r.release for r in rows}, key=release_key)
    entries: dict[tuple[str, str, str], Entry] = {}
    for row in sorted(rows, key=lambda r: (release_key(r.release), r.file, r.line)):
        severity = SEVERITIES.get(row.severity, row.severity)
        if row.style == "pieces" and NOT_A_MESSAGE.search(row.format):
            continue
        style = piece_style(row.format) if row.style == "pieces" else row.style
        template = row.format.strip() if row.style == "pieces" else row.format
        if sum(len(r.strip()) for r in literal_runs(style, template)) < MIN_LITERAL or len(longest_literal(style, template)) < 2:
            continue
        key = (style, template, severity)
        entries.setdefault(key, Entry(program, style, template, severity)).rows.append(row)
    ordered = sorted(entries.values(), key=lambda e: (release_key(e.rows[0].release), e.template, e.style, e.severity))
    out_entries = []
    ids: dict[str, int] = {}
    for entry in ordered:
        present = {r.release for r in entry.rows}
        first = min(present, key=release_key)
        last = max(present, key=release_key)
        span = [r for r in releases if release_key(first) <= release_key(r) <= release_key(last)]
        absent = [r for r in span if r not in present]
        base = f"{program}.{area_of(entry.rows[0].file)}.{slug_of(entry.template, entry.style)}"
        ids[base] = ids.get(base, 0) + 1
        item: dict[str, object] = {
            "id": f"{base}.v{ids[base]}",
            "template": entry.template,
            "style": entry.style,
            "severity": entry.severity,
            "meaning": meaning_of(program, entry.severity, entry.template),
            "first": first,
            "last": last,
        }
        if absent:
            item["absent_in"] = absent
        item["file"] = entry.rows[0].file
        fields = fields_of(entry.style, entry.template)
        if fields:
            item["fields"] = fields
        out_entries.append(item)
    document = {
        "schema": SCHEMA_VERSION,
        "program": program,
        "releases": releases,
        "sources": sorted({r.source for r in rows}, key=lambda s: release_key(re.sub(r"^\D*", "", s)) or (0,)),
        "entries": out_entries,
    }
    header = f"# Generated by tools/catalogue/build.py from content/catalogue/harvest/{program}.tsv: do not edit by hand.\n"
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=200, default_flow_style=False)


def build_all(harvest_dir: Path = HARVEST_DIR) -> dict[str, str]:
    """{program: catalogue text} for every harvest file."""
    return {path.stem: build_program(path.stem, harvest_read(path)) for path in sorted(harvest_dir.glob("*.tsv"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed catalogue, write nothing")
    args = parser.parse_args()
    status = 0
    for program, text in build_all().items():
        target = MESSAGES_DIR / f"{program}.yaml"
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                print(f"{target} differs from what the harvest builds", file=sys.stderr)
                status = 1
        else:
            target.write_text(text, encoding="utf-8")
            print(f"{target}: {text.count(chr(10) + '- id: ')} entries", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
