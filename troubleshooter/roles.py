"""Roles: what an answer means to the script composer, independent of the question's id or wording.

A question declares `role: launcher` and its choice ids must then be the launcher names below, so
script parts can say "only for mpirun" or "only on PyTorch >= 2.5" without knowing any tree.
Roles not listed here are free names (a value question's placeholder, or a tree's own choice
role); their values are whatever the question offers.
"""

from __future__ import annotations

ROLE_VALUES: dict[str, tuple[str, ...]] = {
    # How the ranks are started; decides how settings reach them (environment, mpirun -x, ...).
    "launcher": ("torchrun", "accelerate", "deepspeed", "mpirun", "srun"),
    # PyTorch release family: 2.2 renamed NCCL_* knobs to TORCH_NCCL_*; 2.5 has the Flight Recorder tools.
    "torch": ("lt-2.2", "2.2-2.4", "ge-2.5"),
    # Where the process group (and so the collective timeout) is created.
    "framework": ("megatron", "hf-trainer", "autotrain", "accelerate", "deepspeed", "pytorch"),
    # TransformerEngine before/after 1.9, when userbuffers stopped requiring MPI to bootstrap.
    "te": ("lt-1.9", "ge-1.9"),
    "container": ("docker", "kubernetes", "bare-metal"),
}

# Every leaf's script has a launcher: it decides the wrapper's shape.
ALWAYS_REQUIRED = ("launcher",)

# Launchers whose ranks inherit the wrapper's environment.
ENV_LAUNCHERS = ("torchrun", "accelerate", "deepspeed", "srun")
