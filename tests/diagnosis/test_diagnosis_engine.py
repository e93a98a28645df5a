"""The diagnosis engine, without Django: text handling, facts, the rank verdict, scoring and evidence."""

from pathlib import Path

import pytest

from diagnosis.engine import confidence_from, log_diagnose
from diagnosis.scan import literals as scan_literals
from diagnosis.scan import presence as scan_presence
from diagnosis.readers.facts import fact_literals, facts_extract, facts_with_rule_values, rank_facts, rule_values_read
from diagnosis.scan.literals import required_literal_groups
from diagnosis.scan.scanner import TextScanner
from diagnosis.rules import rules_compile
from diagnosis.text import LineLocator, log_decode

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"

CASES = [
    {
        "slug": "fsdp-case",
        "signatures": [
            {
                "id": "watchdog-allgather",
                "description": "all-gather timed out",
                "weight": 7,
                "anchor": True,
                "pattern": r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=\d+, OpType=_ALLGATHER_BASE",
            },
            {"id": "fsdp-marker", "description": "FSDP script", "weight": 2, "pattern": r"train_fsdp\.py"},
        ],
    },
    {
        "slug": "barrier-case",
        "signatures": [
            {
                "id": "barrier-timeout",
                "description": "first barrier timed out",
                "weight": 7,
                "anchor": True,
                "pattern": r"OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout\(ms\)=(?P<barrier_timeout_ms>\d+)",
            },
            {"id": "finished", "description": "the run finished", "weight": -9, "pattern": r"train_runtime"},
        ],
    },
    {
        "slug": "weak-case",
        "signatures": [
            {"id": "mentions-nccl", "description": "NCCL printed something", "weight": 3, "pattern": r"NCCL INFO"},
        ],
    },
]


@pytest.fixture(scope="module")
def signatures():
    return rules_compile(CASES)


def read(name: str) -> bytes:
    return (LOGS / name).read_bytes()


def test_decoding_strips_ansi_and_crlf_and_tolerates_bad_bytes():
    text = log_decode(b"\x1b[31mred\x1b[0m line\r\nnext caf\xe9\r\n")
    assert text == "red line\nnext caf\ufffd\n"


def test_progress_bar_carriage_returns_do_not_add_lines():
    locator = LineLocator(log_decode(b"a\n 10%|#\r 50%|#####\r100%|##########\nlast\n"))
    assert locator.line_count() == 3
    assert locator.line_number(locator.text.index("last")) == 3


def test_evidence_points_at_the_line_numbers_of_the_original_file(signatures):
    diagnosis = log_diagnose([("log", read("fsdp_rank2_behind_torch25.log"))], signatures)
    fsdp = next(m for m in diagnosis.matches if m.slug == "fsdp-case")
    original = read("fsdp_rank2_behind_torch25.log").split(b"\r\n")
    for evidence in fsdp.evidence:
        assert evidence.text.encode("utf-8", "replace").strip() in original[evidence.line - 1].replace(b"\x1b[32m", b"").replace(
            b"\x1b[0m", b""
        )


def _text_facts(text: str):
    """Every fact one text gives, as a file of that text is read: the fact rules and the line-budgeted rules."""
    scanner = TextScanner(text, fact_literals())
    facts, ranks = facts_extract(scanner, LineLocator(text))
    return facts_with_rule_values(facts, rule_values_read(scanner, 0, len(text), {})), ranks


def test_watchdog_facts_are_read_from_torch_2_5_wording(signatures):
    facts, ranks = _text_facts(log_decode(read("fsdp_rank2_behind_torch25.log")))
    facts.update(rank_facts(ranks))
    assert facts["op_type"] == ["_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE"]
    assert facts["timeout_ms"] == 600000
    assert facts["ran_for_ms"] == 600801
    assert facts["launcher"] == "torchrun"
    assert facts["world_size"] == 4
    assert facts["interfaces"] == ["eth0"]
    assert ranks[0].last_completed == 9740


def test_verdict_names_the_rank_that_is_behind(signatures):
    diagnosis = log_diagnose([("log", read("fsdp_rank2_behind_torch25.log"))], signatures)
    assert diagnosis.verdict.behind == [2]
    assert "rank 2 had made the least progress" in diagnosis.verdict.summary


