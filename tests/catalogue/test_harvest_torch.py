"""The PyTorch harvester's reading of a library's string table: which entries open a translation unit's region."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "catalogue"))

from harvest_torch import CLOSED_BY_TYPEINFO, KEEP_REGION, MANGLED, SOURCE_PATH  # noqa: E402


def unit(text: str) -> str | None:
    m = SOURCE_PATH.match(text)
    return m.group(1) if m else None


def test_a_unit_path_is_read_as_the_build_left_it() -> None:
    assert unit("../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp") == "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
    assert unit("/__w/pytorch/pytorch/torch/csrc/CudaIPCTypes.cpp") == "torch/csrc/CudaIPCTypes.cpp"


def test_a_byte_that_strings_glued_before_a_unit_path_does_not_hide_it() -> None:
    """2.1.2's libtorch_cuda.so lists `@../torch/csrc/CudaIPCTypes.cpp`; 2.11.0's `=/pytorch/torch/csrc/…/NCCLUtils.cpp`."""
    assert unit("@../torch/csrc/CudaIPCTypes.cpp") == "torch/csrc/CudaIPCTypes.cpp"
    assert unit("=/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp") == "torch/csrc/distributed/c10d/NCCLUtils.cpp"
    assert unit("see ../torch/csrc/CudaIPCTypes.cpp") is None


def test_the_cuda_ipc_unit_is_kept_and_closed_by_its_type_names() -> None:
    assert KEEP_REGION.search("torch/csrc/CudaIPCTypes.cpp") and CLOSED_BY_TYPEINFO.search("torch/csrc/CudaIPCTypes.cpp")
    assert MANGLED.match("FSt10unique_ptrIN3c1018FreeMemoryCallbackESt14default_deleteIS1_EEvE")
    assert not CLOSED_BY_TYPEINFO.search("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp")
