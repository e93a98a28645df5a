"""A file read window by window gives exactly what a whole read gives: the same matches, scores, evidence
lines, facts, rank verdict, stacks, first failure and harmless lines (the streaming engine's contract)."""

import contextlib
import io
import os
import time
from pathlib import Path

import pytest
from django.conf import settings

from tools.corpus import content_rules, corpus_entries
from diagnosis.engine import job_diagnose
from diagnosis.reading import _file_windows, _mapped, _windows, _windows_sliced, source_read, window_spans
from tests.waiting import wait_for

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

REPO = Path(__file__).resolve().parents[2]
ENTRIES = corpus_entries(REPO / "tests" / "fixtures" / "logs")


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def summary(diagnosis) -> dict:
    return {
        "matches": [
            (m.slug, m.score, m.confidence, m.fix_step, [(e.line, e.text, e.signal) for e in m.evidence])
            for m in diagnosis.matches
        ],
        "facts": diagnosis.facts,
        "verdict": diagnosis.verdict.summary if diagnosis.verdict else None,
        "stacks": diagnosis.stack_groups,
        "timeouts": diagnosis.timeouts,
        "failure": diagnosis.failure,
        "harmless": [(h.line, h.id) for h in diagnosis.harmless],
        "lines": diagnosis.stats["lines"],
        "bytes": diagnosis.stats["bytes"],
    }


def whole_and_windowed(data: bytes, rules, window: int, lookahead: int):
    whole = source_read(data, rules, label=None, repair=False, window_bytes=len(data) + 1)
    windowed = source_read(io.BytesIO(data), rules, label=None, repair=False, window_bytes=window, lookahead_bytes=lookahead)
    return summary(job_diagnose([whole], rules, top=5)), summary(job_diagnose([windowed], rules, top=5))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_reading_in_small_windows_gives_what_a_whole_read_gives(entry, rules):
    whole, windowed = whole_and_windowed(entry.path.read_bytes(), rules, window=2048, lookahead=32768)
    assert windowed == whole


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_the_literal_pass_run_beside_the_decode_gives_what_it_gives_after_it(entry, rules, monkeypatch):
    """Large inputs have Hyperscan scan the cleaned bytes in a thread while they are decoded; on every fixture (broken
    UTF-8, colour codes and progress bars among them) that must read exactly as the pass over the decoded text."""
    from diagnosis import reading
    from diagnosis.scan import presence as scan_presence

    data = entry.path.read_bytes()
    monkeypatch.setattr(scan_presence, "BACKGROUND_SCAN_BYTES", 0)
    beside = source_read(data, rules, label=None, repair=False)
    monkeypatch.setattr(reading, "presence_started", lambda *args, **kwargs: None)  # the scanner scans the text itself
    after = source_read(data, rules, label=None, repair=False)
    assert summary(job_diagnose([beside], rules, top=5)) == summary(job_diagnose([after], rules, top=5))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_line_numbers_from_the_line_breaks_the_literal_pass_counted_are_the_texts_own(entry, rules, monkeypatch):
    """A large input's line breaks are counted chunk by chunk in the Hyperscan pass's thread (numpy in a process reading
    on its own, bytes.replace in a command-line worker) and the line numbers come from those counts; on every fixture,
    in chunks of 256 bytes, they must be the text's own."""
    from diagnosis import reading
    from diagnosis.scan import presence as scan_presence

    data = entry.path.read_bytes()
    monkeypatch.setattr(scan_presence, "BACKGROUND_SCAN_BYTES", 0)
    monkeypatch.setattr(scan_presence, "CHUNK_BYTES", 256)
    given = []
    original = reading.LineLocator
    monkeypatch.setattr(reading, "LineLocator", lambda *a, **kw: given.append(kw["chunk_newlines"]) or original(*a, **kw))
    counted = source_read(data, rules, label=None, repair=False)
    monkeypatch.setattr(scan_presence, "_in_parallel_worker", True)
    in_worker = source_read(data, rules, label=None, repair=False)
    monkeypatch.setattr(scan_presence, "BACKGROUND_SCAN_BYTES", len(data) + 1)  # as for a small input: the text counts its own
    own = source_read(data, rules, label=None, repair=False)
    assert given[0] is not None or not data.isascii()  # the counts were used (byte offsets are characters)
    assert given[1] == given[0]
    assert given[2] is None
    assert summary(job_diagnose([counted], rules, top=5)) == summary(job_diagnose([own], rules, top=5))
    assert summary(job_diagnose([in_worker], rules, top=5)) == summary(job_diagnose([own], rules, top=5))