def test_verdict_names_the_rank_that_never_timed_out(signatures):
    diagnosis = log_diagnose([("log", read("barrier_rank0_silent_torch23.log"))], signatures)
    assert diagnosis.verdict.silent == [0]
    assert "rank 0 of 4 never reported a timeout" in diagnosis.verdict.summary
    assert diagnosis.facts["launcher"] == "srun"


def test_verdict_flags_ranks_running_different_collectives_at_the_same_seqnum(signatures):
    diagnosis = log_diagnose([("log", read("desync_ops_differ_torch21.log"))], signatures)
    assert diagnosis.verdict.disagree is True
    assert "different collectives at the same or adjacent SeqNum" in diagnosis.verdict.summary


def test_named_groups_become_facts(signatures):
    diagnosis = log_diagnose([("log", read("barrier_rank0_silent_torch23.log"))], signatures)
    assert diagnosis.facts["barrier_timeout_ms"] == "600000"


def test_a_signature_counts_once_however_many_lines_match(signatures):
    diagnosis = log_diagnose([("log", read("barrier_rank0_silent_torch23.log"))], signatures)
    barrier = next(m for m in diagnosis.matches if m.slug == "barrier-case")
    assert barrier.score == 7
    assert barrier.signals[0]["count"] == 3


def test_case_without_an_anchor_never_becomes_confident(signatures):
    diagnosis = log_diagnose([("log", read("barrier_rank0_silent_torch23.log"))], signatures)
    weak = next(m for m in diagnosis.matches if m.slug == "weak-case")
    assert weak.confidence <= 0.45


def test_negative_signal_argues_against_a_case(signatures):
    log = read("barrier_rank0_silent_torch23.log") + b"{'train_runtime': 5012.3, 'train_loss': 1.02}\n"
    diagnosis = log_diagnose([("log", log)], signatures)
    assert "barrier-case" not in [m.slug for m in diagnosis.confident]


def test_text_without_any_signal_matches_nothing(signatures):
    oom = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB\n"
    diagnosis = log_diagnose([("log", oom)], signatures)
    assert diagnosis.matches == [] and diagnosis.verdict is None


def test_several_files_are_one_job_and_evidence_names_the_file(signatures):
    sources = [("rank1.log", read("barrier_rank0_silent_torch23.log")), ("rank0.log", b"still compiling\n")]
    diagnosis = log_diagnose(sources, signatures)
    barrier = next(m for m in diagnosis.matches if m.slug == "barrier-case")
    assert {e.source for e in barrier.evidence} == {"rank1.log"}
    assert diagnosis.stats["files"] == 2


def test_evidence_span_covers_the_matched_text(signatures):
    diagnosis = log_diagnose([("log", read("barrier_rank0_silent_torch23.log"))], signatures)
    evidence = next(m for m in diagnosis.matches if m.slug == "barrier-case").evidence[0]
    start, end = evidence.span
    assert evidence.text[start:end].startswith("OpType=ALLREDUCE, NumelIn=1")


def test_confidence_is_one_half_at_the_calibration_score():
    assert confidence_from(6, anchored=True) == 0.5
    assert confidence_from(12, anchored=True) == 0.75
    assert confidence_from(-3, anchored=True) == 0.0


def test_a_five_megabyte_line_without_newline_is_diagnosed(signatures):
    diagnosis = log_diagnose([("log", b"A" * 5_000_000)], signatures)
    assert diagnosis.matches == [] and diagnosis.stats["lines"] == 1


def test_required_literal_groups_cover_every_alternative():
    groups = required_literal_groups(r"NCCL INFO Channel \d+/\d+ : .* via (?:SHM|P2P/IPC)")
    assert groups[0] == ("NCCL INFO Channel ",)
    assert ("P2P/IPC", "SHM") in groups


def test_results_are_the_same_without_the_hyperscan_prefilter(signatures, monkeypatch):
    logs = [read(name) for name in ("fsdp_rank2_behind_torch25.log", "barrier_rank0_silent_torch23.log")]
    with_prefilter = [log_diagnose([("log", data)], signatures) for data in logs]
    monkeypatch.setattr(scan_literals, "hyperscan", None)
    scan_literals._literal_database_compile.cache_clear()
    without = [log_diagnose([("log", data)], signatures) for data in logs]
    scan_literals._literal_database_compile.cache_clear()
    for a, b in zip(with_prefilter, without):
        assert [(m.slug, m.score, [e.line for e in m.evidence]) for m in a.matches] == [
            (m.slug, m.score, [e.line for e in m.evidence]) for m in b.matches
        ]
        assert a.facts == b.facts


