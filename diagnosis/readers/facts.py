"""Facts read out of a log that hold whatever the cause: collective, timeout, ranks, launcher, versions.

Each rule is a pattern, a required literal for a fast pre-check, and how to keep its captures.
The watchdog lines get their own parser because they feed the per-rank table.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from diagnosis.scan.literals import required_literals
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import BRACKET_PREFIX, SRUN_LABEL, SRUN_LABEL_PREFIX, TAG_OUTPUT_PREFIX, LineLocator

from diagnosis.readers.base import FileReading, JobParts, Window


# Fact names the engine computes itself; signature named groups may not reuse them.
GENERIC_FACTS = frozenset(
    {
        "nccl_version",
        "torch_version",
        "cuda_version",
        "te_version",
        "kernel_version",
        "interfaces",
        "transport",
        "p2p_channels",
        "hosts",
        "world_size",
        "store_timeout_s",
        "process_groups",
        "launcher",
        "launchers",
        "frameworks",
        "parallelism",
        "stage",
        "op_type",
        "timeout_ms",
        "ran_for_ms",
        "seq_num",
        "timed_out_ranks",
        "ranks",
        "nccl_versions",
        "torch_band",
        "nccl_band",
    }
)


@dataclass(frozen=True)
class Pattern:
    """A compiled line pattern with the literals a scanner needs to find its candidate lines."""

    name: str
    regex: re.Pattern
    literals: tuple[str, ...]
    keep: str = "first"  # first | set | max

    def matches(self, scanner: TextScanner):
        return scanner.matches(self.regex, self.literals)


def _rule(name: str, pattern: str, keep: str = "first") -> Pattern:
    """A fact pattern; the literals the scanner looks for are derived from it."""
    return Pattern(name, re.compile(pattern, re.MULTILINE), required_literals(pattern), keep)


def _table(entries: tuple[tuple[str, str], ...]) -> tuple[Pattern, ...]:
    return tuple(Pattern(name, re.compile(p, re.MULTILINE), required_literals(p)) for name, p in entries)


FACT_RULES: tuple[Pattern, ...] = (
    _rule("nccl_version", r"NCCL version (\d+\.\d+\.\d+)", "first"),
    _rule("nccl_versions", r"NCCL version (\d+\.\d+\.\d+)", "set"),
    _rule("torch_version", r"(?:PyTorch version|torch version|torch\.__version__)\W{0,3}(\d+\.\d+\.\d+)", "first"),
    _rule("torch_version", r"\btorch==(\d+\.\d+\.\d+)", "first"),
    _rule("cuda_version", r"CUDA version[: ]{1,3}(\d+\.\d+)", "first"),
    _rule("te_version", r"[Tt]ransformer[ _-]?[Ee]ngine(?: version)?[ :=v]{1,3}(\d+\.\d+(?:\.\d+)?)", "first"),
    _rule("kernel_version", r"Detected kernel version (\d+\.\d+\.\d+)", "first"),
    _rule("interfaces", r"NCCL INFO Bootstrap ?: Using ([\w.:-]+?):\d", "set"),
    _rule("interfaces", r"NET/Socket : Using \[0\]([\w.-]+):", "set"),
    _rule("interfaces", r"; OOB ([\w.-]+):", "set"),
    _rule("interfaces", r"NCCL_SOCKET_IFNAME set by environment to (\S+)", "set"),
    _rule("transport", r"NCCL INFO Using network (\w+)", "set"),
    _rule("p2p_channels", r" via (P2P/\w+)", "set"),
    # NCCL's "host:pid:tid [dev] NCCL" head, after a launcher's line prefix if any (torchrun's [default0]:,
    # mpirun --tag-output, srun --label, deepspeed's "host: ", a bracketed timestamp)
    _rule(
        "hosts",
        rf"^(?:\[[^\]\n]{{1,40}}\] |{BRACKET_PREFIX} ?|{SRUN_LABEL}|[\w.-]{{1,64}}: )?([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] NCCL",
        "set",
    ),
    _rule("world_size", r"\bnranks (\d+)", "max"),
    _rule("world_size", r"[Ww]orld[ _]size[:= ]{1,3}(\d+)", "max"),
    _rule("world_size", r"\bWORLD_SIZE[=:] ?'?(\d+)", "max"),
    _rule("world_size", r"num_processes\W{1,4}(\d+)", "max"),
    _rule("world_size", r"\b(?:mpirun|mpiexec)\b[^\n]{0,300}? -(?:np|n|c) (\d+)", "max"),
    _rule("world_size", r"\bsrun\b[^\n]{0,300}? (?:-n ?|--ntasks[= ])(\d+)", "max"),
    _rule("world_size", r"\bSLURM_NTASKS=(\d+)", "max"),
    _rule("store_timeout_s", r"Timed out after (\d+) seconds waiting for clients", "first"),
    _rule("process_groups", r"\[PG (?:ID )?(\d+)[^\]\n]{0,60}? Rank \d+\]", "set"),
)

# Launchers, in the order a wrapper usually nests them; the first one found in the log is reported.
LAUNCHERS = _table(
    (
        ("srun", r"\bsrun\b|slurmstepd"),
        ("mpirun", r"\bmpirun\b|\bmpiexec\b|\bprterun\b"),
        ("deepspeed", r"^\S{0,120}\s{0,8}\$?\s{0,8}deepspeed\s|deepspeed\.launcher|\[launch\.py:\d+:main\]"),
        ("accelerate", r"accelerate launch|'accelerate', 'launch'|accelerate\.commands\.launch"),
        ("torchrun", r"\btorchrun\b|torch\.distributed\.run|torch/distributed/run\.py|torch\.distributed\.elastic"),
    )
)

# Where the ranks run, as a paste shows it: the command it was fetched or started with. The first one found is reported.
CONTAINERS = _table(
    (
        ("kubernetes", r"\bkubectl\b|\bPyTorchJob\b|\bkubeflow\b"),
        ("docker", r"\b(?:docker|podman) (?:run|exec)\b"),
    )
)

FRAMEWORKS = _table(
    (
        ("megatron-lm", r"[Mm]egatron|pretrain_gpt\.py"),
        ("transformer-engine", r"transformer_engine|TransformerEngine|\[UB\]|UB_TIMEOUT"),
        ("autotrain-advanced", r"autotrain"),
        ("hf-accelerate", r"\baccelerate\b"),
        ("hf-transformers", r"transformers/|\*\*\*\*\* Running training \*\*\*\*\*"),
        ("hf-trl", r"\btrl\b|SFTTrainer"),
        ("deepspeed", r"[Dd]eep[Ss]peed"),
        ("pytorch-fsdp", r"FullyShardedDataParallel|--enable_fsdp|\bfsdp\b|FSDP"),
        ("pytorch-ddp", r"DistributedDataParallel"),
        ("llama-recipes", r"llama[-_]recipes|llama[-_]cookbook"),
        ("peft", r"\bpeft\b|LoRA|lora_"),
        ("nccl-tests", r"(?:all_reduce|all_gather|broadcast|reduce_scatter|alltoall|sendrecv)_perf"),
    )
)

# Model-parallel layouts: each puts every rank in several process groups (tensor-, pipeline-, context- and expert-
# parallel groups beside the data-parallel one; HSDP's shard and replicate groups; a DeviceMesh's dimensions), whose
# SeqNums count apart. Named as launch flags, config keys and the frameworks' own log lines print them.
_SIZE_NOT_ONE = r"(?![\s.:=]*1\b)"  # `tp_size=1`, `tensor_model_parallel_size ...... 1`
_NOT_ONE = r"(?![-_ ]size\b[\s.:=]*1\b| with size 1\b)"

PARALLELISM = _table(
    (
        # A size printed as 1 (Megatron's argument table and its "tensor-model-parallel size: 1") is no layout.
        ("tensor-parallel", rf"[Tt]ensor[-_ ](?:[Mm]odel[-_ ])?[Pp]arallel{_NOT_ONE}|\btp_size\b{_SIZE_NOT_ONE}"),
        (
            "pipeline-parallel",
            rf"[Pp]ipeline[-_ ](?:[Mm]odel[-_ ])?[Pp]arallel{_NOT_ONE}|\bpp_size\b{_SIZE_NOT_ONE}|PipelineModule|PipelineEngine",
        ),
        ("context-parallel", rf"[Cc]ontext[-_ ][Pp]arallel{_NOT_ONE}|\bcp_size\b{_SIZE_NOT_ONE}"),
        ("expert-parallel", rf"[Ee]xpert[-_ ](?:[Mm]odel[-_ ])?[Pp]arallel{_NOT_ONE}|\bep_size\b{_SIZE_NOT_ONE}"),
        ("hybrid-shard", r"HYBRID_SHARD"),
        ("device-mesh", r"DeviceMesh|init_device_mesh"),
    )
)

# Progress markers: the last one printed says how far the job got before it stopped.
STAGES = _table(
    (
        ("initializing torch distributed", r"> initializing torch distributed"),
        ("compiling dataset index builder", r"> compiling dataset index builder"),
        ("compiling and loading fused kernels", r"> compiling and loading fused kernels"),
        ("building model", r"building \w+ model|> building the model"),
        ("loading checkpoint", r"[Ll]oading checkpoint"),
        ("tokenizing dataset", r"Running tokenizer on dataset|Tokenizing|Grouping texts in chunks"),
        ("creating trainer", r"creating trainer"),
        ("userbuffers setup", r"\[UB\]|UB_TIMEOUT is set|\[UBP2P\]"),
        (
            "training",
            r"\*\*\*\*\* Running training \*\*\*\*\*| iteration +\d+/ *\d+ \||\{'loss': [\d.]+, '(?:grad_norm|learning_rate)'",
        ),
        (
            "saving checkpoint",
            r"[Ss]aving (?:model |latest |last )?checkpoint|saving checkpoint at iteration"
            r"|Saving (?:model|Optimizer state|current state) to \S{0,300}(?:pytorch_model|optimizer|checkpoint)"
            # accelerate's save_state names the engine it saves through, DeepSpeed or FSDP (0.21.0 to 1.15.0 read);
            # DeepSpeed's torch checkpoint engine at commit
            r"|Saving DeepSpeed Model and Optimizer|Saving FSDP (?:model|Optimizer)|\[Torch\] Checkpoint \S{1,200} is ready now!"
            # PyTorch 2.4-2.10 warn once when FSDP.state_dict_type is first used: a state-dict save is starting
            # (a resumed run's load warns too, but its training lines then follow and become the last stage)
            r"|FSDP\.state_dict_type\(\) and FSDP\.set_state_dict_type\(\) are being deprecated",
        ),
        ("building extension", r"Building extension module|Emitting ninja build file|PyTorch extensions root"),
        # cpp_extension prints this (verbose loads) once its build, or its wait on another process's build lock, is
        # over and before the import; DeepSpeed's op builder prints its load time after it: either way the build the
        # lines above announce is not where the job stopped
        ("extension loaded", r"Loading extension module \w+\.\.\.|Time to load \w+ op: "),
        # the Trainer's end-of-train() metrics (its log dict, or log_metrics' table): what follows is the final save
        ("training finished", r"\{'train_runtime': |\btrain_runtime\s+= "),
        ("building datasets", r"> building train, validation, and test datasets"),
        ("building dataset indices", r"building the indices on rank 0|Build and save the (?:document|sample|shuffle) index"),
    )
)

# Markers that a stage finished: the job got past it, so it is not where the job hangs.
STAGES_DONE = _table(
    (
        ("compiling and loading fused kernels", r">>> done with compiling and loading fused kernels"),
        ("compiling dataset index builder", r">>> done with dataset index builder"),
        ("initializing torch distributed", r"> initialized tensor model parallel with size"),
        ("building datasets", r"> finished creating \w+ datasets"),
        ("creating trainer", r"\*\*\*\*\* Running training \*\*\*\*\*"),
    )
)

# Wording that dates a release when no version line is printed: (software, the releases that print it, pattern).
# From the audit of release wheels and source tags (shared/research/audit-2026-11.md, "message history").
VERSION_WORDING: tuple[tuple[str, str, Pattern], ...] = tuple(
    (software, spec, _rule(f"{software} {spec}", pattern))
    for software, spec, pattern in (
        ("pytorch", ">=2.1", r"WorkNCCL\(SeqNum=\d+, OpType=\w+, NumelIn="),
        ("pytorch", "<2.1", r"WorkNCCL\(SeqNum=\d+, OpType=\w+, Timeout\(ms\)="),
        ("pytorch", "<2.3", r"NCCL watchdog thread terminated with exception"),
        ("pytorch", ">=2.3", r"Process group watchdog thread terminated with exception"),
        ("pytorch", ">=2.3,<2.6", r"Timeout at NCCL work: \d+, last enqueued NCCL work"),
        ("pytorch", ">=2.4,<2.6", r"Exception \(either an error or timeout\) detected by watchdog at work"),
        ("pytorch", ">=2.5", r"\[PG ID \d+ PG GUID |Received a dump signal due to a collective timeout from"),
        ("pytorch", ">=2.6", r"failure detected by watchdog at work sequence id|Stack trace of the failed collective not found"),
        ("nccl", "<2.24", r"NCCL INFO Bootstrap : Using"),
        ("nccl", ">=2.24", r"NCCL INFO Bootstrap: Using"),
    )
)
BAND_FACTS = {"pytorch": "torch_band", "nccl": "nccl_band"}

# Where PyTorch names the process group (read in ProcessGroupNCCL.cpp, its wheels' strings 2.1.2-2.7.1, and users' logs):
# the timeout line itself never does: WorkNCCL::logPrefix() is a static "[Rank N] " (2.3 to the current source; 2.1
# and 2.2 build the same text in checkTimeout), N being the rank in the work's group (in 2.3+ the group of whichever
# work logged first in the process). Only the group's own lines carry its prefix, ProcessGroupNCCL::logPrefix():
#   2.3      "[PG <n> Rank r]"             n counts the groups this process created (uid_), so it is not the same
#                                          number for one group on every rank
#   2.4      "[PG <name>( (<desc>)) Rank r]"  the group name, the same on every rank ("0 (default_pg)")
#   2.5+     "[PG ID <n> PG GUID <name>(<desc>) Rank r]"  ID counts per process as in 2.3; GUID is the name
# The progress line the watchdog prints right after the timeout ("Timeout at NCCL work: S", 2.4's "Exception (either
# an error or timeout) detected by watchdog at work: S", 2.6's "failure detected by watchdog at work sequence id: S")
# carries it, so a rank's progress line at the SeqNum of its timeout names the group of the timed-out work.
# The optional prefix below is kept for logs that put one on the timeout line.
WATCHDOG_RE = re.compile(
    r"(?:\[PG (?P<pg_head>(?:ID )?(?P<pg>\d+)[^\]\n]{0,80}?) )?"
    r"Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+)(?:, NumelIn=(?P<numel_in>-?\d+), NumelOut=(?P<numel_out>-?\d+)(?=,))?"
    r"(?:[^)\n]{0,200}?, Timeout\(ms\)=(?P<timeout>\d+)\)"
    # "ran for N milliseconds" follows in every release; a paste cut at the right edge may end the line before it,
    r"(?: ran for (?P<ran>\d+)(?= m)|(?=(?: (?:r(?:a(?:n(?: (?:f(?:o(?:r(?: \d*)?)?)?)?)?)?)?)?)?$))"
    # or inside the record: what came before the cut still places the rank (a number is kept only up to its comma)
    r"|(?=,[^)\n]{0,200}?(?:Timeout\(ms\)=\d*)?$))",
    re.MULTILINE,
)
# PyTorch 2.3 prints "Timeout at NCCL work"; 2.4+ adds "Exception (either an error or timeout) detected by
# watchdog at work"; newer code says "NCCL error is detected by watchdog at work" for errors.
PROGRESS_RE = re.compile(
    r"(?:\[PG (?P<pg_head>[^\]\n]{1,120}?) )?Rank (?P<rank>\d+)\] (?:Timeout at NCCL work|Exception \(either an error or timeout\) detected by watchdog "
    r"at work|NCCL error is detected by watchdog at work|[^\n]{0,60}?failure detected by watchdog at work sequence id)"
    r": (?P<seq>\d+)[^\n]{0,80}? last enqueued (?:NCCL )?work: (?P<enqueued>-?\d+), "
    r"last completed (?:NCCL )?work: (?P<completed>-?\d+)"
)
# PyTorch >= 2.5: a rank that learns of a timeout (its own: "this local rank"; another's, through the store:
# " rank N") prints its own progress before it dumps and aborts (ProcessGroupNCCL::getNCCLWatchdogTimeoutErrorMsg;
# the generic backend's copy says "Last enqueued <backend> work"). A rank whose last enqueued number is below the
# others' never finished issuing the collective they wait in: it did not call it, or is stuck inside the call.
DUMP_SIGNAL_RE = re.compile(
    r"Rank (?P<rank>\d+)\] Received a dump signal due to a collective timeout from (?:this local rank|\s?rank \d+) and "
    r"we will try our best to dump the debug info\. Last enqueued \w+ work: (?P<enqueued>-?\d+), last completed \w+ "
    r"work: (?P<completed>-?\d+)"
)
# TORCH_DISTRIBUTED_DEBUG=DETAIL logs each collective each rank runs (ProcessGroupWrapper.cpp, INFO).
FINGERPRINT_RE = re.compile(
    r"\[Rank (?P<rank>\d+)\] Running collective: CollectiveFingerPrint\(SequenceNumber=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+)"
)
RANK_PREFIX_RE = re.compile(r"\[rank(\d+)\]:")
# PyTorch >= 2.2 prefixes each line with "[rankN]:"; checking these as literals in the scanner's one pass
# is far cheaper than collecting every prefix of a long log.
RANK_PREFIXES = tuple(f"[rank{n}]:" for n in range(1024))
SMALL_TEXT_CHARS = 256 * 1024
WATCHDOG_LITERALS = required_literals(WATCHDOG_RE.pattern)
FINGERPRINT_LITERALS = required_literals(FINGERPRINT_RE.pattern)
PROGRESS_LITERALS = required_literals(PROGRESS_RE.pattern)
DUMP_SIGNAL_LITERALS = required_literals(DUMP_SIGNAL_RE.pattern)


@dataclass
class RankState:
    rank: int
    op: str | None = None
    seq: int | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    timeout_ms: int | None = None
    ran_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    line: int | None = None
    pg: str | None = None
    fp_seq: int | None = None  # the last collective TORCH_DISTRIBUTED_DEBUG=DETAIL says this rank ran
    fp_op: str | None = None
    group: str | None = None  # the timed-out work's process group by a name every rank shares (pg_name below)
    line_rank: int | None = None  # the global rank in the timeout line's "[rankN]:" prefix (PyTorch >= 2.2)
    clash: bool = False  # another timeout line said "[Rank N]" of another collective: another process or run


@functools.cache
def fact_literals() -> frozenset[tuple[str, bool]]:
    """Every literal the fact rules look for, so a scanner can check them all in one pass."""
    patterns = (
        FACT_RULES
        + LAUNCHERS
        + CONTAINERS
        + FRAMEWORKS
        + PARALLELISM
        + STAGES
        + STAGES_DONE
        + tuple(p for _, _, p in VERSION_WORDING)
    )
    found = {(lit, False) for p in patterns for lit in p.literals}
    extra = (
        WATCHDOG_LITERALS
        + PROGRESS_LITERALS
        + DUMP_SIGNAL_LITERALS
        + FINGERPRINT_LITERALS
        + RANK_PREFIXES
        + ("--nproc", "--num_gpus", "]<stderr>:", "]<stdout>:")
    )
    return frozenset(found | {(lit, False) for lit in extra})


def facts_extract(
    scanner: TextScanner, lines: LineLocator, labelled: bool | None = None
) -> tuple[dict[str, Any], dict[int, RankState]]:
    """All generic facts of one text but those of the line-budgeted rules (rule_values_read), and the per-rank
    watchdog state. `labelled`: whether the file the text is part of is srun --label's (srun_labelled); by default,
    told by the text's own start (a whole file)."""
    facts: dict[str, Any] = {}
    for rule in FACT_RULES:
        if rule.keep == "first":
            match = next(rule.matches(scanner), None)
            if match is not None:
                facts.setdefault(rule.name, match.group(1))
    for software, spec, pattern in VERSION_WORDING:
        if next(pattern.matches(scanner), None):
            facts.setdefault(BAND_FACTS[software], set()).add(spec)
    for key in ("torch_band", "nccl_band"):
        if key in facts:
            facts[key] = sorted(facts[key])
    launchers = _first_offsets(scanner, LAUNCHERS)
    if launchers:
        facts["launcher"] = launchers[0]
        facts["launchers"] = launchers
    containers = _first_offsets(scanner, CONTAINERS)
    if containers:
        facts["container"] = containers[0]
    frameworks = [p.name for p in FRAMEWORKS if next(p.matches(scanner), None)]
    if frameworks:
        facts["frameworks"] = frameworks
    parallelism = [p.name for p in PARALLELISM if next(p.matches(scanner), None)]
    if parallelism:
        facts["parallelism"] = parallelism
    stage = _last_stage(scanner)
    if stage:
        facts["stage"] = stage
    done = [p.name for p in STAGES_DONE if next(p.matches(scanner), None)]
    if done:
        facts["stages_done"] = done
    ranks = ranks_extract(scanner, lines)
    launched = _launch_world_size(scanner)
    if launched:
        facts["world_size"] = max(launched, facts.get("world_size", 0))
    seen = _ranks_seen(scanner, ranks, srun_labelled(scanner.text) if labelled is None else labelled)
    if seen:
        facts["ranks"] = seen
    return facts, ranks