def test_a_command_line_worker_scans_in_its_own_thread(monkeypatch):
    """Its sibling workers fill the other cores: another scanning thread would only cost CPU (a 16 MB console window:
    8.6-9.5 ms in two threads, 7.4-7.8 in one)."""
    from diagnosis.scan import presence as scan_presence

    monkeypatch.setattr(scan_presence, "_in_parallel_worker", False)
    monkeypatch.setattr(scan_presence.os, "cpu_count", lambda: 4)
    data = b"[rank0]: iteration 10/ 100 | lm loss 1.5\n" * 400_000  # 16 chunks
    threads = []
    monkeypatch.setattr(scan_presence, "ThreadPoolExecutor", lambda **kw: threads.append(kw) or pytest.fail("a second thread"))
    monkeypatch.setattr(scan_presence.threading, "Thread", lambda **kw: threads.append(kw) or pytest.fail("a thread"))
    with scan_presence.parallel_worker():
        found = scan_presence.presence_started(data, [("lm loss", False)]).result(timeout=0)
    assert found.chunks[("lm loss", False)] == list(range(16))
    assert threads == []


def test_a_command_line_worker_counts_line_breaks_without_importing_numpy(monkeypatch):
    """numpy's import is start-up the command line would pay before any worker reads; its workers fill every core, so
    they count with bytes.replace (no GIL to share)."""
    from diagnosis.scan import presence as scan_presence

    monkeypatch.setattr(scan_presence, "_in_parallel_worker", False)
    monkeypatch.setattr(scan_presence, "_numpy_counter", lambda: pytest.fail("numpy's counter was asked for"))
    with scan_presence.parallel_worker():
        assert scan_presence._newline_counter() is scan_presence.newlines_count
    assert scan_presence.newlines_count(memoryview(b"a\nb\n\nc")) == 3


def test_a_line_longer_than_a_window_is_read_without_losing_lines(rules):
    data = (
        b"x" * 10_000
        + b"\n[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600103 milliseconds before timing out.\nend\n"
    )
    whole, windowed = whole_and_windowed(data, rules, window=4096, lookahead=4096)
    assert windowed["lines"] == whole["lines"] == 3


def _job_files(folder: Path, count: int) -> list[tuple[str, Path]]:
    """The first `count` fixtures as the files of one job, named as the engine is given them."""
    paths = []
    for entry in ENTRIES[:count]:
        target = folder / entry.path.name
        target.write_bytes(entry.path.read_bytes())
        paths.append((target.name, target))
    return paths


def test_rank_files_read_in_parallel_give_what_one_process_gives(rules, tmp_path):
    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 6)
    serial = log_diagnose(paths, rules, workers=1)
    parallel = log_diagnose(paths, rules, workers=2)
    assert summary(parallel) == summary(serial)


@pytest.mark.parametrize("shape", ["multi-rank", "console"])
def test_a_large_log_read_in_windows_whose_look_ahead_ends_mid_line_gives_the_whole_read(rules, tmp_path, shape):
    """Regression: the window's end was found one line early when its look-ahead did not end on a line break."""
    from tools.benchmark import bench_log_write, console_log_write

    path = tmp_path / "job.log"
    (bench_log_write if shape == "multi-rank" else console_log_write)(path, size_bytes=1_500_000)
    whole, windowed = whole_and_windowed(path.read_bytes(), rules, window=100_003, lookahead=10_007)
    assert windowed == whole


