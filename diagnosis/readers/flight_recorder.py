"""Read PyTorch Flight Recorder dumps (one file per rank) without executing them, and find where ranks diverge.

The recorder (TraceUtils.h in PyTorch 2.3-2.4, NCCLUtils.hpp in 2.5, FlightRecorder.hpp / FlightRecorderDetail.hpp
from 2.6) writes a dict as a protocol-2 pickle (`_dump_nccl_trace`, `_dump_fr_trace`, and the file named by
TORCH_NCCL_DEBUG_INFO_TEMP_FILE / TORCH_FR_DUMP_TEMP_FILE + rank) or as JSON (`_dump_nccl_trace_json` from 2.5,
`_dump_fr_trace_json` from 2.8):

  version       "1.4" (2.3), "2.1" (2.4), "2.4" (2.5-2.7), "2.9" (2.8), "2.10" (2.9-2.13)
  pg_config     1.4: {pg_id: [ranks]}; later: {pg_name: {"name", "desc", "ranks": "[0, 1, ...]"}}
  pg_status     2.4+: {pg_id: {"last_enqueued_collective", "last_started_collective", "last_completed_collective"}}
  entries       [{record_id, pg_id, process_group: (name, desc) (2.1+), seq_id (1.4) | collective_seq_id,
                  p2p_seq_id, is_p2p (2.1+), op_id, profiling_name ("nccl:all_reduce", "gloo:broadcast"),
                  input_sizes, output_sizes, input_dtypes / output_dtypes (2.1+), state (scheduled | started |
                  completed), retired, timeout_ms (2.4+), frames: [{name, filename, line}] (pickle only), ...}]

The pickle holds only dicts, lists, tuples, strings, numbers, bools and None; the unpickler here refuses every
global, so a crafted file cannot import or call anything. The dump does not name its own rank: it comes from
the file name (the writer appends the rank to its prefix), as torch/distributed/flight_recorder's loader reads it.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

# Dump format version -> the releases that write it (read from each release's C++ writer).
SUPPORTED_VERSIONS: dict[str, str] = {
    "1.4": "PyTorch 2.3",
    "2.1": "PyTorch 2.4",
    "2.4": "PyTorch 2.5-2.7",
    "2.9": "PyTorch 2.8",
    "2.10": "PyTorch 2.9-2.13",
}
MAX_DUMP_BYTES = 256 * 1024**2  # a JSON dump
# A pickle costs about 16 bytes of memory a byte while it loads (a run of None opcodes); real dumps of 2,000
# entries with their frames are 1-50 MB.
MAX_PICKLE_BYTES = 64 * 1024**2
MAX_DEPTH = 32  # nesting of lists and dicts; a real dump nests 5 deep (entries, entry, frames, frame, value)
# Entries read per rank; the recorder keeps 2000 by default (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_FR_BUFFER_SIZE).
MAX_ENTRIES = 20_000
MAX_FRAMES = 64
MAX_NODES = 5_000_000  # values visited when checking a loaded dump's types
_PICKLE_KEYS = (b"version", b"entries")
_JSON_KEYS = (b'"version"', b'"pg_config"')
_TORCH_FRAME_RE = re.compile(r"(?:^|/)torch/(?:distributed|nn/parallel|_dynamo|utils/_contextlib)/")
_RANK_IN_NAME_RE = re.compile(r"(\d{1,6})(?:\.(?:json|pkl|pickle|bin))?$", re.IGNORECASE)


class FlightRecorderError(ValueError):
    """A dump that cannot be read safely or is not one this reader knows; the message says why."""


class _GlobalAsked(pickle.UnpicklingError):
    def __init__(self, what: str, message: str) -> None:
        super().__init__(message)
        self.what = what


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Loads plain data only: every global (class, function, module attribute) is refused."""

    def find_class(self, module: str, name: str):
        raise _GlobalAsked(
            f"{module}.{name}",
            f"the pickle asks for the global {module}.{name}; a Flight Recorder dump holds plain data only, so it was not loaded",
        )

    def persistent_load(self, pid):
        raise _GlobalAsked("a persistent id", "the pickle uses persistent ids; a Flight Recorder dump does not")


