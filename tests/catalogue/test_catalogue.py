"""The message catalogue: rebuilt byte for byte from the committed harvest, every template matching what it prints,
stable ids, and realistic lines (prefixed, wrapped, fragments) recognised with their facts."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
import yaml

from diagnosis.catalogue import FRAGMENT_MIN, Catalogue, example_line

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "catalogue"))

import build  # noqa: E402
from common import HARVEST_DIR, MESSAGES_DIR, harvest_read  # noqa: E402

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

PASTES = ROOT / "tests" / "fixtures" / "pastes"
# Lines a catalogued program printed: NCCL's own lines, c10d's C++ log lines, torchrun's logger names.
CATALOGUED_LINE = re.compile(
    r"NCCL WARN|NCCL INFO|ProcessGroupNCCL|ProcessGroupGloo|torch\.distributed\.elastic|torch/distributed/elastic|TCPStore"
    r"|\[[EW] [\w.]+\.cpp:\d+\]|\]:\[[EW]\d{3,4} |^[EW]\d{4} \d\d:\d\d:\d\d"
)
# Stack frames and traceback source lines name these programs but are no message of theirs (the stacks reader's):
# c10's `frame #3:`, Python's `File "…"` and source lines, the traceback torch's elastic error file keeps in
# `"py_callstack": "Traceback …` (error_handler.py: traceback.format_exc()), and glibc's backtrace_symbols frames
# (`/…/libtorch_cuda.so(+0xe0845a) [0x7f9a817d745a] c10d::ProcessGroupNCCL::ncclCommWatchdog()`, behind any prefix).
STACK_LINE = re.compile(
    r"^\s*(frame #\d+:|File \"|return |raise |\w+ = |\"py_callstack\": )|\.so(\.\d+)*\([\w.]*\+0x[0-9a-f]+\) \[0x[0-9a-f]+\]"
)
# A catalogued program's own line prefix: glog's (c10d, and torchrun from 2.4: `E0622 19:47:17.565751 1403… api.py:826]`),
# c10d's older `[E ProcessGroupNCCL.cpp:475]`, Python logging's default `ERROR:torch.distributed.elastic….error_handler:`.
LINE_PREFIX = re.compile(
    r"[EWIF]\d{3,4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\]"
    r"|\[[EWIF]\d{0,4}(?: [\d:.]+)? [\w.]+:\d+\]"
    r"|\b(?:ERROR|WARNING|INFO|DEBUG|CRITICAL):[\w.]+:"
)
COVERAGE_FLOOR = 0.98  # measured 99.4% (702/706) at the commit that set it (issue 31); the misses are listed by the test


def load_yaml(text: str) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    """What build.py makes of the committed harvest, built once for the tests that compare with it."""
    return build.build_all()


@pytest.fixture(scope="module")
def committed() -> dict[str, dict]:
    """Each committed messages file, parsed once for the tests that read its entries."""
    return {path.stem: load_yaml(path.read_text(encoding="utf-8")) for path in sorted(MESSAGES_DIR.glob("*.yaml"))}


def hits_by_id(catalogue: Catalogue, line: str) -> dict[str, object]:
    return {hit.id: hit for hit in catalogue.match(line)}


# --- the build ------------------------------------------------------------------------------------------------------


def test_build_reproduces_the_committed_catalogue_byte_for_byte(built: dict[str, str]) -> None:
    assert sorted(built) == sorted(p.stem for p in MESSAGES_DIR.glob("*.yaml"))
    for program, text in built.items():
        assert text == (MESSAGES_DIR / f"{program}.yaml").read_text(encoding="utf-8"), (
            f"{program}.yaml is not what build.py makes"
        )


def test_ids_do_not_depend_on_line_numbers(built: dict[str, str]) -> None:
    """An edit that moves a message in its file must not rename its entry. build_all built nccl from these rows."""
    rows = harvest_read(HARVEST_DIR / "nccl.tsv")
    moved = [dataclasses.replace(row, line=row.line + 1000) for row in rows]
    ids = [e["id"] for e in load_yaml(built["nccl"])["entries"]]
    assert ids == [e["id"] for e in load_yaml(build.build_program("nccl", moved))["entries"]]


def test_ids_are_unique_and_well_formed(committed: dict[str, dict]) -> None:
    ids = []
    for document in committed.values():
        ids.extend(e["id"] for e in document["entries"])
    assert len(ids) == len(set(ids))
    bad = [i for i in ids if not re.fullmatch(r"[a-z0-9]+(\.[a-z0-9_]+)+\.v\d+", i)]
    assert not bad, bad[:10]


def test_entries_use_only_documented_meanings_and_types(committed: dict[str, dict]) -> None:
    doc = (ROOT / "content" / "catalogue" / "FORMAT.md").read_text(encoding="utf-8")
    for document in committed.values():
        for entry in document["entries"]:
            assert f"`{entry['meaning']}`" in doc, f"{entry['id']}: meaning {entry['meaning']} not in FORMAT.md"
            for f in entry.get("fields", ()):
                assert f"`{f['type']}`" in doc, f"{entry['id']}: field type {f['type']} not in FORMAT.md"


# --- every template ---------------------------------------------------------------------------------------------------


def test_every_template_matches_its_own_message_with_typical_values(catalogue: Catalogue) -> None:
    missed = [(e.id, example_line(e)) for e in catalogue.entries.values() if e.id not in hits_by_id(catalogue, example_line(e))]
    assert not missed, missed[:10]


def test_a_template_is_found_behind_any_prefix(catalogue: Catalogue) -> None:
    entry = next(e for e in catalogue.entries.values() if e.program == "nccl" and e.severity == "WARN")
    line = "[rank3]:[E1128 10:00:00.123 ProcessGroupNCCL.cpp:1234] node7:123:456 [0] misc/socket.cc:1 NCCL WARN " + example_line(
        entry
    )
    assert entry.id in hits_by_id(catalogue, line)


def test_matching_without_hyperscan_gives_the_same_hits(catalogue: Catalogue) -> None:
    plain = Catalogue.load(programs=["nccl"], use_hyperscan=False)
    for entry in list(catalogue.entries.values())[:: max(1, len(catalogue.entries) // 300)]:
        if entry.program != "nccl":
            continue
        line = "host:1:2 [0] NCCL WARN " + example_line(entry)
        assert [h.id for h in plain.match(line)] == [h.id for h in catalogue.match(line) if h.program == "nccl"]


# --- realistic lines, per meaning --------------------------------------------------------------------------------------


def test_nccl_socket_connect_warning_with_its_prefix(catalogue: Catalogue) -> None:
    line = (
        "gpu-node-3:48211:48379 [5] misc/socket.cc:484 NCCL WARN socketStartConnect: "
        "Connect to 10.10.2.17<45123> failed : Software caused connection abort"
    )
    hits = [h for h in catalogue.match(line) if h.meaning == "socket.connect_failed"]
    assert hits
    newest = max(hits, key=lambda h: build.release_key(h.last))
    assert newest.fields["to"] == "10.10.2.17<45123>"
    assert newest.fields["failed"] == "Software caused connection abort"


def test_nccl_ib_completion_error_gives_typed_fields(catalogue: Catalogue) -> None:
    line = (
        "node2:1:2 [1] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<51234> "
        "with error 12, opcode 0, len 0, vendor err 129"
    )
    hit = next(h for h in catalogue.match(line) if h.meaning == "ib.completion_error")
    assert hit.fields["error"] == 12 and hit.fields["err"] == 129
    assert (hit.first, hit.last) == ("2.10.3", "2.17.1")


def test_nccl_version_banner_gives_the_version(catalogue: Catalogue) -> None:
    hit = next(h for h in catalogue.match("node1:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1") if h.meaning == "nccl.version")
    assert list(hit.fields.values())[:3] == [2, 18, 1]


def test_nccl_ring_list_built_in_a_loop_is_recognised(catalogue: Catalogue) -> None:
    """NCCL prints each ring with a sprintf'd head and the ranks appended one by one."""
    hits = catalogue.match("z-pc:909608:910337 [0] NCCL INFO Channel 00/02 :    0   1")
    assert any(h.program == "nccl" and h.meaning == "nccl.init" and h.fragment is None for h in hits)


