"""Flight Recorder dumps: loaded without executing anything, and read for the first collective where ranks
diverge. The dumps under tests/fixtures/flight_recorder/ were written by PyTorch 2.13.0+cpu (Gloo)."""

import json
import pickle
import pickletools
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from diagnosis.readers.flight_recorder import (
    FlightRecorderError,
    flight_recorder_detect,
    flight_recorder_load,
    flight_recorder_read,
)

FR_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "flight_recorder"


def dumps(scenario: str, suffix: str = "") -> list[tuple[str, bytes]]:
    return [
        (p.name, p.read_bytes())
        for p in sorted((FR_DIR / scenario).glob(f"rank_*{suffix}"))
        if p.name.endswith(suffix) and (suffix or "." not in p.name)
    ]


def test_real_dumps_are_detected():
    assert all(flight_recorder_detect(name, data) for name, data in dumps("healthy") + dumps("healthy", ".json"))


def test_a_log_is_not_detected_as_a_dump():
    assert not flight_recorder_detect("rank0.log", b"NCCL INFO version 2.21.5\n" * 10)
    assert not flight_recorder_detect("x.pkl", pickle.dumps({"a": 1}, protocol=2))


def test_real_dump_holds_plain_data_only():
    name, data = dumps("healthy")[0]
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    assert not ops & {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ"}
    assert flight_recorder_load(data)["version"] == "2.10"


class Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo owned",))


def test_pickle_that_imports_os_is_refused():
    data = pickle.dumps({"version": "2.10", "entries": [Evil()], "pg_config": {}}, protocol=2)
    with pytest.raises(FlightRecorderError, match="global"):
        flight_recorder_load(data)


def test_crafted_global_opcode_is_refused():
    data = b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00idR."  # PROTO 2, GLOBAL os.system, REDUCE
    with pytest.raises(FlightRecorderError, match="os.system"):
        flight_recorder_load(data)


def test_non_plain_values_are_refused():
    data = pickle.dumps({"version": "2.10", "entries": [b"bytes"], "pg_config": {}}, protocol=3)
    with pytest.raises(FlightRecorderError, match="bytes"):
        flight_recorder_load(data)


def test_unknown_version_is_refused_with_the_known_ones():
    data = pickle.dumps({"version": "9.9", "entries": [], "pg_config": {}}, protocol=2)
    with pytest.raises(FlightRecorderError, match="2.10"):
        flight_recorder_load(data)


def test_refused_dump_is_left_out_with_a_note():
    evil = pickle.dumps({"version": "2.10", "entries": [Evil()]}, protocol=2)
    reading = flight_recorder_read(dumps("healthy") + [("rank_9", evil)])
    assert reading.ranks == [0, 1, 2, 3]
    assert any(note.startswith("rank_9: left out") for note in reading.notes)


def test_healthy_set_shows_no_divergence():
    reading = flight_recorder_read(dumps("healthy"))
    assert reading.facts == {"fr_missing_ranks": [], "fr_mismatch": False, "fr_all_started_first": False, "fr_pg_count": 1}
    assert "no divergence" in reading.summary


def test_healthy_json_form_reads_the_same():
    assert flight_recorder_read(dumps("healthy", ".json")).facts == flight_recorder_read(dumps("healthy")).facts


def test_missing_rank_is_found():
    reading = flight_recorder_read(dumps("missing_rank"))
    assert reading.facts["fr_missing_ranks"] == [2]
    assert reading.facts["fr_mismatch"] is False
    assert [g["ranks"] for g in reading.groups] == [[0, 1, 3], [2]]
    assert reading.groups[1]["odd"] and reading.groups[1]["state"] == "missing"
    assert "all_reduce #4" in reading.groups[0]["where"]


def test_missing_rank_groups_carry_the_call_site():
    reading = flight_recorder_read(dumps("missing_rank"))
    assert reading.groups[0]["call_site"].endswith("flight_recorder.py:45 worker")


def test_mismatched_op_is_found():
    reading = flight_recorder_read(dumps("mismatched_op"))
    assert reading.facts["fr_mismatch"] is True
    assert reading.facts["fr_missing_ranks"] == []
    odd = [g for g in reading.groups if g["odd"]]
    assert odd == [g for g in reading.groups if g["ranks"] == [3]] and odd[0]["where"].startswith("broadcast #4")
    assert "rank(s) 3" in reading.summary


def nccl_dump(states: list[str], seq: int = 1, version: str = "2.4") -> bytes:
    entries = [
        {
            "record_id": 0,
            "pg_id": 0,
            "process_group": ["0", "default_pg"],
            "collective_seq_id": seq,
            "p2p_seq_id": 0,
            "is_p2p": False,
            "op_id": seq,
            "profiling_name": "nccl:all_reduce",
            "input_sizes": [[4096]],
            "output_sizes": [[4096]],
            "input_dtypes": ["Float"],
            "output_dtypes": ["Float"],
            "state": state,
            "retired": False,
            "frames": [],
        }
        for state in states
    ]
    return json.dumps(
        {"version": version, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}, "entries": entries}
    ).encode()