_NPROC_RE = re.compile(r"--nproc[_-]per[_-]node[= ](\d{1,4})\b")
_NNODES_RE = re.compile(r"--nnodes[= ](\d{1,5})(?::(\d{1,5}))?\b")
_NUM_GPUS_RE = re.compile(r"--num_gpus[= ](\d{1,4})\b")
_NUM_NODES_RE = re.compile(r"--num_nodes[= ](\d{1,5})\b")


def _launch_world_size(scanner: TextScanner) -> int | None:
    """World size from a torchrun (`--nnodes N --nproc_per_node M`) or deepspeed (`--num_nodes N
    --num_gpus M`) launch line: nodes times processes per node. An elastic range `--nnodes 2:4` gives
    no size."""
    text = scanner.text
    size = 0
    for literal, per_node, nodes_re in (("--nproc", _NPROC_RE, _NNODES_RE), ("--num_gpus", _NUM_GPUS_RE, _NUM_NODES_RE)):
        for start, end in scanner.lines_with(literal):
            end = min(end, start + 4096)
            per = per_node.search(text, start, end)
            if not per:
                continue
            nodes = nodes_re.search(text, start, end)
            if nodes and nodes.lastindex == 2 and nodes.group(2) and nodes.group(2) != nodes.group(1):
                continue
            size = max(size, int(per.group(1)) * (int(nodes.group(1)) if nodes else 1))
    return size or None


