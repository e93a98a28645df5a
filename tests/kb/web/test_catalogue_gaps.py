"""A line a catalogued program printed that the message catalogue does not know is listed in the JSON and counted
in the curators' report, so the catalogue's gaps show themselves."""

from __future__ import annotations

import json

import pytest

from kb.models import LineTemplate

pytestmark = pytest.mark.django_db

UNKNOWN = "gpu-node-7:4242:4301 [3] NCCL WARN Something no NCCL release has ever printed, on purpose 17\n"
WATCHDOG = (
    "[rank1]:[E1104 02:53:16.482140337 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=9741, OpType=_ALLGATHER_BASE, NumelIn=65667328, NumelOut=262669312, Timeout(ms)=600000) ran for "
    "600041 milliseconds before timing out.\n"
)


def test_the_api_lists_a_known_program_s_line_the_catalogue_does_not_know(client):
    body = json.loads(client.post("/api/diagnose", data=WATCHDOG + UNKNOWN, content_type="text/plain").content)
    assert body["unrecognised"] == [{"line": 2, "text": UNKNOWN.strip()}]
    assert "watchdog.timeout" in body["facts"]["printed"]


def test_a_pasted_unknown_line_is_counted_for_the_curators(client):
    client.post("/diagnose", {"log": WATCHDOG + UNKNOWN})
    rows = LineTemplate.objects.filter(origin="unrecognised")
    assert rows.count() == 1 and "NCCL WARN Something no NCCL release" in rows.get().template


def test_a_log_the_catalogue_knows_wholly_records_no_gap(client):
    client.post("/diagnose", {"log": WATCHDOG})
    assert not LineTemplate.objects.filter(origin="unrecognised").exists()
