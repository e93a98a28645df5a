"""Fact conditions: what a case can ask of the job as a whole, beyond single lines.

`FACTS` is the one declaration of the facts the engine reads out of a job and their types; case front
matter, the troubleshooter and the templates refer to these names. A condition names one fact and one
operator, and counts with its weight like a signature when it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnosis.versions import version_in

# name -> (type, what it means). Types: bool, int, str, version, ints, strs.
FACTS: dict[str, tuple[str, str]] = {
    "op_type": ("strs", "collective(s) the watchdog timed out on, e.g. ALLREDUCE, _ALLGATHER_BASE, BROADCAST"),
    "seq_num": ("ints", "sequence number(s) of the timed-out collective"),
    "timeout_ms": ("ints", "the collective timeout the watchdog printed"),
    "ran_for_ms": ("int", "the longest time a timed-out collective ran"),
    "timed_out_ranks": ("ints", "ranks that printed a watchdog timeout"),
    "ranks": ("ints", "every rank the log shows"),
    "world_size": ("int", "the job's size, from a launch line or the log"),
    "silent_ranks": ("ints", "ranks of the world that never reported a timeout while others did"),
    "behind_ranks": ("ints", "ranks whose last completed collective is the lowest"),
    "ranks_disagree": (
        "bool",
        "ranks of one process group were in different collectives, or ran one collective with different input sizes, at "
        "the same or adjacent SeqNum, or one rank had finished an all-reduce (all-gather, reduce-scatter, all-to-all) "
        "another still waited in and was in a different collective a few SeqNums on (a desync)",
    ),
    "first_collective": ("bool", "every rank that timed out was in its process group's first collective"),
    "object_collective": (
        "bool",
        "the timed-out collective is an ALLGATHER of one element per rank (NumelIn=1, NumelOut = group "
        "size): the size exchange all_gather_object and gather_object begin with",
    ),
    "stage": ("str", "the last progress stage printed before the output stops"),
    "runs_mixed": (
        "str",
        "two files of the job show two or more of the same ranks timed out in different collectives: two runs, not one",
    ),
    "coll_trace_mismatch": (
        "str",
        "NCCL's collective trace (NCCL_DEBUG_SUBSYS=COLL) shows processes enqueuing different collectives at the same "
        "opCount of communicators of one size: which opCount, and what each enqueued",
    ),
    "printed": (
        "strs",
        "what the job's catalogued lines mean (content/catalogue/FORMAT.md): gloo.timeout, socket.connection_closed, "
        "process.killed, watchdog.timeout…",
    ),
    "printed_by": (
        "strs",
        "per program, the releases that can print every catalogued line of the job, e.g. 'nccl 2.18.6-2.19.4'",
    ),
    "case": ("str", "the case the diagnosis named with confidence (its best answer): what the wizard's hand-off starts from"),
    "stages_done": ("strs", "stages whose completion marker was printed"),
    "launcher": ("str", "the outermost launcher found: srun, mpirun, deepspeed, accelerate, torchrun"),
    "launchers": ("strs", "every launcher found"),
    "container": (
        "str",
        "where the ranks run, by the command the paste shows: kubernetes (kubectl, a PyTorchJob, Kubeflow) or docker "
        "(docker or podman run or exec)",
    ),
    "frameworks": ("strs", "frameworks the log shows, e.g. megatron-lm, transformer-engine, pytorch-fsdp"),
    "parallelism": (
        "strs",
        "model-parallel layouts the log names (tensor-parallel, pipeline-parallel, context-parallel, expert-parallel, "
        "hybrid-shard, device-mesh): each puts every rank in several process groups",
    ),
    "transport": ("strs", "NCCL network transport: IB, Socket"),
    "interfaces": ("strs", "network interfaces NCCL or Gloo said they use"),
    "p2p_channels": ("strs", "NCCL peer-to-peer channel kinds, e.g. P2P/IPC, P2P/CUMEM"),
    "hosts": ("strs", "host names in NCCL lines"),
    "process_groups": ("strs", "process group ids in watchdog lines"),
    "torch_version": ("version", "PyTorch release"),
    "nccl_version": ("version", "NCCL release"),
    "nccl_versions": ("strs", "every NCCL release the log prints (more than one: nodes run different NCCL builds)"),
    "torch_band": ("strs", "PyTorch release ranges the wording of its messages implies, when no version is printed; all hold"),
    "nccl_band": ("strs", "NCCL release ranges the wording of its INFO lines implies (Bootstrap : Using before 2.24)"),
    "nccl_builds_differ": ("bool", "the log shows two NCCL releases, or both the pre-2.24 and the 2.24+ wording"),
    "cuda_version": ("version", "CUDA release"),
    "te_version": ("version", "TransformerEngine release"),
    "kernel_version": ("version", "Linux kernel release"),
    "store_timeout_s": ("int", "TCPStore wait that timed out, in seconds"),
    "timeout_set_s": (
        "int",
        "the collective timeout a framework was set to (Trainer ddp_timeout, Megatron-LM --distributed-timeout-minutes, "
        "DEEPSPEED_TIMEOUT), in seconds",
    ),
    "timeout_not_applied": ("bool", "the process group's timeout in the log is not the one the framework was set to"),
    "watchdog_late_s": ("int", "how long after its limit the watchdog reported a timeout, when that was over 10 minutes"),
    "first_failure": (
        "str",
        "the kind of the earliest failure: sigkill, oom-kill, signal, cuda-error, ecc-error, exception",
    ),
    "first_failure_rank": ("int", "the rank of the earliest failure, when the log says"),
    "failed_before_timeout": (
        "bool",
        "a rank failed on its own (an exception, a signal, a kill, a GPU error) and no rank printed a timeout: the "
        "others' errors (a peer that closed its connection, an aborted communicator) are that failure's effect",
    ),
    "stack_frames": ("strs", "innermost frames of the pasted stacks, as path:function"),
    "rank_stacks": ("str", "'present' when the log holds stacks that show where processes wait (py-spy, faulthandler, gdb)"),
    "flight_recorder": ("str", "'present' when Flight Recorder evidence was read (dumps, or the analyzer's report)"),
    "nccl_tests": ("str", "nccl-tests output: header-only (it printed its header and no result row) or results"),
    "p2p_check": ("str", "CUDA samples peer-to-peer test: failed or passed"),
    "p2p_bandwidth": (
        "str",
        "CUDA samples p2pBandwidthLatencyTest: slower (a pair copies with peer access at under half the staged "
        "copy's bandwidth), normal, or stopped (its output ends under a heading with no row)",
    ),
    "shm_size_mb": ("int", "size of /dev/shm in a pasted df line, in MiB"),
    "gpu_links": ("strs", "link kinds in a pasted nvidia-smi topo -m matrix: NV, PIX, PXB, PHB, NODE, SYS"),
    "ib_port_state": ("strs", "port states in a pasted ibv_devinfo: PORT_ACTIVE, PORT_DOWN, PORT_INIT"),
    "link_layer": (
        "strs",
        "link layers in a pasted ibv_devinfo (InfiniBand, Ethernet), or of the device NCCL's NET/IB line names first (IB, "
        "RoCE) where a case reads it",
    ),
    "build_lock": ("str", "a zero-byte lock in a pasted ls -la of a build directory: stale (older than the sources) or fresh"),
    "stack_collectives": ("strs", "torch.distributed collectives the pasted stacks wait in (all_reduce, broadcast, ...)"),
    "fr_missing_ranks": ("ints", "Flight Recorder: ranks that never issued the collective the others wait in"),
    "fr_mismatch": ("bool", "Flight Recorder: ranks issued different collectives (op, sizes or dtypes) at one sequence number"),
    "fr_all_started_first": ("bool", "Flight Recorder: every rank started the first collective and none completed it"),
    "fr_pg_count": ("int", "Flight Recorder: process groups in the dumps"),
    "debug_unanswered_ranks": ("ints", "PyTorch's debug server dumps: ranks whose worker did not answer (Error: <status>)"),
    "ras_missing_ranks": ("ints", "NCCL RAS (ncclras): ranks whose communicator data it could not get (unresponsive or dead)"),
    "ras_dead_processes": ("int", "NCCL RAS: job processes it considers dead (unreachable for 60 s)"),
    "ras_behind_ranks": ("ints", "NCCL RAS: ranks listed at the lowest collective operation count of their communicator"),
    "ras_counts_frozen": ("bool", "two ncclras JSON reports pasted together show the same counts: hung, not slow"),
}

# What a page calls each fact; a fact without a label is shown by its name. Every key is one of FACTS (tested).
FACT_LABELS = {
    "op_type": "Collective (OpType)",
    "seq_num": "Sequence number",
    "timeout_ms": "Timeout (ms)",
    "ran_for_ms": "Ran for (ms)",
    "timed_out_ranks": "Ranks that timed out",
    "ranks": "Ranks seen",
    "world_size": "World size",
    "stage": "Last stage reached",
    "launcher": "Launcher",
    "container": "Where the ranks run",
    "frameworks": "Frameworks",
    "parallelism": "Model-parallel layouts",
    "torch_version": "PyTorch",
    "nccl_version": "NCCL",
    "te_version": "TransformerEngine",
    "cuda_version": "CUDA",
    "kernel_version": "Linux kernel",
    "interfaces": "Network interfaces",
    "transport": "NCCL network transport",
    "p2p_channels": "P2P transports",
    "hosts": "Hosts",
    "process_groups": "Process groups",
    "store_timeout_s": "Store timeout (s)",
    "timeout_set_s": "Timeout the framework was set to (s)",
    "timeout_not_applied": "That timeout did not reach the process group",
    "watchdog_late_s": "Watchdog reported the timeout this late (s)",
    "stages_done": "Stages completed",
    "silent_ranks": "Silent ranks",
    "behind_ranks": "Ranks behind",
    "ranks_disagree": "Ranks disagree (desync)",
    "first_collective": "Stuck in the first collective",
    "nccl_versions": "NCCL releases printed",
    "ras_missing_ranks": "RAS: ranks not answering",
    "debug_unanswered_ranks": "Debug server: ranks not answering",
    "ras_dead_processes": "RAS: processes declared dead",
    "ras_behind_ranks": "RAS: ranks behind",
    "ras_counts_frozen": "RAS: counts frozen between reports",
    "nccl_builds_differ": "Different NCCL builds across nodes",
    "torch_band": "PyTorch (dated by wording)",
    "nccl_band": "NCCL (dated by wording)",
    "object_collective": "Object collective (size exchange)",
    "first_failure": "First failure",
    "printed": "What the catalogued lines say",
    "coll_trace_mismatch": "NCCL collective trace: processes out of step",
    "runs_mixed": "Files that look like two runs (diagnose each on its own)",
    "printed_by": "Releases that print these lines",
    "first_failure_rank": "Rank that failed first",
    "failed_before_timeout": "A rank failed before any timeout",
    "stack_frames": "Innermost stack frames",
    "nccl_tests": "nccl-tests",
    "p2p_check": "CUDA peer-to-peer test",
    "shm_size_mb": "/dev/shm size (MiB)",
    "gpu_links": "GPU links (topo -m)",
    "ib_port_state": "IB port state",
    "link_layer": "IB link layer",
}
# Facts read for the conditions but not shown: `launcher` already says the outermost one.
HIDDEN_FACTS = frozenset({"launchers"})


def fact_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """The facts as (label, value) rows for a page or a report: long lists cut to 40 with the total."""
    rows = []
    for key, value in facts.items():
        if key in HIDDEN_FACTS:
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value[:40]) + (f" … ({len(value)} in all)" if len(value) > 40 else "")
        rows.append((FACT_LABELS.get(key, key.replace("_", " ").capitalize()), str(value)))
    return rows


OPERATORS_BY_TYPE = {
    "bool": {"equals", "present"},
    "int": {"equals", "in", "at_least", "at_most", "present"},
    "str": {"equals", "in", "present"},
    "version": {"version", "present"},
    "ints": {"contains", "at_least", "at_most", "present", "equals"},
    "strs": {"contains", "in", "at_least", "at_most", "present", "equals"},
}
OPERATORS = ("equals", "in", "at_least", "at_most", "present", "contains", "version")


def condition_problems(condition: dict) -> list[tuple[str, str]]:
    """(field, message) for a condition that names an unknown fact or uses an operator its type lacks."""
    fact = condition.get("fact")
    if fact not in FACTS:
        return [("fact", f"unknown fact '{fact}' (known: {', '.join(sorted(FACTS))})")]
    kind = FACTS[fact][0]
    used = [op for op in OPERATORS if op in condition]
    if len(used) != 1:
        return [("fact", f"a condition takes exactly one of {', '.join(OPERATORS)}; found {len(used)}")]
    op = used[0]
    if op not in OPERATORS_BY_TYPE[kind]:
        return [(op, f"'{op}' does not apply to {fact} ({kind}); use one of {', '.join(sorted(OPERATORS_BY_TYPE[kind]))}")]
    value = condition[op]
    if op in ("at_least", "at_most") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return [(op, f"'{op}' takes a number")]
    if op == "present" and not isinstance(value, bool):
        return [(op, "'present' takes true or false")]
    if op == "in" and not (isinstance(value, list) and value):
        return [(op, "'in' takes a non-empty list")]
    if op == "version":
        from diagnosis.versions import version_spec_valid

        if not isinstance(value, str) or not version_spec_valid(value):
            return [(op, f"'{value}' is not a version specifier such as '>=2.14'")]
    if op == "equals" and kind == "bool" and not isinstance(value, bool):
        return [(op, f"{fact} is true or false")]
    return []


@dataclass(frozen=True)
class Condition:
    case: str
    id: str
    description: str
    fact: str
    op: str
    value: Any
    weight: float
    anchor: bool


def conditions_compile(cases: list[dict]) -> list[Condition]:
    compiled = []
    for case in cases:
        for cond in case.get("conditions") or []:
            op = next(op for op in OPERATORS if op in cond)
            compiled.append(
                Condition(
                    case=case["slug"],
                    id=cond["id"],
                    description=cond["description"],
                    fact=cond["fact"],
                    op=op,
                    value=cond[op],
                    weight=float(cond["weight"]),
                    anchor=bool(cond.get("anchor", False)),
                )
            )
    return compiled


def condition_holds(condition: Condition, facts: dict[str, Any]) -> bool:
    """Whether the job's facts satisfy the condition; an absent fact satisfies only `present: false`."""
    value = facts.get(condition.fact)
    empty = value is None or value == [] or value == ""
    if condition.op == "present":
        return condition.value is not empty
    if empty:
        return False
    kind = FACTS[condition.fact][0]
    items = value if isinstance(value, list) else [value]
    wanted = condition.value
    if condition.op == "equals":
        if kind in ("ints", "strs"):
            return items == (wanted if isinstance(wanted, list) else [wanted])
        return value == wanted
    if condition.op == "in":
        return all(item in wanted for item in items)
    if condition.op == "contains":
        return wanted in items
    if condition.op in ("at_least", "at_most"):
        number = len(items) if kind in ("ints", "strs") else value
        if not isinstance(number, (int, float)):
            return False
        return number >= wanted if condition.op == "at_least" else number <= wanted
    if condition.op == "version":
        return version_in(str(value), wanted)
    return False