@pytest.mark.parametrize("shape", ["plain", "progress bars and colour codes"])
def test_a_mapped_file_gives_what_its_bytes_in_memory_give(rules, tmp_path, shape, monkeypatch):
    """A file between the paste-repair limit and the whole-read limit is read from the page cache (mmap)."""
    fixture = (REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_bytes()
    filler = b"step 1/2000 loss 1.23\n" if shape == "plain" else b"\x1b[32m 40%|####  | 800/2000\r 41%|####  | 820/2000\x1b[0m\n"
    data = filler * (9 * 1024 * 1024 // len(filler)) + fixture
    path = tmp_path / "job.log"
    path.write_bytes(data)
    _age(path)
    from diagnosis import reading

    mapped: list[Path] = []
    original = reading._mapped
    monkeypatch.setattr(reading, "_mapped", lambda f, **kw: mapped.append(Path(f.name)) or original(f, **kw))
    from_file = source_read(path, rules, label=None)
    assert mapped == [path]
    in_memory = source_read(data, rules, label=None)
    assert summary(job_diagnose([from_file], rules, top=5)) == summary(job_diagnose([in_memory], rules, top=5))
    assert summary(job_diagnose([from_file], rules, top=5))["matches"]  # the fixture's timeout is found after 9 MB


@pytest.mark.parametrize("window, lookahead", [(2048, 32768), (4096, 512), (300, 300)])
def test_windows_cut_where_a_mapped_file_shows_line_breaks_are_the_windows_of_its_stream(tmp_path, window, lookahead):
    """A large file's windows are cut where its mapping shows line breaks, then read with pread (or sliced out of
    bytes in memory); each window, its own part and its look-behind must be exactly what reading the same bytes as a
    stream gives, on every fixture (a line longer than a window too)."""
    for entry in ENTRIES + [None]:
        data = entry.path.read_bytes() if entry else b"short\n" + b"y" * 5000 + b"\nlast line without newline"
        path = tmp_path / "log"
        path.write_bytes(data)
        streamed = list(_windows(io.BytesIO(data), window, lookahead))
        with path.open("rb") as handle:
            with _mapped(handle) as mapped:
                spans = window_spans(mapped, window, lookahead)
            assert list(_file_windows(handle, spans)) == streamed, entry.id if entry else "long line"
        assert list(_windows_sliced(data, spans)) == streamed, entry.id if entry else "long line"


def test_a_file_cut_short_while_its_windows_are_read_ends_the_read_at_what_is_left(tmp_path):
    """logrotate's copytruncate under a reader: the windows stop at the bytes still there, no error."""
    path = tmp_path / "log"
    path.write_bytes(b"".join(b"line %05d of the training log\n" % n for n in range(400)))
    with path.open("rb") as reader:
        with _mapped(reader) as mapped:
            spans = window_spans(mapped, 2048, 512)
        windows = _file_windows(reader, spans)
        first = next(windows)
        with path.open("r+b") as handle:
            handle.truncate(3000)
        rest = list(windows)
    assert first[0].startswith(b"line 00000")
    assert rest and rest[-1][3] == 3000 and rest[-1][0].endswith(b"line 00096 of the traini")


def test_a_large_file_read_in_windows_from_its_mapping_gives_the_whole_read(rules, tmp_path):
    """Past the paste-repair limit a file is mapped; with windows smaller than it, they are sliced out."""
    fixture = (REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_bytes()
    data = b"step 1/2000 loss 1.23\n" * (9 * 1024 * 1024 // 22) + fixture
    path = tmp_path / "job.log"
    path.write_bytes(data)
    _age(path)
    whole = source_read(data, rules, label=None, window_bytes=len(data) + 1)
    mapped = source_read(path, rules, label=None, window_bytes=1024 * 1024, lookahead_bytes=64 * 1024)
    assert summary(job_diagnose([mapped], rules, top=5)) == summary(job_diagnose([whole], rules, top=5))
    assert summary(job_diagnose([mapped], rules, top=5))["matches"]


def _age(path: Path) -> None:
    """A file last written a minute ago: not a live log, so it is mapped (see LIVE_SECONDS)."""
    old = time.time() - 60
    os.utime(path, (old, old))


def test_a_file_written_seconds_ago_is_read_not_mapped(rules, tmp_path, monkeypatch):
    """A live log may be truncated under the reader (logrotate's copytruncate): a mapped one would end the
    process with SIGBUS."""
    from diagnosis import reading

    fixture = (REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_bytes()
    path = tmp_path / "live.log"
    path.write_bytes(b"step 1/2000 loss 1.23\n" * (9 * 1024 * 1024 // 22) + fixture)
    mapped: list[Path] = []
    monkeypatch.setattr(reading, "_mapped", lambda f, **kw: mapped.append(f) or pytest.fail("a live log was mapped"))
    assert summary(job_diagnose([source_read(path, rules, label=None)], rules, top=5))["matches"]
    assert mapped == []


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_a_file_read_as_runs_of_windows_and_joined_gives_what_one_pass_gives(entry, rules, tmp_path, monkeypatch):
    """A large log is cut into runs of its windows, each read by a process of its own, their line numbers moved down
    by the lines before them; on every fixture, in windows of 2 KB, cut in three runs, that is the one pass's reading,
    whether each run makes its own scan plan or takes the one the first run made (one reader's later runs)."""
    from diagnosis import reading

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)  # every fixture is read from its mapping, as a large log is
    path = tmp_path / "job.log"
    path.write_bytes(entry.path.read_bytes())
    _age(path)
    one_pass = summary(job_diagnose([source_read(path, rules, label=None, window_bytes=2048, lookahead_bytes=32768)], rules))
    for plan_shared in (False, True):
        joined = _runs_joined(path, rules, window=2048, lookahead=32768, plan_shared=plan_shared)
        if joined is None:  # a file of two windows or fewer is read in one piece
            assert path.stat().st_size <= 2 * 2048
            return
        assert summary(job_diagnose([joined], rules)) == one_pass


def _runs_joined(path: Path, rules, *, window: int, lookahead: int, runs: int = 3, plan_shared: bool = False):
    """`path` cut into windows, read as `runs` runs in turn and joined, as the command's readers do; None for a file
    read in one piece. `plan_shared`: the later runs use the scan plan the first one made, as one reader's runs do."""
    from diagnosis import reading

    with path.open("rb") as handle:
        cut = reading.file_spans(handle, window_bytes=window, lookahead_bytes=lookahead)
        if cut is None:
            return None
        count = len(cut.spans)
        parts, plan = [], None
        for k in range(runs):
            part, made = reading.spans_read(
                cut, range(count * k // runs, count * (k + 1) // runs), rules, label=None, windows_hint=count, plan=plan
            )
            parts.append(part)
            plan = made if plan_shared else None
        return reading.readings_join(parts)


def test_one_large_log_is_read_on_every_core_and_gives_what_one_process_gives(rules, tmp_path, monkeypatch):
    from tools.benchmark import console_log_write
    from diagnosis import parallel, reading
    from diagnosis.engine import log_diagnose

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)
    monkeypatch.setitem(reading.source_read.__kwdefaults__, "window_bytes", 65536)
    monkeypatch.setitem(reading.file_spans.__kwdefaults__, "window_bytes", 65536)
    path = tmp_path / "job.log"
    console_log_write(path, size_bytes=2_000_000)
    _age(path)
    cuts: list[int] = []
    original = parallel.file_spans
    monkeypatch.setattr(parallel, "file_spans", lambda file: cuts.append(len(original(file).spans)) or original(file))
    parallel_read = log_diagnose([(path.name, path)], rules, workers=3)
    serial = log_diagnose([(path.name, path)], rules, workers=1)
    assert cuts and cuts[0] > 20, "the file was read as windows the readers claim"
    assert summary(parallel_read) == summary(serial)
    assert summary(serial)["matches"] and summary(serial)["lines"] > 5000  # the timeout is near the end


def _worker_killed(*args):
    os._exit(9)  # as the kernel's OOM killer ends a process: no exception, no result


def _noting_reader(monkeypatch, log_file: Path, *, worker_seconds: float = 0.0):
    """parallel.source_read, noting each file read (reader's pid, label, worker settings on) in `log_file`; a forked
    worker (a pid other than this one) takes `worker_seconds` longer a file, as a core busy with other work would."""
    from diagnosis import parallel
    from diagnosis.scan import presence as scan_presence

    command, original = os.getpid(), parallel.source_read

    def noted(path, *args, **kwargs):
        with log_file.open("a") as handle:
            handle.write(f"{os.getpid()} {kwargs['label']} {scan_presence._in_parallel_worker}\n")
        if os.getpid() != command:
            time.sleep(worker_seconds)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(parallel, "source_read", noted)


def _worker_claims_first(monkeypatch, flag: Path):
    """The command's first claim waits (up to 10 s) for the worker's: the order a quiet machine gives, made certain."""
    from diagnosis import parallel

    original = parallel.Claims.take

    def take(self, from_back):
        if not from_back:
            flag.touch()
        else:
            deadline = time.monotonic() + 10
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        return original(self, from_back)

    monkeypatch.setattr(parallel.Claims, "take", take)


def test_the_command_reads_a_share_itself_from_the_end_as_a_worker_would(rules, tmp_path, monkeypatch):
    """Its core would otherwise wait for the workers: of six files on two cores, the worker claims from the first
    and the command from the last, each file once, with the workers' settings only meanwhile."""
    from diagnosis.scan import presence as scan_presence
    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 6)
    log_file = tmp_path / "readers.txt"
    _noting_reader(monkeypatch, log_file)
    _worker_claims_first(monkeypatch, tmp_path / "worker-claimed")
    log_diagnose(paths, rules, workers=2)
    readers = [line.split() for line in log_file.read_text().splitlines()]
    order = [name for name, _ in paths]
    mine = [order.index(label) for pid, label, _ in readers if pid == str(os.getpid())]
    theirs = [order.index(label) for pid, label, _ in readers if pid != str(os.getpid())]
    assert mine and theirs and sorted(mine + theirs) == list(range(6))
    assert max(theirs) < min(mine), "the worker's files come first, the command's last"
    assert all(flag == "True" for _, _, flag in readers)
    assert scan_presence._in_parallel_worker is False  # the command reads as before afterwards


def test_a_worker_slowed_by_other_work_leaves_the_rest_of_the_job_to_the_command(rules, tmp_path, monkeypatch):
    """A login node is shared: a core busy with another user's job reads slowly. Equal shares fixed in advance would
    wait for it; the command claims what is left instead (here all but the worker's first file)."""
    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 6)
    serial = log_diagnose(paths, rules, workers=1)
    log_file = tmp_path / "readers.txt"
    _noting_reader(monkeypatch, log_file, worker_seconds=0.5)
    _worker_claims_first(monkeypatch, tmp_path / "worker-claimed")
    assert summary(log_diagnose(paths, rules, workers=2)) == summary(serial)
    readers = [line.split() for line in log_file.read_text().splitlines()]
    assert [label for pid, label, _ in readers if pid != str(os.getpid())] == [paths[0][0]]
    assert sorted(label for pid, label, _ in readers if pid == str(os.getpid())) == sorted(n for n, _ in paths[1:])


def test_claims_from_both_ends_cover_every_unit_once_in_blocks_that_shrink():
    from diagnosis.parallel import Claims

    claims = Claims(100, readers=2)
    front, back = [], []
    for turn in range(200):
        block = claims.take(from_back=bool(turn % 2))
        if block is None:
            break
        (back if turn % 2 else front).append(block)
    units = [unit for block in front + back for unit in block]
    assert sorted(units) == list(range(100))
    assert [len(b) for b in front] == sorted((len(b) for b in front), reverse=True)
    assert [len(b) for b in back] == sorted((len(b) for b in back), reverse=True)
    assert len(front[0]) == 25 and len(front[-1]) == 1 == len(back[-1])
    assert max(u for b in front for u in b) < min(u for b in back for u in b)
    assert claims.take(from_back=False) is None and claims.take(from_back=True) is None


def test_a_claim_lock_held_by_a_killed_worker_is_let_go():
    """The OOM killer may end a worker in the middle of a claim: the kernel lets go of its record lock."""
    import fcntl
    import threading

    from diagnosis.parallel import Claims

    claims = Claims(10, readers=2)
    pid = os.fork()
    if pid == 0:
        fcntl.lockf(claims._file.fileno(), fcntl.LOCK_EX)
        os._exit(9)  # dies holding the lock
    os.waitpid(pid, 0)
    taken = []
    claimer = threading.Thread(target=lambda: taken.append(claims.take(from_back=True)), daemon=True)
    claimer.start()
    claimer.join(timeout=10)
    assert taken == [range(8, 10)]


def test_a_worker_killed_mid_read_leaves_the_files_it_claimed_to_the_command(rules, tmp_path, monkeypatch):
    from diagnosis import parallel
    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 3)
    serial = log_diagnose(paths, rules, workers=1)
    _worker_claims_first(monkeypatch, tmp_path / "worker-claimed")
    command, original = os.getpid(), parallel.source_read
    read_here: list[Path] = []

    def read(path, *args, **kwargs):
        if os.getpid() != command:
            _worker_killed()
        read_here.append(path)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(parallel, "source_read", read)
    assert summary(log_diagnose(paths, rules, workers=2)) == summary(serial)
    assert sorted(read_here) == sorted(path for _, path in paths)  # each once: the worker's claim and the rest


def test_a_job_read_on_every_core_past_its_deadline_is_partial_and_never_joins_across_a_gap(rules, tmp_path, monkeypatch):
    """Readers stop claiming once the deadline has passed; a file whose windows were not all read ends at the first
    one left unread, as one pass ends at the deadline."""
    from tools.benchmark import console_log_write
    from diagnosis import reading
    from diagnosis.engine import log_diagnose

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)
    monkeypatch.setitem(reading.file_spans.__kwdefaults__, "window_bytes", 65536)
    path = tmp_path / "job.log"
    console_log_write(path, size_bytes=2_000_000)
    _age(path)
    late = log_diagnose([(path.name, path)], rules, workers=2, budget_s=1e-9)
    assert late.stats.get("partial") is True
    assert late.stats["lines"] < summary(log_diagnose([(path.name, path)], rules, workers=1))["lines"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_a_runs_later_windows_scanned_by_a_plan_read_as_the_whole_file(entry, rules, tmp_path, monkeypatch):
    """The pass may look at a run's later windows by a plan (scan.presence.scan_plan): literals taken as present, others
    looked for by a prefix. Both only send searches where a literal may not be. On every fixture, in windows of 2 KB
    whose later ones take every literal the first one found as present and look for every other by its first two
    characters (far more than scan_plan ever gives), the reading is the whole read's."""
    from diagnosis import reading
    from diagnosis.scan.presence import NO_PLAN, ScanPlan

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)  # read from the mapping, as a large log is
    path = tmp_path / "job.log"
    path.write_bytes(entry.path.read_bytes())
    _age(path)
    whole = source_read(path, rules, label=None)
    plans: list[ScanPlan] = []
    original = reading.presence_started
    monkeypatch.setattr(
        reading, "presence_started", lambda data, literals, plan: plans.append(plan) or original(data, literals, plan)
    )

    def widest(presence, data, left, literals):
        if presence is None:
            return NO_PLAN
        found = frozenset(presence.first_end)
        return ScanPlan(found, frozenset((literal, literal[0][:2]) for literal in literals if literal not in found))

    monkeypatch.setattr(reading, "scan_plan", widest)
    windowed = source_read(path, rules, label=None, window_bytes=2048, lookahead_bytes=32768)
    assert summary(job_diagnose([windowed], rules, top=5)) == summary(job_diagnose([whole], rules, top=5))
    assert len(plans) < 3 or plans[-1].prefixes  # a file of three windows or more looked for literals by prefixes


def _presence_of(literals: dict[str, list[int]], chunk_count: int):
    from diagnosis.scan.presence import Presence

    return Presence(
        first_end={(text, False): 1 for text in literals},
        chunks={(text, False): chunks for text, chunks in literals.items()},
        chunk_count=chunk_count,
    )


MEGATRON_LINE = b"[rank3]: iteration 10/ 100 | consumed samples: 640 | elapsed time per iteration (ms): 812.5 | lm loss 1.5\n"


def test_the_pass_leaves_out_literals_on_every_line_when_the_windows_left_repay_the_compile():
    """A Megatron log: a rank prefix and the progress line's words in every chunk, on every line."""
    from diagnosis.scan.presence import NO_PLAN, scan_plan

    window = MEGATRON_LINE * 100_000
    presence = _presence_of({"[rank3]:": [0, 1, 2], " | consumed samples:": [0, 1, 2], "Watchdog caught": [1]}, 3)
    literals = [("[rank3]:", False), (" | consumed samples:", False), ("Watchdog caught", False)]
    assert scan_plan(presence, window, 18, literals).assumed == {("[rank3]:", False), (" | consumed samples:", False)}
    assert scan_plan(presence, window, 0, literals) is NO_PLAN  # the last window: nothing left to save on


def test_the_pass_keeps_literals_in_every_chunk_that_are_too_rare_to_repay_the_compile():
    """A torchrun console log: a loss line now and then among progress bars, in every chunk but seldom."""
    from diagnosis.scan.presence import NO_PLAN, scan_plan

    window = (b"Map:  45%|####5     | 4500/10000 [00:01<00:02, 3000.00 examples/s]\r" * 200 + b"{'loss': 1.2}\n") * 1200
    presence = _presence_of({"{'loss': ": [0, 1, 2]}, 3)
    assert scan_plan(presence, window, 18, [("{'loss': ", False), ("validation loss at iteration ", False)]) is NO_PLAN


def test_a_literal_ending_in_words_on_every_line_is_looked_for_by_a_prefix_that_ends_in_rarer_ones():
    """Megatron says 'iteration' twice a line: Hyperscan would stop at each to check 'validation loss at iteration '.
    Its longest prefix whose last bytes the log lacks is looked for instead; a literal ending in rare bytes keeps its
    whole text."""
    from diagnosis.scan.presence import scan_plan

    window = MEGATRON_LINE * 100_000
    presence = _presence_of({"[rank3]:": [0, 1, 2]}, 3)
    literals = [("[rank3]:", False), ("validation loss at iteration ", False), ("Watchdog caught collective", False)]
    plan = scan_plan(presence, window, 18, literals)
    assert plan.prefixes == {(("validation loss at iteration ", False), "validation loss at ite")}


def test_a_literal_looked_for_by_a_prefix_is_present_only_where_the_text_holds_it():
    """The pass's map says where the prefix ends: the scanner confirms the literal itself before calling it present."""
    from concurrent.futures import Future

    from diagnosis.scan.presence import ScanPlan, literals_present
    from diagnosis.scan.scanner import TextScanner

    text = "[rank0]: validation loss at itemised step\n" * 4
    literals = [("validation loss at iteration ", False), ("[rank0]:", False)]
    plan = ScanPlan(prefixes=frozenset({(("validation loss at iteration ", False), "validation loss at ite")}))
    presence = literals_present(text, literals, plan=plan)
    assert ("validation loss at iteration ", False) in presence  # the prefix occurs
    passed: Future = Future()
    passed.set_result(presence)
    scanner = TextScanner(text, literals, encoded=text.encode(), presence=passed)
    assert scanner.present_among(["validation loss at iteration ", "[rank0]:"]) == {"[rank0]:"}
    assert list(scanner.lines_with("validation loss at iteration ")) == []


def test_a_set_fact_reads_the_same_first_lines_of_a_file_however_it_is_cut(rules, tmp_path, monkeypatch):
    """Set and max facts read at most MAX_FACT_LINES matching lines of a file, counted from its start: a whole read, a
    read in windows and runs read apart and joined all stop at the same line (windows used to read that many each)."""
    from diagnosis import reading
    from diagnosis.readers.facts import MAX_FACT_LINES

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)
    early = "".join(
        f"node-a:4{n:03d}:4{n:03d} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" for n in range(MAX_FACT_LINES)
    )
    late = "node-z:4999:4999 [7] NCCL INFO Channel 00/0 : 7[7] -> 0[0] via P2P/CUMEM\n" * 50
    path = tmp_path / "job.log"
    path.write_text(early + late)
    _age(path)
    whole, windowed, joined = _read_three_ways(path, rules, window=8192, lookahead=4096)
    assert whole["facts"]["hosts"] == ["node-a"] and whole["facts"]["p2p_channels"] == ["P2P/IPC"]
    assert windowed == whole
    assert joined == whole


def _read_three_ways(path: Path, rules, *, window: int, lookahead: int) -> tuple[dict, dict, dict]:
    """A file read whole, in windows, and as three runs of windows read apart and joined (as the command line does)."""

    whole = source_read(path, rules, label=None)
    windowed = source_read(path, rules, label=None, window_bytes=window, lookahead_bytes=lookahead)
    joined = _runs_joined(path, rules, window=window, lookahead=lookahead)
    return tuple(summary(job_diagnose([r], rules, top=5)) for r in (whole, windowed, joined))


def test_srun_labels_name_ranks_in_every_window_of_a_file_that_starts_with_them(rules, tmp_path, monkeypatch):
    """srun --label is told by a file's start; a later window that starts in a stretch without labels (a traceback
    printed unlabelled) still counts the labelled lines after it, in one pass and in runs read apart (the last of three
    runs starts in the traceback)."""
    from diagnosis import reading

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)
    labelled = "".join(f"{rank}: [I ProcessGroupNCCL.cpp:1000] [Rank {rank}] step {n}\n" for n in range(500) for rank in range(4))
    traceback = "".join(f'  File "/opt/train.py", line {n}, in step\n    loss.backward()\n' for n in range(2000))
    late = "".join(f"{rank}: [I ProcessGroupNCCL.cpp:1000] [Rank {rank}] step 41\n" for rank in (4, 5, 6, 7))
    path = tmp_path / "slurm-1234.out"
    path.write_text(labelled + traceback + late)
    _age(path)
    whole, windowed, joined = _read_three_ways(path, rules, window=16384, lookahead=1024)
    assert whole["facts"]["ranks"] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert windowed == whole
    assert joined == whole