def test_nccl_error_propagation_line(catalogue: Catalogue) -> None:
    hits = catalogue.match("n122-246-085:12253:12399 [7] NCCL INFO bootstrap.cc:270 -> 2")
    assert any(h.program == "nccl" and list(h.fields.values()) == ["bootstrap.cc", 270, 2] for h in hits)


def test_a_hard_wrapped_line_rejoined_with_a_space_matches(catalogue: Catalogue) -> None:
    message = "NET/IB : Got completion from peer 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    first_half, second_half = message[:45], message[45:]
    joined = f"node2:1:2 [1] NCCL WARN {first_half}\n   {second_half}".replace("\n", " ")
    assert any(h.meaning == "ib.completion_error" and h.fragment is None for h in catalogue.match(joined))


def test_a_fragment_that_starts_mid_message_matches_by_its_tail(catalogue: Catalogue) -> None:
    tail = "t completion from peer 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    hits = [h for h in catalogue.match("    " + tail) if h.meaning == "ib.completion_error"]
    assert hits and all(h.fragment == "tail" for h in hits)
    assert any(h.fields.get("err") == 129 for h in hits)
    # fewer than FRAGMENT_MIN characters of the literal run: not enough to tell
    short = "from peer"[-(FRAGMENT_MIN - 12) :] + " 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    assert not [h for h in catalogue.match(short) if h.meaning == "ib.completion_error"]


