"""Shell output pasted as evidence becomes facts a case can ask about."""

from diagnosis.scan.scanner import TextScanner
from diagnosis.readers.tools import LITERALS, tool_facts


def facts(text: str) -> dict:
    return tool_facts(TextScanner(text, [(lit, False) for lit in LITERALS]))


NCCL_TESTS_HEADER = """# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41723 on    gpu-a01 device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  41723 on    gpu-a01 device  1 [0x2a] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def test_nccl_tests_that_printed_only_its_header_is_header_only():
    assert facts(NCCL_TESTS_HEADER)["nccl_tests"] == "header-only"


def test_nccl_tests_with_result_rows_has_results():
    row = "           8             2     float     sum      -1    28.41    0.00    0.00      0    27.95    0.00    0.00      0\n"
    assert facts(NCCL_TESTS_HEADER + row)["nccl_tests"] == "results"


def test_a_df_line_gives_the_size_of_dev_shm():
    assert (
        facts("Filesystem      Size  Used Avail Use% Mounted on\nshm              64M     0   64M   0% /dev/shm\n")["shm_size_mb"]
        == 64
    )


def test_simple_p2p_verification_errors_fail_the_peer_to_peer_check():
    text = (
        "> Peer access from NVIDIA RTX A6000 (GPU0) -> NVIDIA RTX A6000 (GPU1) : Yes\n"
        "Verification error @ element 1: val = 0.000000, ref = 4.000000\nTest failed!\n"
    )
    assert facts(text)["p2p_check"] == "failed"


# p2pBandwidthLatencyTest (CUDA samples, Samples/5_Domain_Specific), two GPUs; the bandwidth numbers are chosen.
P2P_BANDWIDTH_HEAD = """[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
Device: 0, NVIDIA RTX A6000, pciBusID: 3, pciDeviceID: 0, pciDomainID:0
Device: 1, NVIDIA RTX A6000, pciBusID: 21, pciDeviceID: 0, pciDomainID:0
Device=0 CAN Access Peer Device=1
Device=1 CAN Access Peer Device=0

P2P Connectivity Matrix
     D\\D     0     1
     0	     1     1
     1	     1     1
Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 673.20  13.15
     1  12.99 673.20
"""


def _p2p_enabled(one_way: float) -> str:
    return (
        "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
        f"     0 673.49 {one_way:6.2f}\n     1 {one_way:6.2f} 672.33\n"
        "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 677.73  18.01\n     1  18.02 676.90\n"
    )


def test_peer_copies_far_slower_than_staged_ones_are_a_collapsed_p2p_bandwidth():
    assert facts(P2P_BANDWIDTH_HEAD + _p2p_enabled(2.60))["p2p_bandwidth"] == "slower"


def test_peer_copies_as_fast_as_staged_ones_are_a_normal_p2p_bandwidth():
    assert facts(P2P_BANDWIDTH_HEAD + _p2p_enabled(26.32))["p2p_bandwidth"] == "normal"


def test_a_bandwidth_test_that_ends_under_a_heading_stopped_in_that_copy():
    stopped = P2P_BANDWIDTH_HEAD + "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
    assert facts(stopped)["p2p_bandwidth"] == "stopped"


def test_the_older_samples_heading_without_p2p_writes_is_read_too():
    older = _p2p_enabled(2.60).replace("Bandwidth (P2P Writes) Matrix", "Bandwidth Matrix")
    assert facts(P2P_BANDWIDTH_HEAD + older)["p2p_bandwidth"] == "slower"


def test_topology_matrix_lists_the_link_kinds():
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tPHB\t0-31\t0\t\tN/A\nGPU1\tPHB\t X \t0-31\t0\t\tN/A\n"
    )
    assert facts(text)["gpu_links"] == ["PHB"]


def test_ibv_devinfo_gives_port_state_and_link_layer():
    text = "hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tlink_layer:\t\tEthernet\n"
    assert facts(text) == {"ib_port_state": ["PORT_DOWN"], "link_layer": ["Ethernet"]}


FR_REPORT_2_13 = """Not all ranks joining collective, sequence number: 1043
internal record id: 1042
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {5, 6}
input sizes: [[1048576]]
output sizes: [[1048576]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: started
"""


def test_the_flight_recorder_report_names_the_ranks_that_never_joined():
    assert facts(FR_REPORT_2_13)["fr_missing_ranks"] == [5, 6]


def test_the_first_flight_recorder_report_wording_names_missing_ranks_too():
    text = (
        "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce "
        "Missing ranks are {3} [[3, 4]] [[3, 4]] 4 scheduled\n"
    )
    assert facts(text)["fr_missing_ranks"] == [3]


def test_a_culprit_rank_with_a_different_collective_is_a_mismatch():
    text = (
        "Collective sequence number: 1042 has errors\ncollective: nccl:all_reduce\n"
        "error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: "
        "'nccl:all_reduce' does not match found collective type: 'nccl:broadcast'\n"
    )
    assert facts(text)["fr_mismatch"] is True


def test_a_culprit_rank_in_another_state_only_is_not_an_op_mismatch():
    text = (
        "Collective sequence number: 7 has errors\n"
        "error msg: Culprit rank 2; Error type: COLLECTIVE_STATE_MISMATCH, Expected state: 'completed' does not "
        "match found state: 'scheduled'\n"
    )
    assert "fr_mismatch" not in facts(text)


def test_missing_ranks_outside_a_flight_recorder_report_are_not_read():
    assert "fr_missing_ranks" not in facts("health check: missing ranks: {2} (will retry)\n")


# NCCL RAS client output, composed from the format strings of src/ras/client_support.cc at the tags named.
RAS_INCOMPLETE_2_24 = """Communicators... (2.05s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE

Errors
======

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 2 ranks
  The missing ranks: 21,22

"""

RAS_INCOMPLETE_2_30 = """Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 3487984 on node 172.16.64.213 managing GPU 5

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 21 -- GPU 5 managed by process 3487984 on node 172.16.64.213

"""

RAS_COUNTS_2_26 = """Warnings
========

#0-0 (27a079b828ff1a75) MISMATCH
  Communicator ranks have different AllReduce operation counts
  29 ranks have launched up to operation 6650
  Rank 6 has launched up to operation 6641 -- GPU 6 managed by process 483078 on node 172.16.64.210
  2 ranks have launched up to operation 6649
  Rank 9 -- GPU 1 managed by process 1598389 on node 172.16.64.212
  Rank 17 -- GPU 1 managed by process 3500072 on node 172.16.64.213

"""


def test_ncclras_up_to_2_25_lists_the_missing_ranks_in_one_line():
    assert facts(RAS_INCOMPLETE_2_24)["ras_missing_ranks"] == [21, 22]


def test_ncclras_from_2_26_names_each_missing_rank_and_the_dead_process():
    found = facts(RAS_INCOMPLETE_2_30)
    assert found["ras_missing_ranks"] == [21] and found["ras_dead_processes"] == 1


def test_ncclras_operation_counts_name_the_rank_that_is_behind():
    assert facts(RAS_COUNTS_2_26)["ras_behind_ranks"] == [6]


def ras_json(counts: int, missing: bool = True) -> str:
    report = {
        "nccl_version": "2.29.1",
        "timestamp": "2025-12-19 13:06:53",
        "communicators_count": 1,
        "communicators": [
            {
                "hash": "0xae94423cfbb2ef4a",
                "size": 2,
                "ranks": [{"rank": 0, "host": "172.16.64.245", "pid": 1524344, "collective_counts": {"AllReduce": counts}}],
                "missing_ranks": [{"rank": 1, "status": {"unresponsive": True, "considered_dead": False}}] if missing else [],
            }
        ],
    }
    import json

    return json.dumps(report, indent=2) + "\n"


def test_two_ncclras_json_reports_with_the_same_counts_are_frozen():
    found = facts("$ ncclras -f json\n" + ras_json(812) + "$ sleep 10; ncclras -f json\n" + ras_json(812))
    assert found["ras_missing_ranks"] == [1] and found["ras_counts_frozen"] is True


def test_two_ncclras_json_reports_with_moving_counts_are_not_frozen():
    found = facts(ras_json(812, missing=False) + ras_json(977, missing=False))
    assert found["ras_counts_frozen"] is False and "ras_missing_ranks" not in found