def test_a_log_replaced_on_disk_while_it_is_read_is_read_from_the_file_first_opened(rules, tmp_path, monkeypatch):
    """logrotate renames a new file onto the path between the mapping that cuts the windows and their reads: every
    window comes from the file that was opened, not half from each."""
    from diagnosis import reading

    fixture = (REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_bytes()
    data = b"step 1/2000 loss 1.23\n" * (3 * 1024 * 1024 // 22) + fixture
    path = tmp_path / "job.log"
    path.write_bytes(data)
    _age(path)
    newer = tmp_path / "job.log.new"
    newer.write_bytes(b"x" * len(data))
    original = reading._mapped

    @contextlib.contextmanager
    def mapped_then_rotated(file, **kwargs):
        with original(file, **kwargs) as mapping:
            os.replace(newer, path)
            yield mapping

    monkeypatch.setattr(reading, "REPAIR_LIMIT", 0)
    monkeypatch.setattr(reading, "_mapped", mapped_then_rotated)
    rotated = source_read(path, rules, label=None, window_bytes=512 * 1024, lookahead_bytes=64 * 1024)
    assert summary(job_diagnose([rotated], rules, top=5)) == summary(
        job_diagnose([source_read(data, rules, label=None)], rules, top=5)
    )


def test_a_file_whose_middle_window_was_left_unread_is_joined_up_to_it_and_partial(rules):
    """Runs are joined only where each starts where the last stopped: a gap would shift every later line number."""
    from diagnosis.parallel import Job, _joined
    from diagnosis.readers.base import FileReading

    job = Job(rules, [Path("a.log")], [None], [(0, 0), (0, 1), (0, 2)], {}, None, 2)
    first, last = FileReading(lines=5, bytes=50), FileReading(lines=7, bytes=70)
    (joined,) = _joined(job, [(2, 3, last), (0, 1, first)])
    assert (joined.lines, joined.bytes, joined.partial) == (5, 50, True)


def test_a_command_that_cannot_fork_a_worker_reads_the_job_itself(rules, tmp_path, monkeypatch):
    """A login node at its process limit (EAGAIN): the answer comes from the command alone, not a traceback."""
    import errno

    from diagnosis import parallel
    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 4)
    serial = log_diagnose(paths, rules, workers=1)
    monkeypatch.setattr(parallel.os, "fork", lambda: (_ for _ in ()).throw(OSError(errno.EAGAIN, "fork refused")))
    assert summary(log_diagnose(paths, rules, workers=4)) == summary(serial)


def test_a_command_without_a_writable_temp_dir_reads_the_job_itself(rules, tmp_path, monkeypatch):
    import errno
    import tempfile

    from diagnosis.engine import log_diagnose

    paths = _job_files(tmp_path, 4)
    serial = log_diagnose(paths, rules, workers=1)

    def no_temp_file(*args, **kwargs):
        raise OSError(errno.EROFS, "read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_temp_file)
    assert summary(log_diagnose(paths, rules, workers=2)) == summary(serial)


def test_the_workers_end_with_a_command_killed_mid_read(tmp_path):
    """A command killed by hand, by `timeout` or by a job's time limit takes its workers with it (Linux's parent-death
    signal), rather than leave them reading the rest of the job on a shared login node."""
    import subprocess
    import sys

    paths = [str(path) for _, path in _job_files(tmp_path, 4)]
    noted = tmp_path / "worker.pid"
    script = f"""
import os, sys, time
sys.path.insert(0, {str(REPO)!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from pathlib import Path
from django.conf import settings
from tools.corpus import content_rules
from diagnosis import parallel
from diagnosis.engine import log_diagnose

rules = content_rules(settings.CONTENT_DIR)
command = os.getpid()

def stuck(path, *args, **kwargs):
    if os.getpid() != command:
        Path({str(noted)!r}).write_text(str(os.getpid()))
    time.sleep(120)

parallel.source_read = stuck
log_diagnose([(Path(p).name, Path(p)) for p in {paths!r}], rules, workers=2)
"""
    command = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        worker = wait_for(lambda: noted.exists() and noted.read_text() and int(noted.read_text()), seconds=60)
        assert worker, "the worker started reading"
    finally:
        command.kill()
        command.wait()
    assert wait_for(lambda: not _running(worker), seconds=10), f"worker {worker} outlived its command"


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie waits for an init that may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