def test_lines_are_found_in_every_chunk_that_holds_them_and_across_chunk_boundaries(monkeypatch):
    monkeypatch.setattr(scan_presence, "CHUNK_BYTES", 64)
    filler = "iteration 10 | lm loss: 2.5 |\n" * 40
    text = "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE\n" + filler
    text += "x" * (2 * 64 - len(text) % 64 - 3) + "nranks 16\n" + filler + "last nranks 32"  # straddles a boundary
    literal = ("nranks ", False)
    with_map = list(TextScanner(text, [literal]).lines_with("nranks "))
    assert with_map == list(TextScanner(text, [literal], use_hyperscan=False).lines_with("nranks "))
    assert [text[a:b].split("nranks ")[1][:2] for a, b in with_map] == ["8 ", "16", "32"]


def test_a_text_scanned_in_threads_gives_the_presence_map_of_one_thread(monkeypatch):
    """Each core scans its own run of chunks; first occurrences and chunk lists must read as one pass's."""
    monkeypatch.setattr(scan_presence, "CHUNK_BYTES", 64)
    lines = ["iteration %d | lm loss: 2.5 |" % i for i in range(400)]
    lines[3] = "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE"
    lines[250] = "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)"
    lines[399] = "last nranks 32"
    data = ("\n".join(lines) + "\n").encode()
    literals = [("nranks ", False), ("Watchdog caught", False), ("OpType=", False), ("lm loss", False), ("absent", False)]
    monkeypatch.setattr(scan_presence.os, "cpu_count", lambda: 4)
    threaded = scan_presence.literals_present("", literals, encoded=data)
    monkeypatch.setattr(scan_presence.os, "cpu_count", lambda: 1)
    single = scan_presence.literals_present("", literals, encoded=data)
    assert len(data) // 64 >= 4 * scan_presence.MIN_CHUNKS_A_THREAD  # four runs of chunks, so the merge is exercised
    assert threaded == single
    assert threaded.first_end[("Watchdog caught", False)] == data.index(b"Watchdog caught") + len("Watchdog caught")
    assert ("absent", False) not in threaded.first_end


def test_the_presence_pass_counts_the_line_breaks_of_each_chunk_in_every_thread(monkeypatch):
    monkeypatch.setattr(scan_presence, "CHUNK_BYTES", 64)
    monkeypatch.setattr(scan_presence, "BACKGROUND_SCAN_BYTES", 0)
    monkeypatch.setattr(scan_presence.os, "cpu_count", lambda: 4)
    data = "".join(f"[rank{i % 8}]: iteration {i} | lm loss: 2.5\n" if i % 3 else "\n" for i in range(300)).encode()
    found = scan_presence.literals_present("", [("lm loss", False)], encoded=data)
    assert found.newlines == [data[at : at + 64].count(b"\n") for at in range(0, len(data), 64)]


def test_a_process_forked_after_a_background_scan_can_scan_in_the_background_too(monkeypatch):
    """The engine forks a worker per file of a job; a scan the parent ran beside its decode must not leave the child
    a background pass that never starts (a pool inherited through fork believes its thread is still there)."""
    import os
    import signal

    monkeypatch.setattr(scan_presence, "BACKGROUND_SCAN_BYTES", 0)
    data = b"host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE\n" * 100
    literals = [("nranks ", False)]
    assert scan_presence.presence_started(data, literals).result(timeout=10).first_end
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its own background pass finished, then leave at once
        try:
            found = scan_presence.presence_started(data, literals).result(timeout=10).first_end
            os.write(write_end, b"ok" if found else b"empty")
        except BaseException:
            os.write(write_end, b"hung")
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        assert os.read(read_end, 16) == b"ok"
    finally:
        os.close(read_end)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_the_last_match_is_found_from_the_last_chunk_holding_its_literal(monkeypatch):
    import re

    monkeypatch.setattr(scan_presence, "CHUNK_BYTES", 64)
    text = (
        "> compiling and loading fused kernels ...\n"
        + "iteration 1 | loss 2.0\n" * 30
        + "> compiling and loading fused kernels again\n"
    )
    text += "iteration 2 | loss 1.9\n" * 30
    regex = re.compile(r"> compiling and loading fused kernels \w+")
    found = TextScanner(text, [("compiling and loading", False)]).last_match(regex, ("compiling and loading",))
    assert found.group(0).endswith("again")