def rank_facts(ranks: dict[int, RankState]) -> dict[str, Any]:
    """Facts of the whole job's watchdog states: computed once all files (and windows) are read, since one
    file may hold some ranks and another the rest."""
    if not ranks:
        return {}
    facts: dict[str, Any] = {}
    fingerprints = {(s.fp_seq, s.fp_op) for s in ranks.values() if s.fp_seq is not None}
    if len([s for s in ranks.values() if s.fp_seq is not None]) > 1 and len(fingerprints) > 1:
        facts["ranks_disagree"] = True  # DETAIL shows the ranks' last collectives differ: they took different paths
    ranks = {r: s for r, s in ranks.items() if s.op or s.last_completed is not None or s.seq is not None}
    if not ranks:
        return facts
    ops = sorted({r.op for r in ranks.values() if r.op})
    if ops:
        facts["op_type"] = ops[0] if len(ops) == 1 else ops
    timeouts = sorted({r.timeout_ms for r in ranks.values() if r.timeout_ms})
    if timeouts:
        facts["timeout_ms"] = timeouts[0] if len(timeouts) == 1 else timeouts
    ran = [r.ran_ms for r in ranks.values() if r.ran_ms]
    if ran:
        facts["ran_for_ms"] = max(ran)
    seqs = sorted({r.seq for r in ranks.values() if r.seq is not None})
    if seqs:
        facts["seq_num"] = seqs[0] if len(seqs) == 1 else seqs
    facts["timed_out_ranks"] = sorted(r for r, s in ranks.items() if s.op or s.last_completed is not None)
    return facts


