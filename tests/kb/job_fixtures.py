"""Job archives as torchrun writes them (`--log-dir`): <log_dir>/<run_id>_<random>/attempt_0/<local_rank>/
{stdout,stderr}.log, built for tests. Rank 0 tokenises the dataset while the others wait in the first barrier,
the shape of a real 4-GPU Hugging Face run (PyTorch 2.3 watchdog wording)."""

from __future__ import annotations

import io
import tarfile
import zipfile

RUN = "logs/hf-ft-71_k2p9x1/attempt_0"
WATCHDOG = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 18001{r:02d} "
    "milliseconds before timing out.\n"
)
TEARDOWN = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:577] [Rank {r}] Some NCCL operations have failed or timed out. Due to "
    "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
    "data.\n"
)


def torchrun_job(nprocs: int = 4, silent: int = 0, mute: bool = False) -> dict[str, bytes]:
    """The files of one node's torchrun log dir. Rank `silent` prints its tokenizer progress and never reaches
    the barrier (with `mute`, it prints nothing at all); every other rank times out in it."""
    files: dict[str, bytes] = {}
    for rank in range(nprocs):
        out = f"[INFO|trainer.py:641] rank {rank}: loading tokenizer from meta-llama/Meta-Llama-3-8B\n"
        if rank == silent:
            err = "" if mute else ("Running tokenizer on dataset:  37%|###7      | 18500/50000 [04:12<07:09, 73.31 examples/s]\n")
            out = "" if mute else out
        else:
            err = WATCHDOG.format(r=rank) + TEARDOWN.format(r=rank)
        files[f"{RUN}/{rank}/stdout.log"] = out.encode()
        files[f"{RUN}/{rank}/stderr.log"] = err.encode()
    return files


def tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1731400000
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
