"""Every environment variable a generated script may set, with where it is read and since when.

The validator refuses a script part that sets anything not listed here, so a variable that does
not exist (NCCL_TIMEOUT) or that is never a fix (NCCL_ALGO, NCCL_PROTO) cannot reach a script.
Entries follow ../shared/research/facts.md; `before_2_2` is the only name PyTorch < 2.2 reads
(2.2 renamed them to TORCH_NCCL_* and made the old names deprecated aliases).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Variable:
    name: str
    reader: str  # who reads it: shown in the script next to the export
    before_2_2: str | None = None
    needs: dict[str, frozenset[str]] = field(default_factory=dict)  # role -> values it may be emitted under
    debug_only: bool = False  # NCCL's "debugging" class: for a test run, not to keep in job scripts
    # (release, name): from this PyTorch release (MAJOR.MINOR) the primary name is another one. The script
    # reads the installed release at run time and exports the name that release reads; see scripts.py.
    renamed: tuple[str, str] | None = None


def _var(
    name: str,
    reader: str,
    *,
    before_2_2: str | None = None,
    debug_only: bool = False,
    renamed: tuple[str, str] | None = None,
    **needs: tuple[str, ...],
) -> Variable:
    return Variable(name, reader, before_2_2, {role: frozenset(values) for role, values in needs.items()}, debug_only, renamed)


_FLIGHT_RECORDER = {"torch": ("ge-2.5",)}
# PyTorch 2.8 renamed three Flight Recorder knobs to TORCH_FR_* (strings of the 2.7.1 and 2.8.0 wheels'
# libtorch_cuda.so / libtorch_cpu.so); the old names still work there with a one-time deprecation warning.
# TORCH_NCCL_DUMP_ON_TIMEOUT kept its name until 2.15, which reads TORCH_FR_DUMP_ON_TIMEOUT first (the 2.15.0
# wheel's libraries list the two names as one setting's {new, old}; 2.14.1 has only the old one: audit-turn3.md #88).

VARIABLES: dict[str, Variable] = {
    v.name: v
    for v in (
        # NCCL itself
        _var("NCCL_DEBUG", "NCCL"),
        _var("NCCL_DEBUG_SUBSYS", "NCCL"),
        _var("NCCL_DEBUG_FILE", "NCCL"),
        _var("NCCL_SOCKET_IFNAME", "NCCL"),
        _var("NCCL_SOCKET_FAMILY", "NCCL"),
        _var("NCCL_IB_HCA", "NCCL"),
        _var("NCCL_IB_DISABLE", "NCCL", debug_only=True),
        _var("NCCL_P2P_DISABLE", "NCCL", debug_only=True),
        _var("NCCL_P2P_LEVEL", "NCCL"),
        _var("NCCL_SHM_DISABLE", "NCCL", debug_only=True),
        # PyTorch c10d / ProcessGroupNCCL
        _var("TORCH_NCCL_ASYNC_ERROR_HANDLING", "PyTorch", before_2_2="NCCL_ASYNC_ERROR_HANDLING"),
        _var("TORCH_NCCL_BLOCKING_WAIT", "PyTorch", before_2_2="NCCL_BLOCKING_WAIT"),
        _var("TORCH_NCCL_DESYNC_DEBUG", "PyTorch", before_2_2="NCCL_DESYNC_DEBUG"),
        _var(
            "TORCH_NCCL_TRACE_BUFFER_SIZE", "PyTorch Flight Recorder", renamed=("2.8", "TORCH_FR_BUFFER_SIZE"), **_FLIGHT_RECORDER
        ),
        _var(
            "TORCH_NCCL_DUMP_ON_TIMEOUT",
            "PyTorch Flight Recorder",
            renamed=("2.15", "TORCH_FR_DUMP_ON_TIMEOUT"),
            **_FLIGHT_RECORDER,
        ),
        _var(
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
            "PyTorch Flight Recorder",
            renamed=("2.8", "TORCH_FR_DUMP_TEMP_FILE"),
            **_FLIGHT_RECORDER,
        ),
        _var("TORCH_NCCL_TRACE_CPP_STACK", "PyTorch Flight Recorder", renamed=("2.8", "TORCH_FR_CPP_STACK"), **_FLIGHT_RECORDER),
        _var("TORCH_NCCL_ENABLE_TIMING", "PyTorch Flight Recorder", **_FLIGHT_RECORDER),
        _var("TORCH_DISTRIBUTED_DEBUG", "PyTorch"),
        _var("TORCH_CPP_LOG_LEVEL", "PyTorch"),
        _var("TORCH_SHOW_CPP_STACKTRACES", "PyTorch"),
        _var("GLOO_SOCKET_IFNAME", "PyTorch Gloo backend"),
        _var("MASTER_ADDR", "PyTorch env:// rendezvous"),
        _var("MASTER_PORT", "PyTorch env:// rendezvous"),
        _var("TORCH_EXTENSIONS_DIR", "torch.utils.cpp_extension"),
        _var("MAX_JOBS", "torch.utils.cpp_extension (ninja -j)"),
        # CUDA, TransformerEngine, UCX, DeepSpeed, Hugging Face
        _var("CUDA_DEVICE_MAX_CONNECTIONS", "CUDA runtime (required by Megatron-LM TP/SP)"),
        # Read by initialize_ub() only in TransformerEngine 1.9 to 2.1: 2.2 (commit f8eddcf) groups ranks by
        # world_rank // tp_size and never reads it (audit #13); hence the te_ub condition.
        _var("NVTE_UB_SOCKET_IFNAME", "TransformerEngine 1.9-2.1 userbuffers", te_ub=("1.9-2.1",)),
        _var("UB_SKIPMC", "TransformerEngine userbuffers"),
        _var("UCX_NET_DEVICES", "UCX (Open MPI's UCX PML)"),
        _var("DEEPSPEED_TIMEOUT", "deepspeed.init_distributed (minutes)", framework=("deepspeed",)),
        _var("HF_DATASETS_CACHE", "Hugging Face datasets"),
    )
}

# Variables that DeepSpeed's multi-node launcher forwards to remote nodes by name prefix
# (deepspeed/launcher/runner.py EXPORT_ENVS); anything else must go into .deepspeed_env.
DEEPSPEED_FORWARDED_PREFIXES = ("NCCL", "PYTHON", "MV2", "UCX", "MLFLOW")


def variable_name(variable: Variable, torch: str | None) -> str:
    """The name this PyTorch family reads: the old NCCL_* alias before 2.2, the TORCH_NCCL_* name after."""
    if torch == "lt-2.2" and variable.before_2_2:
        return variable.before_2_2
    return variable.name


def renamed_names() -> set[str]:
    """The newer names of version-renamed variables (TORCH_FR_*), which scripts may export too."""
    return {v.renamed[1] for v in VARIABLES.values() if v.renamed}