# What a damaged or crafted pickle raises while loading: each means "not a readable dump", never a crash.
_UNREADABLE = (
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    MemoryError,
    RecursionError,
    struct.error,
    UnicodeDecodeError,
)


NOT_LOADED = object()  # a file's pickle was not loaded (not a pickle, over the limit, unreadable, or hostile)


@dataclass(frozen=True)
class PickleScreen:
    """A file's pickle loaded once, with the unpickler that refuses every global, so nothing is imported or run:
    `asked` is what a hostile pickle asks to import (such as `os.system`), `loaded` what a plain one held
    (NOT_LOADED for anything else). The job reader screens every file; the dump reader takes `loaded` from it
    instead of unpickling up to MAX_PICKLE_BYTES a second time."""

    asked: str | None = None
    loaded: Any = NOT_LOADED


def pickle_screen(data: bytes) -> PickleScreen:
    """Screen a file that may be a pickle (protocol 2 or later, as dumps are written). A job holding a pickle that
    asks for a global is hostile, and is refused as a whole rather than read around."""
    if len(data) < 2 or data[0] != 0x80 or not 2 <= data[1] <= 5 or len(data) > MAX_PICKLE_BYTES:
        return PickleScreen()
    try:
        return PickleScreen(loaded=_NoGlobalsUnpickler(io.BytesIO(data)).load())
    except _GlobalAsked as asked:
        return PickleScreen(asked=asked.what)
    except (pickle.UnpicklingError, *_UNREADABLE):
        return PickleScreen()


def flight_recorder_detect(name: str, data: bytes) -> bool:
    """Whether the bytes look like a Flight Recorder dump: a pickle of protocol 2+ holding a dict with the
    recorder's keys, or a JSON object with them."""
    if len(data) < 16:
        return False
    if data[0] == 0x80 and 2 <= data[1] <= 5:
        body = data[2:11] if data[1] < 4 else data[11:20]  # protocol 4+ opens with a FRAME of 8 bytes
        return body[:1] == b"}" and all(key in data for key in _PICKLE_KEYS)
    head = data[:64].lstrip()
    if head.startswith(b"{"):
        return all(key in data for key in _JSON_KEYS)
    return False


def flight_recorder_load(data: bytes, unpickled: Any = NOT_LOADED) -> dict[str, Any]:
    """The dump as plain data (pickle or JSON). Raises FlightRecorderError for anything else, for a dump
    over the size limit, and for an unknown format version. `unpickled`: the pickle as pickle_screen loaded it."""
    if len(data) > MAX_DUMP_BYTES:
        raise FlightRecorderError(f"the dump is {len(data)} bytes, over the limit of {MAX_DUMP_BYTES}")
    if data[:1] == b"\x80" and unpickled is not NOT_LOADED:
        loaded = unpickled
    elif data[:1] == b"\x80":
        if len(data) > MAX_PICKLE_BYTES:
            raise FlightRecorderError(f"the pickled dump is {len(data)} bytes, over the limit of {MAX_PICKLE_BYTES}")
        try:
            loaded = _NoGlobalsUnpickler(io.BytesIO(data)).load()
        except pickle.UnpicklingError as error:
            raise FlightRecorderError(f"refused: {error}") from None
        except _UNREADABLE as error:
            raise FlightRecorderError(f"not a readable pickle ({type(error).__name__}: {error})") from None
    else:
        try:
            loaded = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as error:
            raise FlightRecorderError(f"not readable JSON ({type(error).__name__})") from None
    _check_plain(loaded)
    if not isinstance(loaded, dict) or "version" not in loaded:
        raise FlightRecorderError("not a Flight Recorder dump: no 'version' key")
    version = str(loaded["version"])
    if version not in SUPPORTED_VERSIONS:
        known = ", ".join(f"{v} ({r})" for v, r in SUPPORTED_VERSIONS.items())
        raise FlightRecorderError(f"dump format version {version!r} is not one this reader knows (known: {known})")
    return loaded