MAX_FACT_LINES = 500  # a file's set and max facts (hosts, interfaces) are complete long before this in real logs
# What a fact may hold once the job is read: the page, the JSON and a shared report echo facts, so a value
# captured from a 29 MB line must not come back whole. 200 characters hold any host name, interface,
# version or path a fact names; 1024 values hold the ranks the scanner tells apart (RANK_PREFIXES).
MAX_FACT_CHARS = 200
MAX_FACT_VALUES = 1024


def facts_bounded(facts: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The facts with every text value cut to MAX_FACT_CHARS (ending in "…") and every list to its first
    MAX_FACT_VALUES values, at any depth; and the names of the facts that were cut, sorted."""
    cut: set[str] = set()
    bounded = {}
    for key, value in facts.items():
        kept = _bounded(value)
        if kept != value:
            cut.add(key)
        bounded[key] = kept
    return bounded, sorted(cut)


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_FACT_CHARS else value[: MAX_FACT_CHARS - 1] + "…"
    if isinstance(value, list):
        return [_bounded(v) for v in value[:MAX_FACT_VALUES]]
    if isinstance(value, dict):
        return {_bounded(k): _bounded(v) for k, v in list(value.items())[:MAX_FACT_VALUES]}
    return value


# The rules whose fact is every value (a set) or the largest one: each reads at most MAX_FACT_LINES matching lines of a
# file, counted from its start however the file is cut into windows and runs, so every way of reading it agrees.
BUDGETED_RULES = tuple(index for index, rule in enumerate(FACT_RULES) if rule.keep != "first")


def rule_values_read(scanner: TextScanner, start: int, end: int, left: dict[int, int]) -> dict[int, list[str]]:
    """The values the budgeted rules capture on the lines that start from `start` to `end` (a window's own part), each
    rule on at most `left[index]` lines (what the file's earlier lines left of its budget), in line order."""
    values: dict[int, list[str]] = {}
    for index in BUDGETED_RULES:
        budget = left.get(index, MAX_FACT_LINES)
        if budget <= 0:
            continue
        found: list[str] = []
        for match in FACT_RULES[index].matches(scanner):
            if match.start() < start:
                continue
            if match.start() >= end or len(found) >= budget:
                break
            found.append(match.group(1))
        if found:
            values[index] = found
    return values


def rule_values_extend(values: dict[int, list[str]], later: dict[int, list[str]]) -> None:
    """Add the values a later stretch of the same file captured, as far as each rule's budget goes."""
    for index, found in later.items():
        kept = values.setdefault(index, [])
        kept += found[: MAX_FACT_LINES - len(kept)]


def facts_with_rule_values(facts: dict[str, Any], values: dict[int, list[str]]) -> dict[str, Any]:
    """A file's facts joined with what its budgeted rules captured (sets sorted, the largest world size), the fact
    rules' names first, in their table's order, as the page lists them."""
    derived: dict[str, Any] = {}
    for index, found in values.items():
        rule = FACT_RULES[index]
        if rule.keep == "set":
            derived.setdefault(rule.name, set()).update(found)
        else:
            derived[rule.name] = max([int(value) for value in found] + [derived.get(rule.name, 0)])
    joined: dict[str, Any] = {}
    for name in dict.fromkeys(rule.name for rule in FACT_RULES):
        if name in derived:  # joined with what other readers found (a launch line's world size)
            value = derived[name]
            joined[name] = (
                sorted(value | set(facts.get(name) or ())) if isinstance(value, set) else max(value, facts.get(name) or 0)
            )
        elif name in facts:
            joined[name] = facts[name]
    joined.update((key, value) for key, value in facts.items() if key not in joined)
    return joined


def _first_offsets(scanner: TextScanner, table: tuple[Pattern, ...]) -> list[str]:
    found = []
    for pattern in table:
        match = next(pattern.matches(scanner), None)
        if match:
            found.append((match.start(), pattern.name))
    return [name for _, name in sorted(found)]


def _last_stage(scanner: TextScanner) -> str | None:
    best: tuple[int, str] | None = None
    for pattern in STAGES:
        last = scanner.last_match(pattern.regex, pattern.literals)
        if last is not None and (best is None or last.start() > best[0]):
            best = (last.start(), pattern.name)
    return best[1] if best else None


def ranks_extract(scanner: TextScanner, lines: LineLocator) -> dict[int, RankState]:
    ranks: dict[int, RankState] = {}
    for m in scanner.matches(WATCHDOG_RE, WATCHDOG_LITERALS):
        rank = int(m["rank"])
        seen = RankState(
            rank=rank,
            op=m["op"],
            seq=int(m["seq"]),
            numel_in=int(m["numel_in"]) if m["numel_in"] else None,
            numel_out=int(m["numel_out"]) if m["numel_out"] else None,
            timeout_ms=int(m["timeout"]) if m["timeout"] else None,
            ran_ms=int(m["ran"]) if m["ran"] else None,
            pg=m["pg"],
            group=pg_name(m["pg_head"], m.group(0)),
            line_rank=_line_rank(scanner.text, m.start()),
        )
        if rank_state_merge(ranks, seen) is seen:  # a line quoted again (in what(), a traceback) is no clash
            seen.line = lines.line_number(m.start())  # counted for a rank's first line only: it costs a count
    for m in scanner.matches(FINGERPRINT_RE, FINGERPRINT_LITERALS):
        state = ranks.setdefault(int(m["rank"]), RankState(rank=int(m["rank"])))
        state.fp_seq, state.fp_op = int(m["seq"]), m["op"]  # the last one printed wins
    for m in scanner.matches(PROGRESS_RE, PROGRESS_LITERALS):
        rank = int(m["rank"])
        state = ranks.setdefault(rank, RankState(rank=rank))
        state.last_enqueued, state.last_completed = int(m["enqueued"]), int(m["completed"])
        if state.seq is None:
            state.seq = int(m["seq"])
        if state.group is None and state.seq == int(m["seq"]):
            state.group = pg_name(m["pg_head"], m.group(0))
    for m in scanner.matches(DUMP_SIGNAL_RE, DUMP_SIGNAL_LITERALS):
        rank = int(m["rank"])
        state = ranks.setdefault(rank, RankState(rank=rank))
        if state.last_completed is None:  # the watchdog's own progress line, where printed, says the same
            state.last_enqueued, state.last_completed = int(m["enqueued"]), int(m["completed"])
    return ranks


def rank_state_merge(into: dict[int, RankState], state: RankState) -> RankState:
    """Add one reading of a rank (another window, another file) to `into`: the first reading stays, marked as a clash
    when the two disagree (rank_states_clash). Returns the reading kept."""
    known = into.setdefault(state.rank, state)
    if known is not state:
        if rank_states_clash(known, state):
            known.clash = True
        else:  # the same work, read again from a line that kept more of it (the first was cut at the right edge)
            for name in _WORK_DETAILS:
                if getattr(known, name) is None:
                    setattr(known, name, getattr(state, name))
    return known


_WORK_DETAILS = ("numel_in", "numel_out", "timeout_ms", "ran_ms")


def rank_states_clash(known: RankState, other: RankState) -> bool:
    """Two readings of one rank number (two windows of a file, two files) that name different timed-out works, or
    come from different global ranks: the number is a rank within a smaller group, printed by two processes, or the
    log holds two runs."""
    if other.clash:
        return True
    if known.op and other.op and (known.op, known.seq) != (other.op, other.seq):
        return True
    if None not in (known.numel_in, other.numel_in) and known.numel_in != other.numel_in:
        return True  # a size a line cut at the right edge did not keep is no difference
    return None not in (known.line_rank, other.line_rank) and known.line_rank != other.line_rank


_PG_GUID_RE = re.compile(r"ID \d+ PG GUID ([^\s(]+)")
_PG_NAME_DESC_RE = re.compile(r"(\S+) \(")


def pg_name(head: str | None, line: str) -> str | None:
    """The name of the process group a "[PG ... Rank r]" prefix names, when it is a name that every rank of the group
    prints alike: 2.5+'s GUID, 2.4's group name (with its description, or on a line in 2.4-2.5 wording). A bare
    number on a 2.3 line counts the groups the process created, which differs between ranks of one group."""
    if not head:
        return None
    guid = _PG_GUID_RE.match(head)
    if guid:
        return guid.group(1)
    named = _PG_NAME_DESC_RE.match(head)
    if named:
        return named.group(1)
    if head.isdigit() and "Exception (either an error or timeout)" in line:
        return head
    return None


def _line_rank(text: str, offset: int) -> int | None:
    """The "[rankN]:" prefix PyTorch >= 2.2 puts before its log lines, on the line of `offset`, if any."""
    start = max(text.rfind("\n", max(0, offset - 200), offset) + 1, offset - 200)
    m = RANK_PREFIX_RE.search(text, start, offset)
    return int(m.group(1)) if m else None


_TAG_OUTPUT_RE = re.compile(TAG_OUTPUT_PREFIX)
_SRUN_LABEL_RE = re.compile(SRUN_LABEL_PREFIX, re.MULTILINE)


SRUN_HEAD_CHARS = 65536  # srun --label is told by the start of a file


def srun_labelled(head: str) -> bool:
    """srun --label's `N: ` on most lines of a file's start: then that prefix names a rank wherever it is in the file."""
    head = head[:SRUN_HEAD_CHARS]
    labelled = len(_SRUN_LABEL_RE.findall(head))
    return labelled >= 4 and labelled * 2 >= head.count("\n")


def _ranks_seen(scanner: TextScanner, ranks: dict[int, RankState], labelled: bool) -> list[int]:
    """Every rank the log shows: watchdog lines, PyTorch's `[rankN]:` prefix, mpirun --tag-output's
    `[job,rank]<stderr>:` and, in a file `labelled` by srun --label (srun_labelled), its `N: `."""
    seen = set(ranks)
    text = scanner.text
    # A small text is searched outright: asking the literal pass about 1,024 prefixes costs more than the search
    # (a job of 5,000 tiny rank files spent 6.6 s there).
    present = scanner.present_among(RANK_PREFIXES) if len(text) > SMALL_TEXT_CHARS else None
    if present is not None and f"[rank{len(RANK_PREFIXES) - 1}]:" not in present:
        seen.update(int(prefix[5:-2]) for prefix in present)
    elif "[rank" in text:
        seen.update(int(r) for r in set(RANK_PREFIX_RE.findall(text)))
    if scanner.present_among(("]<stderr>:", "]<stdout>:")) != set():
        seen.update(int(r) for r in set(_TAG_OUTPUT_RE.findall(text)))
    if labelled:
        seen.update(int(r) for r in set(_SRUN_LABEL_RE.findall(text)))
    return sorted(seen)


def facts_merge_window(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Facts of a later window of the same file: the last stage reached is the later one."""
    stage = new.get("stage")
    facts_merge(into, new)
    if stage:
        into["stage"] = stage


def facts_merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge another file's (or a later window's) facts: sets are joined, the world size is the largest,
    ordered lists keep their order (launchers by first appearance, frameworks and stages by table)."""
    for key, value in new.items():
        if key not in into:
            into[key] = value
        elif key in ORDERED_FACTS:
            into[key] = ORDERED_FACTS[key](into[key], value)
        elif isinstance(value, list) and isinstance(into[key], list):
            into[key] = sorted(set(into[key]) | set(value), key=_order)
        elif key == "world_size":
            into[key] = max(into[key], value)


def _table_order(table) -> Any:
    names = [p.name for p in table]
    return lambda old, new: sorted(set(old) | set(new), key=names.index)


ORDERED_FACTS = {
    "launchers": lambda old, new: old + [n for n in new if n not in old],
    "frameworks": _table_order(FRAMEWORKS),
    "parallelism": _table_order(PARALLELISM),
    "stages_done": _table_order(STAGES_DONE),
}


def _order(value: Any) -> tuple:
    """Numbers in numeric order, then text."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


class FactsReader:
    """Facts of the job (collectives, timeouts, ranks, stages, launchers, versions) and each rank's watchdog state."""

    name = "facts"
    literals = fact_literals()

    def read(self, window: Window, part: FileReading) -> None:
        part.facts, part.ranks = facts_extract(window.scanner, window.lines, window.file.srun_labelled)
        left = {index: MAX_FACT_LINES - len(values) for index, values in window.file.rule_values.items()}
        part.rule_values = rule_values_read(window.scanner, window.start, window.limit, left)

    def merge(self, into: FileReading, later: FileReading) -> None:
        facts_merge_window(into.facts, later.facts)
        rule_values_extend(into.rule_values, later.rule_values)
        for state in later.ranks.values():
            known = rank_state_merge(into.ranks, state)
            if known is not state and state.fp_seq is not None:
                known.fp_seq, known.fp_op = state.fp_seq, state.fp_op  # a later window's last fingerprint wins

    def shift(self, part: FileReading, by: int) -> None:
        for state in part.ranks.values():
            if state.line is not None:
                state.line += by

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        facts = facts_with_rule_values(reading.facts, reading.rule_values)
        gathered = job.parts.setdefault("fact_lists", {})  # unordered list facts, joined in finish: sorting the
        for key, value in facts.items():  # joined list at every file was quadratic (5,000 rank files: 17 s)
            if isinstance(value, list) and key not in ORDERED_FACTS:
                first, joined, files = gathered.get(key) or (value, set(), 0)
                joined.update(value)
                gathered[key] = (first, joined, files + 1)
                job.facts.setdefault(key, first)  # its place among the facts, as the first file gave it
            else:
                facts_merge(job.facts, {key: value})
        files = job.parts.setdefault("rank_files", {})  # rank -> the file that first showed it
        for state in reading.ranks.values():
            known = job.ranks.get(state.rank)
            first = files.setdefault(state.rank, reading.label)
            if known is not None and first != reading.label and rank_states_clash(known, state):
                job.parts.setdefault("rank_clashes", {}).setdefault((first, reading.label), set()).add(state.rank)
            rank_state_merge(job.ranks, state)

    def finish(self, job: JobParts, messages: object) -> None:
        """The list facts joined across files (one file's list as it read it; several files' values sorted, as
        facts_merge sorts them). Two files in which two or more of the same ranks timed out in different collectives
        are two runs of a job (an archive of two attempts, a log folder reused): said as a fact, since merging them
        reads as a desync."""
        for key, (first, joined, files) in job.parts.get("fact_lists", {}).items():
            job.facts[key] = first if files == 1 else sorted(joined, key=_order)
        for (first, later), ranks in sorted(job.parts.get("rank_clashes", {}).items(), key=lambda item: str(item[0])):
            if len(ranks) >= 2:
                shown = ", ".join(str(rank) for rank in sorted(ranks)[:8])
                job.facts["runs_mixed"] = f"{first} and {later} both show ranks {shown}, timed out in different collectives"
                return


READER = FactsReader()