def test_a_fragment_must_start_inside_the_template(catalogue: Catalogue) -> None:
    line = "something else entirely Got completion from peer 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    assert not [h for h in catalogue.match(line) if h.fragment == "tail" and h.meaning == "ib.completion_error"]


def test_a_line_cut_by_a_hard_wrap_matches_by_its_head(catalogue: Catalogue) -> None:
    """q030: a paste hard-wrapped at 80 columns cut the watchdog's verdict."""
    hits = [
        h
        for h in catalogue.match("[E ProcessGroupNCCL.cpp:494] To avoid data inconsistency, we are taking the")
        if h.meaning == "watchdog.exception"
    ]
    assert hits and all(h.fragment == "head" for h in hits)
    assert not [
        h for h in catalogue.match("[E ProcessGroupNCCL.cpp:494] To avoid data incon") if h.meaning == "watchdog.exception"
    ]


def test_releases_printing_intersects_entries(catalogue: Catalogue) -> None:
    line = "NET/IB : Got completion from peer 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    ib = next(h for h in catalogue.match(line) if h.meaning == "ib.completion_error")
    banner = next(h for h in catalogue.match("NCCL INFO NCCL version 2.12.12+cuda11.6") if h.meaning == "nccl.version")
    assert catalogue.releases_printing([ib.id, banner.id]) == (ib.first, ib.last)
    later = next(
        e for e in catalogue.entries.values() if e.program == "nccl" and build.release_key(e.first) > build.release_key(ib.last)
    )
    assert catalogue.releases_printing([ib.id, later.id]) is None


# --- coverage of real pastes ---------------------------------------------------------------------------------------------


def too_little_message(line: str) -> bool:
    """Fewer than FRAGMENT_MIN characters after the program's prefix: no template can be told by so little. A program
    prints such lines (run.py's OMP_NUM_THREADS warning opens with a newline; torch 1.10's error handler logs the
    error file's JSON, whose first line is `{`), and so does a paste that cut a line short."""
    prefixes = list(LINE_PREFIX.finditer(line))
    return bool(prefixes) and len(line[prefixes[-1].end() :].strip()) < FRAGMENT_MIN