def test_every_rank_started_the_first_collective():
    reading = flight_recorder_read([("nccl_trace_rank_0", nccl_dump(["started"])), ("nccl_trace_rank_1", nccl_dump(["started"]))])
    assert reading.facts["fr_all_started_first"] is True
    assert reading.groups[0]["state"] == "started"


def test_old_format_with_seq_id_and_pg_id_is_read():
    entry = {
        "record_id": 0,
        "pg_id": 0,
        "seq_id": 1,
        "op_id": 1,
        "profiling_name": "nccl:broadcast",
        "input_sizes": [[8]],
        "output_sizes": [[8]],
        "state": "completed",
        "retired": True,
        "frames": [],
    }
    data = pickle.dumps({"entries": [entry], "version": "1.4", "pg_config": {0: [0, 1]}}, protocol=2)
    reading = flight_recorder_read([("rank_0", data), ("rank_1", data)])
    assert reading.facts["fr_pg_count"] == 1 and "no divergence" in reading.summary


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_ENTRY = st.fixed_dictionaries(
    {
        "collective_seq_id": st.integers(-1, 4),
        "profiling_name": st.sampled_from(["nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1", "", "x"]),
        "process_group": _PLAIN,
        "input_sizes": _PLAIN,
        "output_sizes": _PLAIN,
        "input_dtypes": _PLAIN,
        "state": _PLAIN,
        "retired": _PLAIN,
        "frames": _PLAIN,
    }
)


@given(st.lists(st.lists(_ENTRY, max_size=5), min_size=1, max_size=3), _PLAIN)
def test_malformed_dumps_never_raise(ranks, config):
    data = [
        (f"rank_{n}", json.dumps({"version": "2.10", "pg_config": config, "entries": entries}).encode())
        for n, entries in enumerate(ranks)
    ]
    reading = flight_recorder_read(data)
    assert isinstance(reading.summary, str)


def nested_list_pickle(depth: int) -> bytes:
    """A protocol-2 pickle of {"version": [[[...depth...]]], "entries": []}, written by hand: pickle.dumps recurses."""
    return b"\x80\x02}(X\x07\x00\x00\x00version" + b"]" * depth + b"a" * (depth - 1) + b"X\x07\x00\x00\x00entries]u."


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_dump_nesting_values_deeper_than_the_limit_is_left_out_with_a_note(depth):
    reading = flight_recorder_read([("nccl_trace_rank_0", nested_list_pickle(depth))])
    assert reading.ranks == []
    assert "nests values more than 32 deep" in " ".join(reading.notes)


def test_a_pickled_dump_over_the_pickle_limit_is_refused_before_it_is_loaded():
    data = b"\x80\x02}(X\x07\x00\x00\x00versionX\x03\x00\x00\x002.4X\x07\x00\x00\x00entries]u." + b"N" * (65 * 1024**2)
    with pytest.raises(FlightRecorderError, match="over the limit"):
        flight_recorder_load(data)
