"""Pasted stacks become innermost-first frames, whatever format printed them."""

from diagnosis.scan.scanner import TextScanner
from diagnosis.readers.stacks import HEADER_LITERALS, stacks_extract
from diagnosis.text import LineLocator


def read(text: str):
    return stacks_extract(TextScanner(text, [(lit, False) for lit in HEADER_LITERALS]), LineLocator(text))


PYSPY = """Process 31337: /opt/conda/bin/python -u pretrain_gpt.py --tensor-model-parallel-size 2
Python v3.10.14 (/opt/conda/bin/python3.10)

Thread 31337 (idle): "MainThread"
    wait (torch/utils/file_baton.py:42)
    _jit_compile (torch/utils/cpp_extension.py:1535)
    load (torch/utils/cpp_extension.py:1312)
    _cpp_extention_load_helper (megatron/fused_kernels/__init__.py:115)
Thread 31412 (idle): "Thread-1"
    wait (threading.py:324)
"""

TRACEBACK = """[default0]:Traceback (most recent call last):
[default0]:  File "/workspace/Megatron-LM/pretrain_gpt.py", line 243, in <module>
[default0]:    pretrain(train_valid_test_datasets_provider,
[default0]:  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 3685, in barrier
[default0]:    work.wait()
[default0]:KeyboardInterrupt
"""

FAULTHANDLER = """Thread 0x00007f5cf27fc640 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 320 in wait
Current thread 0x00007f5e2c4a5740 (most recent call first):
  File "/opt/venv/lib/python3.11/site-packages/transformer_engine/pytorch/module/base.py", line 214 in initialize_ub
  File "/opt/Megatron-LM/megatron/training/training.py", line 402 in _initialize_tp_communicators
"""

GDB = """#0  0x00007f3e1b6d0117 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f3d7c1a2e3f in ncclProxyService (_args=0x55d1c8a0) at proxy.cc:1523
#2  0x00007f3e1b6d3ac3 in start_thread () from /lib/x86_64-linux-gnu/libc.so.6
"""


def test_py_spy_frames_are_innermost_first_and_relative_to_the_package():
    stack = read(PYSPY)[0]
    assert stack.kind == "py-spy" and stack.frames[:2] == [
        "torch/utils/file_baton.py:wait",
        "torch/utils/cpp_extension.py:_jit_compile",
    ]


def test_py_spy_reports_every_thread():
    assert [s.frames[0] for s in read(PYSPY)] == ["torch/utils/file_baton.py:wait", "threading.py:wait"]


def test_a_traceback_is_reversed_so_the_innermost_frame_comes_first():
    stack = read(TRACEBACK)[0]
    assert stack.frames[0] == "torch/distributed/distributed_c10d.py:barrier" and stack.exception == "KeyboardInterrupt"


def test_a_launcher_prefix_names_the_stack_rank():
    assert read(TRACEBACK)[0].rank == 0


def test_frames_keep_the_line_they_were_printed_on():
    assert read(TRACEBACK)[0].frame_lines[0] == 4


def test_faulthandler_dumps_are_read_per_thread():
    stacks = read(FAULTHANDLER)
    assert stacks[1].frames[0] == "transformer_engine/pytorch/module/base.py:initialize_ub"


# faulthandler.dump_traceback_later(1.25) under CPython 3.11.7, as printed; then the same dump pasted without its
# thread line and without indentation, as a CI page shows it when only the frames are selected.
FAULTHANDLER_TIMEOUT = """Timeout (0:00:01.250000)!
Thread 0x00007f36a9820b80 (most recent call first):
  File "/opt/venv/lib/python3.12/site-packages/torch/utils/file_baton.py", line 50 in wait
  File "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2156 in _jit_compile
"""
FAULTHANDLER_TIMEOUT_FRAMES_ONLY = """Timeout (0:02:00)!
File "/opt/venv/lib/python3.12/site-packages/torch/utils/file_baton.py", line 50 in wait
File "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2156 in _jit_compile
"""


def test_a_faulthandler_timeout_dump_is_read_once_under_its_thread_line():
    stacks = read(FAULTHANDLER_TIMEOUT)
    assert [s.frames[0] for s in stacks] == ["torch/utils/file_baton.py:wait"]


def test_a_faulthandler_timeout_dump_pasted_without_its_thread_line_is_still_a_stack():
    stacks = read(FAULTHANDLER_TIMEOUT_FRAMES_ONLY)
    assert [(s.kind, s.frames) for s in stacks] == [
        ("faulthandler", ["torch/utils/file_baton.py:wait", "torch/utils/cpp_extension.py:_jit_compile"])
    ]


def test_gdb_frames_name_the_source_file_or_library():
    assert read(GDB)[0].frames[:2] == ["libc.so.6:__futex_abstimed_wait_common", "proxy.cc:ncclProxyService"]


def test_a_log_without_stacks_yields_none():
    assert read("[rank0]: iteration 10/100 | loss 2.31\nThread pool started\n") == []


def test_py_spy_dumps_of_many_ranks_are_grouped_by_where_they_wait():
    from diagnosis.verdict import stack_groups

    waiting = '=== rank {r} ===\nThread {pid} (idle): "MainThread"\n    barrier (torch/distributed/distributed_c10d.py:3685)\n    main (train.py:88)\n'
    saving = '=== rank 3 ===\nThread 4003 (active): "MainThread"\n    write (torch/serialization.py:652)\n    save_checkpoint (train.py:140)\n'
    text = "".join(waiting.format(r=r, pid=4000 + r) for r in (0, 1, 2)) + saving
    groups = stack_groups([(s, None) for s in read(text)])
    assert [(g["label"], g["where"], g["odd"]) for g in groups] == [
        ("ranks 0–2", "torch/distributed/distributed_c10d.py:barrier", False),
        ("rank 3", "torch/serialization.py:write", True),
    ]


def test_each_dump_of_the_rank_stacks_check_belongs_to_the_rank_in_its_header():
    """content/scripts/debug.yaml's rank-stacks check writes '=== rank N (pid P) ===' above each py-spy dump."""
    dumps = "".join(
        f"=== rank {rank} (pid {pid}) ===\nProcess {pid}: python train.py\nPython v3.11.9 (/usr/bin/python3.11)\n\n"
        f'Thread {pid} (idle): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2501)\n'
        for rank, pid in ((12, 7001), (13, 7002))
    )
    assert [(s.rank, s.frames[0]) for s in read(dumps)] == [
        (12, "torch/distributed/distributed_c10d.py:all_reduce"),
        (13, "torch/distributed/distributed_c10d.py:all_reduce"),
    ]
