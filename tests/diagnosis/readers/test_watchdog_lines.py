"""The watchdog's timeout line read from a paste cut at the right edge (a terminal view that does not wrap): what came
before the cut still places the rank, and a fuller copy of the same line later in the log completes it."""

from diagnosis.readers.facts import fact_literals, ranks_extract
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator

# PyTorch 2.5 (ProcessGroupNCCL.cpp:616), then the same message quoted again by the watchdog thread's exception (:1595)
TIMEOUT = (
    "[rank1]:[E0702 09:24:07.067884237 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=25557032, NumelOut=25557032, Timeout(ms)=600000) ran for 600074 "
    "milliseconds before timing out."
)
QUOTED = (
    "[rank1]:[E0702 09:24:07.733733654 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group "
    "watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=25557032, NumelOut=25557032, Timeout(ms)=600000) ran for 600074 "
    "milliseconds before timing out."
)


def ranks(text: str):
    return ranks_extract(TextScanner(text, fact_literals()), LineLocator(text))


def test_a_timeout_line_cut_inside_its_record_places_the_rank_in_its_collective():
    state = ranks(TIMEOUT[: TIMEOUT.index("Timeout(ms)") + 4])[1]
    assert (state.op, state.seq, state.numel_in, state.numel_out) == ("ALLREDUCE", 120, 25557032, 25557032)
    assert state.timeout_ms is None


def test_a_number_the_cut_went_through_is_not_read():
    state = ranks(TIMEOUT[: TIMEOUT.index("NumelOut=") + 13])[1]
    assert (state.op, state.seq, state.numel_in, state.numel_out) == ("ALLREDUCE", 120, None, None)


def test_a_cut_after_the_record_keeps_the_timeout_but_not_a_cut_duration():
    state = ranks(TIMEOUT[: TIMEOUT.index("ran for") + 12])[1]
    assert (state.timeout_ms, state.ran_ms) == (600000, None)


def test_a_fuller_copy_of_the_same_work_completes_a_cut_one_and_is_no_clash():
    first = TIMEOUT[: TIMEOUT.index("NumelIn=")]
    state = ranks(first + "\n" + QUOTED)[1]
    assert not state.clash
    assert (state.numel_in, state.timeout_ms, state.ran_ms, state.line) == (25557032, 600000, 600074, 1)


def test_two_copies_of_one_rank_in_different_works_still_clash():
    other = QUOTED.replace("SeqNum=120, OpType=ALLREDUCE", "SeqNum=57, OpType=BROADCAST")
    assert ranks(TIMEOUT + "\n" + other)[1].clash
