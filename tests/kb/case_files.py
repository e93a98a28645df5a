"""Build small, valid case files in a temporary content/ so each schema rule can be broken on its own."""

from pathlib import Path

VALID_FRONT_MATTER = """\
slug: {slug}
title: "Test case {slug}"
summary: A job hangs at the first barrier because rank 0 is still busy.
aliases: [{slug}-old]
tags:
  framework: [pytorch]
  component: [nccl]
  phase: [init]
applies_to:
  - software: PyTorch
    versions: ">= 2.2"
symptoms:
  - The job stops printing after start-up.
signatures:
  - id: watchdog-barrier
    description: The first barrier timed out.
    pattern: 'Watchdog caught collective operation timeout: WorkNCCL\\(SeqNum=1, OpType=ALLREDUCE'
    weight: 6
    anchor: true
    examples:
      - "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out."
related: []
references:
  - title: PyTorch distributed docs
    url: https://docs.pytorch.org/docs/stable/distributed.html
    kind: docs
  - title: NCCL environment variables
    url: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
    kind: docs
  - title: ProcessGroupNCCL source
    url: https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
    kind: source
last_reviewed: 2026-11-21
"""

VALID_BODY = """
## Symptoms {#symptoms}

The job stops.

## Log signatures {#signatures}

```text
Watchdog caught collective operation timeout
```

## Root causes {#root-cause}

Rank 0 is busy.

## Fix {#fix}

### Find the busy rank {#fix-1}

Run `py-spy dump --pid PID`.

### Raise the timeout {#fix-2}

Pass `timeout=` to `init_process_group`.

## Prevention {#prevention}

Do the work before the barrier.

## Background {#background}

Barriers are collectives.
"""


def case_text(slug: str, *, front: str | None = None, body: str | None = None) -> str:
    return (
        "---\n"
        + (front if front is not None else VALID_FRONT_MATTER.format(slug=slug))
        + "---\n"
        + (body if body is not None else VALID_BODY)
    )


def write_case(content_dir: Path, slug: str, text: str | None = None) -> Path:
    path = content_dir / "cases" / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else case_text(slug), encoding="utf-8")
    return path


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing `needle`: tests state where an error must point."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")
