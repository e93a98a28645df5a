"""Reading a whole job: directories, archives as streams within hard limits, ranks from paths."""

import io
import os
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from diagnosis.job_files import JobInputError, job_read, path_rank

FR_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "flight_recorder"

STDERR_LINE = (
    "[rank{rank}]:[E1123 06:12:44.100000 {pid} torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632] "
    "[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, "
    "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
)


def torchrun_tree(root: Path, silent: int = 2, nprocs: int = 4) -> Path:
    """torchrun --log-dir layout: <log_dir>/<run_id>_<random>/attempt_0/<local_rank>/{stdout,stderr}.log."""
    attempt = root / "logs" / "job42_x8k2q1" / "attempt_0"
    for local in range(nprocs):
        folder = attempt / str(local)
        folder.mkdir(parents=True)
        (folder / "stdout.log").write_text(f"step 100 loss 2.31 rank {local}\n")
        (folder / "stderr.log").write_text("" if local == silent else STDERR_LINE.format(rank=local, pid=4100 + local))
    return root / "logs"


def all_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_torchrun_log_dir_gives_ranks_from_the_local_rank_folders(tmp_path):
    job = job_read(torchrun_tree(tmp_path))
    ranks = {f.name: f.rank for f in job.files}
    assert ranks["job42_x8k2q1/attempt_0/3/stderr.log"] == 3
    assert {f.rank for f in job.files} == {0, 1, 2, 3}


def test_silent_rank_keeps_its_empty_stderr_with_its_rank(tmp_path):
    job = job_read(torchrun_tree(tmp_path, silent=2))
    silent = [f for f in job.files if f.rank == 2 and f.name.endswith("stderr.log")]
    assert silent and silent[0].data == b""
    talking = [f.rank for f in job.files if b"Watchdog caught" in f.data]
    assert sorted(talking) == [0, 1, 3]


def test_torchrun_logs_of_two_nodes_keep_local_ranks_only():
    sources = [("node-a/run_a1/attempt_0/1/stderr.log", b"x\n"), ("node-b/run_b7/attempt_0/1/stderr.log", b"y\n")]
    job = job_read(sources)
    assert [f.rank for f in job.files] == [None, None]
    assert [f.local_rank for f in job.files] == [1, 1]
    assert any("nodes" in note for note in job.notes)


@pytest.mark.parametrize(
    "path, rank",
    [
        ("rank3.log", 3),
        ("logs/rank-3.txt", 3),
        ("rank_12/out.log", 12),
        ("nccl_trace_rank_7", 7),
        ("node-2.out", None),
        ("nccl.gpu-node-04.31337", None),
        ("slurm-81234.out", None),
    ],
)
def test_rank_is_read_from_file_and_folder_names(path, rank):
    assert path_rank(path)[0] == rank


def test_tar_gz_archive_is_read_as_a_stream_with_ranks(tmp_path):
    tree = torchrun_tree(tmp_path)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(tree, arcname="logs")
    buffer.seek(0)
    job = job_read(buffer)
    assert sorted({f.rank for f in job.files}) == [0, 1, 2, 3]