def test_coverage_of_catalogued_lines_in_real_pastes(catalogue: Catalogue) -> None:
    total, missed = 0, []
    for path in sorted(PASTES.glob("*/*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not CATALOGUED_LINE.search(line) or STACK_LINE.search(line) or too_little_message(line):
                continue
            total += 1
            if not catalogue.match(line):
                missed.append(f"{path.parent.name}/{path.name}: {line[:160]}")
    share = 1 - len(missed) / total
    print(f"\ncatalogue coverage of pastes: {total - len(missed)}/{total} = {share:.1%}; unrecognised:")
    print("\n".join(missed))
    assert share >= COVERAGE_FLOOR


# --- NCCL's net plugin (HPC-X) -------------------------------------------------------------------------------------------


def test_the_net_plugins_lines_are_its_own_program_with_its_own_releases(catalogue: Catalogue) -> None:
    """HPC-X's libnccl-net.so logs through NCCL's logger: NCCL's prefix, the plugin's wording and release numbers."""
    for line in (
        "05-06-76-200:7839:7911 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so",
        "05-06-76-200:7839:7911 [0] NCCL INFO P2P plugin IBext",
    ):
        hits = catalogue.match(line)
        assert {h.program for h in hits} == {"ncclrdmasharp"}
        assert all(h.first == "2.0.1" and h.fragment is None for h in hits)


# --- PyTorch ------------------------------------------------------------------------------------------------------------


def test_c10d_watchdog_timeout_wording_of_2_1_and_of_2_5(catalogue: Catalogue) -> None:
    """The verdict line is printed by every release; the line after it changed wording, which dates the log."""
    verdict = (
        "[rank0]:[E1123 00:52:57.664949121 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1516, OpType=ALLREDUCE, NumelIn=25427968, NumelOut=25427968, Timeout(ms)=600000) ran for 600001 "
        "milliseconds before timing out."
    )
    verdicts = [h for h in catalogue.match(verdict) if h.meaning == "watchdog.timeout"]
    assert verdicts and {h.first for h in verdicts} == {"1.13.1"}
    old = "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 315, last enqueued NCCL work: 315, last completed NCCL work: 314."
    new = (
        "[rank0]:[E1123 00:52:57.665427695 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) "
        "detected by watchdog at work: 1516, last enqueued NCCL work: 1516, last completed NCCL work: 1515."
    )
    old_hit = next(h for h in catalogue.match(old) if h.meaning == "watchdog.timeout")
    new_hit = next(h for h in catalogue.match(new) if h.meaning == "watchdog.exception")
    assert build.release_key(old_hit.first) <= (2, 3, 1) and build.release_key(new_hit.first) >= (2, 5, 1)
    assert catalogue.releases_printing([old_hit.id, new_hit.id]) == ("2.5.1", "2.5.1")


def test_cuda_ipc_producer_warning_is_recognised_in_the_c10_logging_formats_of_old_and_new_releases(
    catalogue: Catalogue,
) -> None:
    """torch/csrc/CudaIPCTypes.cpp's LOG(WARNING): printed when a process that shared CUDA tensors dies first."""
    message = "Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]"
    for line in (f"[W CudaIPCTypes.cpp:15] {message}", f"[rank1]:[W924 19:01:01.260102563 CudaIPCTypes.cpp:16] {message}"):
        hits = [h for h in catalogue.match(line) if h.program == "torch" and h.fragment is None]
        assert hits and all(catalogue.entries[h.id].file.endswith("#torch/csrc/CudaIPCTypes.cpp") for h in hits)
        assert min(build.release_key(h.first) for h in hits) == (1, 13, 1)


def test_gloo_recv_timeout(catalogue: Catalogue) -> None:
    line = "RuntimeError: [/opt/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete"
    hits = [h for h in catalogue.match(line) if h.meaning == "gloo.timeout"]
    assert {h.program for h in hits} == {"torch"} and len(hits) >= 2


def test_torchrun_child_failure_gives_exitcode_and_rank(catalogue: Catalogue) -> None:
    line = (
        "E0629 00:06:24.298000 140229302286144 torch/distributed/elastic/multiprocessing/api.py:826] "
        "failed (exitcode: -9) local_rank: 2 (pid: 29736) of binary: /opt/conda/bin/python3.10"
    )
    hit = next(h for h in catalogue.match(line) if h.meaning == "process.failed")
    assert hit.fields["exitcode"] == -9 and hit.fields["local_rank"] == 2 and hit.fields["pid"] == 29736


def test_a_torchrun_line_cut_inside_a_short_literal_matches_by_its_head(catalogue: Catalogue) -> None:
    """u018: the paste cut the line after "of binary", inside the template's last, 12-character literal run."""
    line = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 439853) of binary"
    hits = [h for h in catalogue.match(line) if h.meaning == "process.failed"]
    assert hits and all(h.fragment == "head" and h.fields["pid"] == 439853 for h in hits)
    assert not [h for h in catalogue.match("failed (exitcode: 1) loc") if h.meaning == "process.failed"]


# --- Open MPI -----------------------------------------------------------------------------------------------------------


def test_mpirun_process_killed_by_signal(catalogue: Catalogue) -> None:
    line = "mpirun noticed that process rank 7 with PID 40210 on node node17 exited on signal 9 (Killed)."
    hit = next(h for h in catalogue.match(line) if h.program == "openmpi" and h.meaning == "process.killed")
    assert hit.fields["rank"] == 7 and hit.fields["PID"] == 40210 and hit.fields["signal"] == 9
    assert hit.fields["value"] == "mpirun"


def test_a_help_text_is_matched_line_by_line(catalogue: Catalogue) -> None:
    """opal_show_help prints a section as its file holds it; each line of it is recognised, with its part."""
    daemon = [h for h in catalogue.match("ORTE has lost communication with a remote daemon.") if h.meaning == "mpi.daemon_lost"]
    assert daemon and daemon[0].part == 0
    later = [h for h in catalogue.match("therefore will terminate the job.") if h.id == daemon[0].id]
    assert later and later[0].part > 0


# --- loading ------------------------------------------------------------------------------------------------------------


def test_a_cached_load_matches_as_the_files_do(catalogue: Catalogue, tmp_path: Path) -> None:
    line = (
        "node2:1:2 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.9<51234> with error 12, opcode 0, len 0, vendor err 129"
    )
    first = Catalogue.load(programs=["nccl"], cache_dir=tmp_path)
    assert sorted(p.suffix for p in tmp_path.iterdir()) in ([".hs", ".json"], [".json"])
    again = Catalogue.load(programs=["nccl"], cache_dir=tmp_path)
    assert again.match(line) == first.match(line) == [h for h in catalogue.match(line) if h.program == "nccl"]
    for path in tmp_path.iterdir():  # a damaged cache is read from the files again
        path.write_bytes(b"\0garbage")
    assert Catalogue.load(programs=["nccl"], cache_dir=tmp_path).match(line) == first.match(line)