def _check_plain(value: Any) -> None:
    """Every value is a dict, list, tuple, str, int, float, bool or None, nested at most MAX_DEPTH deep (a
    bounded walk): what reads the dump later (str(), comparisons) recurses, and would fail on deeper nesting."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise FlightRecorderError(f"the dump holds more than {MAX_NODES} values")
        if isinstance(item, (str, int, float, bool)) or item is None:
            continue
        if depth >= MAX_DEPTH:
            raise FlightRecorderError(f"the dump nests values more than {MAX_DEPTH} deep")
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item.keys())
            stack.extend((entry, depth + 1) for entry in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((entry, depth + 1) for entry in item)
        else:
            raise FlightRecorderError(f"the dump holds a {type(item).__name__}; only plain data is accepted")


# ---- one rank's dump, normalised ------------------------------------------------------------------


@dataclass
class _Entry:
    pg: str
    pg_desc: str
    seq: int
    op: str
    name: str
    input_sizes: Any
    output_sizes: Any
    input_dtypes: Any
    output_dtypes: Any
    state: str
    done: bool
    frames: list[str]


@dataclass
class _Dump:
    rank: int
    version: str
    entries: list[_Entry]
    pg_ranks: dict[str, list[int]]
    pg_desc: dict[str, str]


def _ranks_value(value: Any) -> list[int]:
    if isinstance(value, (list, tuple)):
        return sorted({int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)})
    if isinstance(value, str):
        return sorted({int(v) for v in re.findall(r"\d{1,7}", value[:1_000_000])})
    return []


def _frames(value: Any) -> list[str]:
    frames = []
    if isinstance(value, list):
        for frame in value[:MAX_FRAMES]:
            if isinstance(frame, dict):
                frames.append(f"{frame.get('filename', '?')}:{frame.get('line', '?')} {frame.get('name', '?')}")
    return frames


def call_site(frames: list[str]) -> str | None:
    """The innermost frame outside torch.distributed: where the program issued the collective."""
    for frame in frames:
        if not _TORCH_FRAME_RE.search(frame.split(":", 1)[0]):
            return frame
    return frames[0] if frames else None


def _dump_normalise(rank: int, loaded: dict[str, Any]) -> _Dump:
    version = str(loaded["version"])
    pg_ranks: dict[str, list[int]] = {}
    pg_desc: dict[str, str] = {}
    config = loaded.get("pg_config")
    if isinstance(config, dict):
        for key, info in config.items():
            if isinstance(info, dict):
                pg_ranks[str(key)] = _ranks_value(info.get("ranks"))
                pg_desc[str(key)] = str(info.get("desc", ""))
            else:
                pg_ranks[str(key)] = _ranks_value(info)
    entries = []
    raw = loaded.get("entries")
    for item in (raw if isinstance(raw, list) else [])[:MAX_ENTRIES]:
        if not isinstance(item, dict) or item.get("is_p2p") is True:
            continue
        seq = item.get("collective_seq_id", item.get("seq_id"))
        if not isinstance(seq, int) or isinstance(seq, bool) or seq <= 0:
            continue
        group = item.get("process_group")
        if isinstance(group, (list, tuple)) and len(group) == 2:
            pg, desc = str(group[0]), str(group[1])
        else:
            pg, desc = str(item.get("pg_id", "0")), ""
        name = str(item.get("profiling_name", "") or "")
        op = name.split(":", 1)[-1].split(" ", 1)[0] or "?"
        if op in ("send", "recv"):
            continue
        state = str(item.get("state", "") or "")
        # Gloo has no device events: its entries stay "scheduled" and are retired when the work ends.
        done = state == "completed" or (name.startswith("gloo:") and item.get("retired") is True)
        entries.append(
            _Entry(
                pg=pg,
                pg_desc=desc,
                seq=seq,
                op=op,
                name=name,
                input_sizes=item.get("input_sizes"),
                output_sizes=item.get("output_sizes"),
                input_dtypes=item.get("input_dtypes"),
                output_dtypes=item.get("output_dtypes"),
                state=state,
                done=done,
                frames=_frames(item.get("frames")),
            )
        )
    return _Dump(rank=rank, version=version, entries=entries, pg_ranks=pg_ranks, pg_desc=pg_desc)


# ---- all ranks together ----------------------------------------------------------------------------


@dataclass
class FlightRecorderReading:
    facts: dict[str, Any]  # fr_missing_ranks, fr_mismatch, fr_all_started_first, fr_pg_count
    groups: list[dict[str, Any]]  # {ranks, where, state, odd, frames}, largest first
    summary: str
    process_groups: list[dict[str, Any]] = field(default_factory=list)  # per group: where it diverges, if it does
    notes: list[str] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)  # ranks whose dump was read
    version: str | None = None


def dump_rank(name: str) -> int | None:
    """The rank a dump's file name ends with (`nccl_trace_rank_3`, `rank_3`, `rank_3.json`)."""
    match = _RANK_IN_NAME_RE.search(name.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def flight_recorder_read(dumps: Iterable[Any], unpickled: dict[str, Any] | None = None) -> FlightRecorderReading:
    """Read every rank's dump and find, per process group, the first collective where the ranks diverge.

    `dumps`: (name, data) or (name, data, rank) tuples, or objects with .name, .data and .rank (JobFile);
    a missing rank is read from the end of the name. Dumps that cannot be read are left out with a note.
    `unpickled`: name -> the dump as the job reader's pickle_screen loaded it (JobInput.unpickled), not loaded again."""
    notes: list[str] = []
    read: dict[int, _Dump] = {}
    versions: Counter = Counter()
    for item in dumps:
        if isinstance(item, tuple):
            name, data, rank = (item + (None,))[:3]
        else:
            name, data, rank = item.name, item.data, getattr(item, "rank", None)
        rank = rank if rank is not None else dump_rank(name)
        if rank is None:
            notes.append(f"{name}: left out, no rank in the file name")
            continue
        try:
            loaded = flight_recorder_load(data, (unpickled or {}).get(name, NOT_LOADED))
        except FlightRecorderError as error:
            notes.append(f"{name}: left out, {error}")
            continue
        if rank in read:
            notes.append(f"{name}: left out, a second dump for rank {rank}")
            continue
        read[rank] = _dump_normalise(rank, loaded)
        versions[read[rank].version] += 1
    if len(versions) > 1:
        notes.append("the dumps have different format versions: " + ", ".join(sorted(versions)))
    groups_by_pg = _process_groups(read)
    results = [_diverge(pg, info, read) for pg, info in groups_by_pg.items()]
    results = [r for r in results if r is not None]
    facts = {
        "fr_missing_ranks": sorted({r for res in results for r in res["missing"]}),
        "fr_mismatch": any(res["mismatched"] for res in results),
        "fr_all_started_first": any(res["all_started_first"] for res in results),
        "fr_pg_count": len(groups_by_pg),
    }
    for res in results:
        if res["no_dump"]:
            notes.append(f"process group {res['pg']}: no dump for rank(s) {_ranks_text(res['no_dump'])}")
    focus = _focus(results)
    groups = focus["groups"] if focus else []
    return FlightRecorderReading(
        facts=facts,
        groups=groups,
        summary=_summary(focus, read, results),
        process_groups=[{k: v for k, v in r.items() if k != "groups"} for r in results],
        notes=notes,
        ranks=sorted(read),
        version=versions.most_common(1)[0][0] if versions else None,
    )


def _process_groups(read: dict[int, _Dump]) -> dict[str, dict[str, Any]]:
    """pg name -> {desc, members}: members from pg_config when it names the group, else every rank that
    issued a collective in it (Gloo's default group is recorded under a different key in pg_config)."""
    groups: dict[str, dict[str, Any]] = {}
    for dump in read.values():
        for entry in dump.entries:
            info = groups.setdefault(entry.pg, {"desc": entry.pg_desc, "members": set(), "issuers": set()})
            info["issuers"].add(dump.rank)
            if entry.pg in dump.pg_ranks:
                info["members"].update(dump.pg_ranks[entry.pg])
    for pg, info in groups.items():
        if not info["members"]:
            info["members"] = set(info["issuers"])
            if pg == "0":  # the default group holds every rank
                info["members"] |= set(read)
    return groups


def _signature(entry: _Entry) -> tuple:
    """What must agree across ranks for one collective (upstream's matching rules, simplified)."""
    inputs = None if entry.op in ("all_to_all", "all_to_all_single", "scatter") else _freeze(entry.input_sizes)
    outputs = None if entry.op in ("all_to_all", "all_to_all_single", "gather") else _freeze(entry.output_sizes)
    dtypes = None
    if entry.op not in ("scatter", "gather", "broadcast") and isinstance(entry.input_dtypes, list):
        dtypes = tuple(sorted({str(d) for d in entry.input_dtypes[:64]}))
    return entry.op, inputs, outputs, dtypes


def _freeze(value: Any, depth: int = 0) -> Any:
    """A hashable copy of a sizes value (lists of lists of ints in a real dump)."""
    if isinstance(value, (list, tuple)) and depth < 4:
        return tuple(_freeze(v, depth + 1) for v in value[:64])
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return type(value).__name__


def _diverge(pg: str, info: dict[str, Any], read: dict[int, _Dump]) -> dict[str, Any] | None:
    members = sorted(info["members"])
    have = [r for r in members if r in read]
    if not have:
        return None
    per_rank: dict[int, dict[int, _Entry]] = {}
    for rank in have:
        seqs: dict[int, _Entry] = {}
        for entry in read[rank].entries:
            if entry.pg == pg:
                seqs.setdefault(entry.seq, entry)
        per_rank[rank] = seqs
    firsts = [min(s) for s in per_rank.values() if s]
    lasts = {r: (max(s) if s else 0) for r, s in per_rank.items()}
    if not firsts:
        return None
    start, end = max(firsts), max(lasts.values())  # below `start` some rank's ring buffer no longer holds entries
    result = {
        "pg": pg,
        "desc": info["desc"],
        "ranks": members,
        "no_dump": [r for r in members if r not in read],
        "seq": None,
        "op": None,
        "missing": [],
        "mismatched": [],
        "pending": {},
        "frames": {},
        "all_started_first": False,
        "groups": [],
    }
    for seq in range(start, end + 1):
        present = {r: per_rank[r][seq] for r in have if seq in per_rank[r]}
        missing = [r for r in have if r not in present]
        counts = Counter(_signature(e) for e in present.values())
        lowest = {}
        for rank, entry in sorted(present.items()):
            lowest.setdefault(_signature(entry), rank)
        common = max(counts, key=lambda sig: (counts[sig], -lowest[sig]))  # most ranks; ties: the lowest rank's
        mismatched = [r for r, e in present.items() if _signature(e) != common]
        pending = {r: e.state or "scheduled" for r, e in present.items() if not e.done}
        if not (missing or mismatched or pending):
            continue
        result.update(
            seq=seq,
            op=common[0],
            missing=missing,
            mismatched=sorted(mismatched),
            pending=pending,
            frames={r: call_site(e.frames) for r, e in present.items() if e.frames},
        )
        result["all_started_first"] = (
            seq == 1
            and not missing
            and not mismatched
            and not result["no_dump"]
            and len(pending) == len(have)
            and all(state == "started" for state in pending.values())
        )
        result["groups"] = _groups_at(pg, info["desc"], seq, present, missing, mismatched, per_rank, common)
        return result
    last_op = next((e.op for e in per_rank[have[0]].values() if e.seq == end), "?")
    result["groups"] = [
        {
            "ranks": have,
            "where": f"{last_op} #{end} {_pg_text(pg, info['desc'])}",
            "state": "completed",
            "odd": False,
            "frames": [],
        }
    ]
    result["healthy"] = True
    return result


def _groups_at(
    pg: str,
    desc: str,
    seq: int,
    present: dict[int, _Entry],
    missing: list[int],
    mismatched: list[int],
    per_rank: dict[int, dict[int, _Entry]],
    common: tuple,
) -> list[dict[str, Any]]:
    where_pg = _pg_text(pg, desc)
    buckets: dict[tuple[str, str, bool], list[int]] = {}
    for rank, entry in present.items():
        state = "completed" if entry.done else (entry.state or "scheduled")
        odd = rank in mismatched
        buckets.setdefault((f"{entry.op} #{seq} {where_pg}", state, odd), []).append(rank)
    for rank in missing:
        before = [s for s in per_rank[rank] if s < seq]
        last = f"last issued {per_rank[rank][max(before)].op} #{max(before)}" if before else "issued none"
        buckets.setdefault((f"never issued #{seq} {where_pg} ({last})", "missing", True), []).append(rank)
    groups = []
    for (where, state, odd), ranks in buckets.items():
        frames = [present[r].frames for r in ranks if r in present and present[r].frames]
        site = call_site(frames[0]) if frames else None
        groups.append(
            {
                "ranks": sorted(ranks),
                "where": where,
                "state": state,
                "odd": odd,
                "frames": frames[0][:8] if frames else [],
                "call_site": site,
            }
        )
    groups.sort(key=lambda g: (-len(g["ranks"]), g["odd"], g["ranks"][0]))
    return groups


def _pg_text(pg: str, desc: str) -> str:
    return f"in process group {pg}" + (f" ({desc})" if desc and desc != pg else "")


def _focus(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The group to show: a missing rank or mismatch first, then ranks stuck in a collective, then the
    largest group."""
    if not results:
        return None
    return min(results, key=lambda r: (not (r["missing"] or r["mismatched"]), not r["pending"], -len(r["ranks"]), r["pg"]))


def _summary(focus: dict[str, Any] | None, read: dict[int, _Dump], results: list[dict[str, Any]]) -> str:
    if not read:
        return "No Flight Recorder dump could be read."
    head = f"Flight Recorder dumps of {len(read)} rank{'s' if len(read) != 1 else ''}"
    if focus is None or focus.get("healthy"):
        last = focus["groups"][0]["where"] if focus and focus["groups"] else "nothing recorded"
        return f"{head} show no divergence: every rank completed the same collectives (last: {last})."
    where = f"{focus['op']} #{focus['seq']} {_pg_text(focus['pg'], focus['desc'])}"
    waiting = sorted(focus["pending"])
    if focus["missing"]:
        tail = f"; rank(s) {_ranks_text(waiting)} wait in it" if waiting else ""
        return f"{head}: rank(s) {_ranks_text(focus['missing'])} never issued {where}{tail}."
    if focus["mismatched"]:
        ops = sorted({g["where"].split(" #", 1)[0] for g in focus["groups"] if g["odd"]})
        return (
            f"{head}: at {where}, rank(s) {_ranks_text(focus['mismatched'])} issued a different collective or "
            f"sizes ({', '.join(ops)}) than the other ranks."
        )
    states = Counter(focus["pending"].values())
    state_text = ", ".join(f"{n} {s}" for s, n in states.most_common())
    return f"{head}: {len(waiting)} rank(s) are in {where} and none completed it ({state_text})."


def _ranks_text(ranks: list[int]) -> str:
    """0, 1, 2, 5, 6 -> '0-2, 5, 6'."""
    ranks = sorted(ranks)
    parts = []
    index = 0
    while index < len(ranks):
        stop = index
        while stop + 1 < len(ranks) and ranks[stop + 1] == ranks[stop] + 1:
            stop += 1
        if stop - index >= 2:
            parts.append(f"{ranks[index]}-{ranks[stop]}")
        else:
            parts.extend(str(r) for r in ranks[index : stop + 1])
        index = stop + 1
    return ", ".join(parts)