def test_non_seekable_zip_stream_is_read(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("rank0.log", "hello\n")
        archive.writestr("rank1.log", "world\n")

    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self._inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            chunk = self._inner.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    job = job_read(io.BufferedReader(Pipe(buffer.getvalue())))
    assert [(f.name, f.rank) for f in job.files] == [("rank0.log", 0), ("rank1.log", 1)]


def test_flight_recorder_dumps_are_kept_as_dumps():
    job = job_read(FR_DIR / "missing_rank")
    assert {f.kind for f in job.files} == {"flight-recorder"}
    assert sorted(f.rank for f in job.dumps()) == [0, 1, 2, 3]


def test_a_pickled_dump_is_unpickled_once_from_upload_to_its_reading(monkeypatch):
    from diagnosis import Catalog, diagnose
    from diagnosis.readers import flight_recorder
    from diagnosis.rules import Rules

    loads = []
    original = flight_recorder._NoGlobalsUnpickler.load
    monkeypatch.setattr(flight_recorder._NoGlobalsUnpickler, "load", lambda self: loads.append(1) or original(self))
    job = job_read(FR_DIR / "missing_rank")
    catalog = Catalog(titles={}, case_urls={}, harmless_url="/kb/harmless/", sections={})
    result = diagnose(job.sources(), Rules(signatures=[]), catalog, ranks=job.ranks(), unpickled=job.unpickled())
    assert result.facts.get("fr_missing_ranks")
    assert len(loads) == len(job.dumps()) == 4


def test_binary_files_are_skipped_with_a_note():
    job = job_read([("rank0.log", b"ok\n"), ("core.1234", b"\x7fELF" + b"\x00" * 100), ("weights.bin", bytes(range(256)) * 4)])
    assert [f.name for f in job.files] == ["rank0.log"]
    assert any(n.startswith("core.1234: skipped") for n in job.notes)
    assert any(n.startswith("weights.bin: skipped") for n in job.notes)


def test_gzipped_single_log_is_decompressed():
    import gzip

    job = job_read([("rank5.log.gz", gzip.compress(b"NCCL INFO hello\n"))])
    assert [(f.name, f.rank, f.data) for f in job.files] == [("rank5.log", 5, b"NCCL INFO hello\n")]


# ---- hostile archives: refused as a whole, in bounded time, with nothing written to disk -------------


def refused(tmp_path, data: bytes, **limits) -> str:
    before = all_files(tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        started = time.perf_counter()
        with pytest.raises(JobInputError) as error:
            job_read(io.BytesIO(data), **limits)
        assert time.perf_counter() - started < 10
    finally:
        os.chdir(cwd)
    assert all_files(tmp_path) == before
    return str(error.value)


def tar_bytes(add, mode="w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        add(archive)
    return buffer.getvalue()


def add_file(archive, name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def test_zip_bomb_over_the_total_limit_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(4):
            archive.writestr(f"rank{n}.log", b"\x00" * (8 * 1024 * 1024))
    assert len(buffer.getvalue()) < 200_000
    message = refused(tmp_path, buffer.getvalue(), total_bytes=16 * 1024 * 1024)
    assert "limit" in message


def test_tar_gz_bomb_over_the_member_limit_is_refused(tmp_path):
    data = tar_bytes(lambda a: add_file(a, "rank0.log", b"\x00" * (32 * 1024 * 1024)))
    assert "limit" in refused(tmp_path, data, member_bytes=4 * 1024 * 1024)


def test_dotdot_path_is_refused(tmp_path):
    data = tar_bytes(lambda a: add_file(a, "logs/../../etc/evil.log"))
    assert "leaves the archive" in refused(tmp_path, data)


def test_absolute_path_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("/etc/cron.d/evil", "x")
    assert "absolute path" in refused(tmp_path, buffer.getvalue())


def test_symlink_member_is_refused(tmp_path):
    def add(archive):
        info = tarfile.TarInfo("logs/rank0.log")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        archive.addfile(info)

    assert "link member" in refused(tmp_path, tar_bytes(add))


def test_hardlink_member_is_refused(tmp_path):
    def add(archive):
        add_file(archive, "logs/rank0.log")
        info = tarfile.TarInfo("logs/rank1.log")
        info.type = tarfile.LNKTYPE
        info.linkname = "logs/rank0.log"
        archive.addfile(info)

    assert "link member" in refused(tmp_path, tar_bytes(add))


def test_zip_symlink_member_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("rank0.log")
        info.create_system = 3
        info.external_attr = 0o120777 << 16
        archive.writestr(info, "/etc/passwd")
    assert "symbolic link" in refused(tmp_path, buffer.getvalue())


def test_device_member_is_refused(tmp_path):
    def add(archive):
        info = tarfile.TarInfo("dev/sda")
        info.type = tarfile.BLKTYPE
        archive.addfile(info)

    assert "device" in refused(tmp_path, tar_bytes(add))


def test_ten_thousand_tiny_files_are_refused(tmp_path):
    data = tar_bytes(lambda a: [add_file(a, f"logs/r{n}.log") for n in range(10_000)])
    assert "5000" in refused(tmp_path, data)


def test_ten_thousand_tiny_zip_members_are_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in range(10_000):
            archive.writestr(f"r{n}.log", "x")
    assert "5000" in refused(tmp_path, buffer.getvalue())


def test_path_nested_too_deep_is_refused(tmp_path):
    data = tar_bytes(lambda a: add_file(a, "/".join(["d"] * 20) + "/rank0.log"))
    assert "deep" in refused(tmp_path, data)


def test_symlink_in_a_directory_is_skipped_not_followed(tmp_path):
    (tmp_path / "rank0.log").write_text("ok\n")
    (tmp_path / "rank1.log").symlink_to("/etc/passwd")
    job = job_read(tmp_path)
    assert [f.name for f in job.files] == ["rank0.log"]
    assert any("rank1.log: skipped, a symbolic link" == n for n in job.notes)
