"""The catalogue reader: each failure line a catalogued program prints is recognised by what it means, whatever
prefix a launcher put before it and whichever rank printed it; the releases that print every line become a fact; a
line with a known program's prefix that no template explains is listed, so the catalogue's gaps show."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnosis.catalogue import Catalogue
from diagnosis.engine import log_diagnose
from diagnosis.readers.catalogue import diagnostic_messages, messages_dump, messages_load
from diagnosis.rules import rules_compile

MESSAGES = Path(__file__).resolve().parents[3] / "content" / "catalogue" / "messages"


@pytest.fixture(scope="module")
def rules():
    return rules_compile([], [], diagnostic_messages(Catalogue.load(MESSAGES)))


GLOO = (
    "[rank1]:[E1128 10:00:12.123456 ProcessGroupGloo.cpp:144] Rank 0 failed to pass monitoredBarrier in 10000 ms\n"
    "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:51234\n"
)


def _job(text: str, rules):
    diagnosis = log_diagnose([("job.log", text.encode())], rules)
    return diagnosis.facts


def test_a_monitored_barrier_and_a_closed_connection_are_read_by_meaning(rules):
    assert {"barrier.timeout", "socket.connection_closed"} <= set(_job(GLOO, rules)["printed"])


def test_the_releases_that_print_every_line_become_a_fact(rules):
    bands = _job(GLOO, rules)["printed_by"]
    assert any(band.startswith("torch 1.13.1-") for band in bands)


def test_a_bare_watchdog_timeout_line_is_read_by_meaning(rules):
    """The collective-timeout line, pasted without its c10d prefix, carries no generic failure word."""
    text = (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
        "Timeout(ms)=600000) ran for 600123 milliseconds before timing out.\n"
    )
    assert "watchdog.timeout" in _job(text, rules)["printed"]


def test_the_same_message_from_every_rank_is_one_meaning(rules):
    text = "".join(
        f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
        f"[10.0.0.{r}]:5{r:04d}\n"
        for r in range(64)
    )
    assert _job(text, rules)["printed"] == ["socket.connection_closed"]


def test_a_line_with_a_known_prefix_that_no_template_explains_is_listed(rules):
    text = "node1:4242:4301 [3] NCCL WARN Something no NCCL release has ever printed, on purpose\n"
    diagnosis = log_diagnose([("job.log", text.encode())], rules)
    assert diagnosis.unrecognised == [(None, 1, text.strip())]


def test_a_healthy_log_has_no_printed_meanings(rules):
    text = "".join(f"step {n} loss {1 / (n + 1):.4f}\n" for n in range(5000))
    assert "printed" not in _job(text, rules)


def test_the_catalogue_survives_the_rules_snapshot_round_trip(rules):
    again = messages_load(messages_dump(rules.messages))
    assert again.entries == rules.messages.entries and again.releases == rules.messages.releases


def test_cases_count_what_a_catalogued_line_means():
    """Content conditions on the fact `printed`: a build failure in any release's wording is evidence for the JIT
    build case, beside its own signatures."""
    from tools.corpus import content_rules

    rules = content_rules(MESSAGES.parents[1])
    text = "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)\n"
    diagnosis = log_diagnose([("job.log", text.encode())], rules)
    case = next(m for m in diagnosis.matches if m.slug == "jit-extension-build-failure")
    assert "build.failed" in diagnosis.facts["printed"]
    assert "printed-build-failed" in [s["id"] for s in case.signals]


def test_a_gloo_size_mismatch_counts_for_the_desync_case():
    """Gloo's own mismatch wording (torch 2.9 and later) names no collective, yet it is a collective mismatch: the
    desync case counts it through the meaning, beside its signatures for torch's DETAIL wording."""
    from tools.corpus import content_rules

    rules = content_rules(MESSAGES.parents[1])
    text = (
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:1045] Received data size doesn't "
        "match expected size. Is there a distributed collective mismatch in your code?\n"
    )
    diagnosis = log_diagnose([("job.log", text.encode())], rules)
    case = next(m for m in diagnosis.matches if m.slug == "collective-mismatch-desync")
    assert "printed-collective-mismatch" in [s["id"] for s in case.signals]