def test_crlf_is_found_with_and_without_hyperscan(monkeypatch):
    data = b"progress 10%\rprogress 50%\rdone\r\nnext line\r\n"
    assert log_decode(data) == "progress 10% progress 50% done\nnext line\n"
    monkeypatch.setattr(scan_literals, "hyperscan", None)
    assert log_decode(data) == "progress 10% progress 50% done\nnext line\n"
    assert log_decode(b"bar 10%\rbar 20%\n") == "bar 10% bar 20%\n"


@pytest.mark.parametrize(
    "prefix", ["", "[default3]:", "[rank3]:", "[1,3]<stderr>:", "3: ", " 3: ", "P1  3: ", "worker-1: ", "[2024-05-01 03:00:00] "]
)
def test_nccl_hosts_are_read_behind_a_launcher_prefix(prefix):
    text = f"{prefix}node-b:4123:4188 [3] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    facts, _ = _text_facts(text)
    assert facts["hosts"] == ["node-b"]


@pytest.mark.parametrize(
    "data, unchanged",
    [
        (b"plain ascii line\n", True),
        (b"\x1b[31mcolour\x1b[0m\n", False),
        (b"crlf\r\n", False),
        (b"caf\xe9\n", False),
        ("already text\n", False),
    ],
)
def test_raw_bytes_stand_for_the_text_only_when_decoding_changed_nothing(data, unchanged):
    from diagnosis.text import log_text

    assert log_text(data)[1] is unchanged


@pytest.mark.parametrize(
    "data, text",
    [
        (b"epoch 1\r\nepoch 2\r\n", "epoch 1\nepoch 2\n"),  # a log written on Windows
        (b" 10%|#  | 1/10\r 20%|## | 2/10\n", " 10%|#  | 1/10  20%|## | 2/10\n"),  # a redrawn progress bar stays one line
        (b"\x1b[32m 90%\r\x1b[0m\ndone\n", " 90%\ndone\n"),  # CRLF once the colour codes are gone
        (b"step\x00 3\r\x00\n", "step 3 \n"),  # NULs go after carriage returns: a CR and LF apart stay apart
    ],
)
@pytest.mark.parametrize("engine", ["hyperscan", "str.find"])
def test_carriage_returns_colour_codes_and_nuls_are_cleaned_as_a_terminal_shows_them(data, text, engine, monkeypatch):
    from diagnosis.text import log_text

    if engine == "str.find":
        monkeypatch.setattr(scan_literals, "hyperscan", None)
    assert log_text(data)[0] == text


def _signature(pattern: str):
    from diagnosis.readers.signatures import signatures_compile

    [sig] = signatures_compile(
        [{"slug": "case", "signatures": [{"id": "s", "description": "d", "weight": 1, "pattern": pattern}]}]
    )
    return sig


def test_the_prefilter_leaves_out_a_group_found_wherever_the_scanned_group_is():
    """'NCCL WARN ' is in each literal of the scanned group ('NCCL WARN NET/IB : Got completion from peer ', ...):
    checking it too costs the literal pass a literal on every NCCL warning and rules nothing out."""
    sig = _signature(r"NCCL WARN NET/IB : Got completion from peer \S+ with error \d+|NCCL WARN socketStartConnect: Connect to ")
    assert ("NCCL WARN ",) in sig.guards
    assert sig.prefilter == sig.guards[:1]


def test_the_prefilter_keeps_a_group_that_rules_lines_out():
    """' | iteration ' is not inside 'consumed samples: ': a line with only one of them cannot match."""
    sig = _signature(r"consumed samples: \d+ \| iteration \d+")
    assert sig.prefilter == sig.guards
    assert len(sig.prefilter) == 2


def test_srun_labels_right_aligned_among_ten_tasks_or_more_name_every_rank():
    """srun --label pads the task id to the widest one's digits (" 3: " beside "12: ", Slurm's "%*d: ")."""
    text = "".join(f"{task:>2}: step {step} | loss 1.2{task}\n" for step in range(3) for task in range(16))
    facts, _ = _text_facts(text)
    assert facts["ranks"] == list(range(16))
