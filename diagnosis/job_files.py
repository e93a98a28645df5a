"""Read a whole job's logs: a directory, an archive (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .zip) given as a
path or a binary file object, or several files, into a list of sources with the rank each one belongs to.

Nothing is ever extracted to disk. Archives are read as streams (tar in mode "r|*", zip members one at a
time) within hard limits, and a hostile archive (more data or members than the limits, a symbolic or hard
link, a device file, an absolute path, a `..` component, a path nested too deep) is refused as a whole with
a `JobInputError`. Binary files that are neither logs nor Flight Recorder dumps are skipped with a note.

Ranks come from the paths:
  - torchrun `--log-dir` layout (the same from PyTorch 1.9 to 2.13, torch/distributed/elastic/multiprocessing):
    `<log_dir>/<run_id>_<random>/attempt_<restart>/<local_rank>/stdout.log`, `stderr.log`, `error.json`.
    The folder is the LOCAL rank: it is taken as the rank only when every such file comes from one run
    folder (one node); files from several nodes keep `local_rank` and `node` and no rank.
  - a `rank` token in a file or folder name: `rank3.log`, `rank-3.txt`, `rank_3/`, `nccl_trace_rank_3`
    (Flight Recorder's default dump prefix). `local_rank3` is a local rank.
  - `node-2.out` (a node) and NCCL_DEBUG_FILE names built from `%h.%p` (host.pid) carry no rank.

The debug server's periodic dumps (`stacks_<YYYYmmdd_HHMMSS>.txt`, diagnosis/readers/debug_dumps.py) hold every rank
in one file and are read as logs; of several rounds of one kind in one folder only the newest is read.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from diagnosis.archive_limits import (
    ArchiveRefused,
    ArchiveTooLarge,
    CpuDeadline,
    DecompressedStream,
    TarHeaderGuard,
    zip_directory_check,
    zip_member_stream,
)
from diagnosis.readers.debug_dumps import debug_dump_rounds
from diagnosis.readers.flight_recorder import NOT_LOADED, flight_recorder_detect, pickle_screen

MAX_TOTAL_BYTES = 2 * 1024**3  # uncompressed bytes of every member together
MAX_MEMBERS = 5000  # entries in an archive or files under a directory (folders count)
MAX_DEPTH = 12  # path components of one member
MAX_MEMBER_BYTES = 512 * 1024**2  # uncompressed bytes of one member
SPOOL_IN_MEMORY = 64 * 1024**2  # a stream that cannot seek is spooled; past this size to an unnamed temp file
_CHUNK = 1024 * 1024
_SNIFF = 8192

KIND_LOG = "log"
KIND_FLIGHT_RECORDER = "flight-recorder"


class JobInputError(ValueError):
    """The input is refused as a whole (hostile or over a limit); the message says why."""


class JobTooLarge(JobInputError):
    """The input is over a size limit (uncompressed bytes of one file or of the whole job)."""


def size_text(size: int) -> str:
    """A limit as a person reads it: "200 MB", or bytes below one megabyte."""
    return f"{size / 1024**2:g} MB" if size >= 1024**2 else f"{size} bytes"


@dataclass(frozen=True)
class JobFile:
    name: str  # path inside the job (archive member or path relative to the directory)
    data: bytes
    rank: int | None = None  # global rank, when the path says so
    local_rank: int | None = None  # torchrun's per-node folder number, or `local_rank3` in a name
    node: str | None = None  # torchrun run folder, when a job holds several nodes
    kind: str = KIND_LOG  # "log" | "flight-recorder"
    unpickled: Any = field(default=NOT_LOADED, compare=False, repr=False)  # a pickle as pickle_screen loaded it


@dataclass
class JobInput:
    files: list[JobFile]
    notes: list[str] = field(default_factory=list)

    def logs(self) -> list[tuple[str, bytes]]:
        """The text logs as (name, data) sources for the diagnosis engine."""
        return [(f.name, f.data) for f in self.files if f.kind == KIND_LOG]

    def dumps(self) -> list[JobFile]:
        """The Flight Recorder dumps."""
        return [f for f in self.files if f.kind == KIND_FLIGHT_RECORDER]

    def sources(self) -> list[tuple[str, bytes]]:
        """Every file (logs and dumps) as (name, data), the form the diagnosis engine reads."""
        return [(f.name, f.data) for f in self.files]

    def unpickled(self) -> dict[str, Any]:
        """File name -> the pickled dump as screening loaded it, so that reading it does not unpickle it again."""
        return {f.name: f.unpickled for f in self.dumps() if f.unpickled is not NOT_LOADED}

    def ranks(self) -> dict[str, int]:
        """File name -> rank, for the files whose path names their rank."""
        return {f.name: f.rank for f in self.files if f.rank is not None}

    def read_facts(self) -> dict[str, Any]:
        """diagnosis.diagnose's keyword arguments for what reading the job said besides its sources."""
        return {"ranks": self.ranks(), "notes": self.notes, "unpickled": self.unpickled()}


@dataclass
class _Limits:
    total_bytes: int
    members: int
    depth: int
    member_bytes: int
    deadline: CpuDeadline
    used_bytes: int = 0
    used_members: int = 0

    def count_member(self, name: str) -> None:
        self.used_members += 1
        if self.used_members > self.members:
            raise JobInputError(f"The job holds more than {self.members} files; refusing it (limit on members).")

    def reserve(self, name: str, size: int) -> None:
        if size > self.member_bytes:
            raise JobTooLarge(
                f"'{_shown(name)}' is {size} bytes uncompressed, over the limit of {size_text(self.member_bytes)} for one file."
            )
        if self.used_bytes + size > self.total_bytes:
            raise JobTooLarge(
                f"The job is over the limit of {size_text(self.total_bytes)} uncompressed (at '{_shown(name)}'); refusing it."
            )
        self.used_bytes += size


def job_read(
    source,
    *,
    total_bytes: int = MAX_TOTAL_BYTES,
    members: int = MAX_MEMBERS,
    depth: int = MAX_DEPTH,
    member_bytes: int = MAX_MEMBER_BYTES,
    cpu_seconds: float | None = None,
) -> JobInput:
    """Read a job: a directory path, an archive or log path, a binary file object (archive or log), a
    (name, bytes) pair, or a list of any of these. Raises JobInputError when the input is refused (JobTooLarge
    past a size limit); archives are measured (diagnosis.archive_limits) before they are parsed, and unpacking stops
    after `cpu_seconds` of CPU (the web passes its diagnosis budget; the command line has no limit)."""
    limits = _Limits(total_bytes, members, depth, member_bytes, CpuDeadline(cpu_seconds))
    raw: list[tuple[str, bytes]] = []
    notes: list[str] = []
    items = source if isinstance(source, list) else [source]
    try:
        for item in items:
            raw += _read_item(item, limits, notes)
    except ArchiveTooLarge as error:
        raise JobTooLarge(str(error)) from None
    except ArchiveRefused as error:
        raise JobInputError(str(error)) from None
    return JobInput(files=_classified(raw, notes), notes=notes)


def _read_item(item, limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    if isinstance(item, tuple):
        name, data = item
        if hasattr(data, "read"):  # an uploaded file, named by its path inside the folder the user chose, if any
            return _maybe_archive(_member_path(str(name), limits, "The folder has a file", "the folder"), data, limits, notes)
        return _maybe_archive(str(name), io.BytesIO(bytes(data)), limits, notes)
    if isinstance(item, (str, os.PathLike)):
        path = Path(item)
        if path.is_symlink():
            raise JobInputError(f"'{_shown(str(path))}' is a symbolic link; give the file or folder itself.")
        if path.is_dir():
            return _read_directory(path, limits, notes)
        if not path.is_file():
            raise JobInputError(f"'{_shown(str(path))}' is not a file or a folder.")
        with open(path, "rb") as handle:
            return _maybe_archive(path.name, handle, limits, notes)
    if hasattr(item, "read"):
        name = os.path.basename(str(getattr(item, "name", "") or "upload"))
        return _maybe_archive(name, item, limits, notes)
    raise TypeError(f"cannot read a job from {type(item).__name__}")


def _seekable(handle: IO[bytes]) -> bool:
    try:
        return bool(handle.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _maybe_archive(name: str, handle: IO[bytes], limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    """An archive's members, or the one file itself. A stream that cannot seek is first copied (within the
    total limit) into a SpooledTemporaryFile, which is always closed."""
    if _seekable(handle):
        return _dispatch(name, handle, limits, notes)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        copied = 0
        while chunk := handle.read(_CHUNK):
            copied += len(chunk)
            if copied > limits.total_bytes:
                raise JobTooLarge(f"'{_shown(name)}' is larger than the limit of {size_text(limits.total_bytes)}.")
            spool.write(chunk)
        spool.seek(0)
        return _dispatch(name, spool, limits, notes)


def _dispatch(name: str, handle: IO[bytes], limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    start = handle.tell()
    head = handle.read(512)
    handle.seek(start)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _read_zip(handle, limits, notes)
    if _is_ustar(head):
        return _read_tar(name, handle, limits, notes)
    compression = _compression(head)
    if compression == "gzip":  # a .tar.gz, or one gzipped log
        first = _decompressed(name, handle, "gzip", limits).read(512)
        handle.seek(start)
        if _is_ustar(first):
            return _read_tar(name, _decompressed(name, handle, "gzip", limits), limits, notes)
        limits.count_member(name)
        return [(_strip_gz(name), _read_bounded(_decompressed(name, handle, "gzip", limits), name, limits))]
    if compression:
        return _read_tar(name, _decompressed(name, handle, compression, limits), limits, notes)
    limits.count_member(name)
    return [(name, _read_bounded(handle, name, limits))]


def looks_like_archive(head: bytes) -> bool:
    """Whether a raw body (`curl --data-binary @job.tar.gz`) is an archive to unpack rather than a log: zip, gzip,
    xz or plain tar by their magic bytes. Not bzip2: "BZh" also starts ordinary text."""
    return head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b", b"\xfd7zXZ\x00")) or _is_ustar(head[:512])


def _is_tar_stream(head: bytes) -> bool:
    return _is_ustar(head) or head.startswith(b"BZh") or head.startswith(b"\xfd7zXZ\x00")


def _compression(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    return None


def _decompressed(name: str, handle: IO[bytes], kind: str, limits: _Limits) -> DecompressedStream:
    """The decompressed stream, within what is left of the job's byte budget plus room for tar headers."""
    budget = limits.total_bytes - limits.used_bytes + (limits.members + 2) * 1024 + 1024**2
    return DecompressedStream(
        handle,
        kind,
        name=name,
        budget=budget,
        deadline=limits.deadline,
        too_large=f"'{_shown(name)}' expands past the limit of {size_text(limits.total_bytes)} uncompressed; refusing it.",
    )


def _is_ustar(block: bytes) -> bool:
    return len(block) >= 262 and block[257:262] == b"ustar"


def _strip_gz(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


def _read_bounded(handle: IO[bytes], name: str, limits: _Limits, declared: int | None = None) -> bytes:
    """Read a stream in chunks, stopping as soon as it passes the per-file or total limit (declared sizes
    in archive headers can lie)."""
    if declared is not None:
        limits.reserve(name, declared)
    chunks: list[bytes] = []
    read = 0
    try:
        while True:
            limits.deadline.check(name)
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            read += len(chunk)
            if declared is not None and read > declared:
                raise JobInputError(f"'{_shown(name)}' holds more data than its header declares; refusing the archive.")
            if declared is None:
                limits.reserve(name, len(chunk))
            chunks.append(chunk)
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as error:
        raise JobInputError(f"'{_shown(name)}' could not be read ({error}).") from None
    return b"".join(chunks)


def _member_path(name: str, limits: _Limits, what: str = "The archive has a member", within: str = "the archive") -> str:
    """The member's path, normalised, or JobInputError for an absolute path, a `..` component or a path
    nested deeper than the limit."""
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or re.match(r"^[A-Za-z]:", cleaned):
        raise JobInputError(f"{what} with an absolute path ('{_shown(name)}'); refusing it.")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise JobInputError(f"{what} whose path leaves {within} ('{_shown(name)}'); refusing it.")
    if len(parts) > limits.depth:
        raise JobInputError(f"{what} nested {len(parts)} folders deep ('{_shown(name)}'), over the limit of {limits.depth}.")
    if any("\x00" in p for p in parts):
        raise JobInputError(f"{what} name with a NUL byte; refusing it.")
    return "/".join(parts)


def _read_tar(name: str, handle: IO[bytes], limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    """A plain tar stream (decompressed already), whose headers TarHeaderGuard checks before tarfile reads them."""
    found: list[tuple[str, bytes]] = []
    guarded = TarHeaderGuard(
        handle,
        max_entries=limits.members - limits.used_members,
        max_member_bytes=limits.member_bytes,
        name=f"'{_shown(name)}'",
    )
    try:
        with tarfile.open(fileobj=guarded, mode="r|") as archive:
            for member in archive:
                limits.count_member(member.name)
                if member.issym() or member.islnk():
                    raise JobInputError(
                        f"The archive has a link member ('{_shown(member.name)}' -> '{_shown(member.linkname)}'); refusing it."
                    )
                if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
                    raise JobInputError(f"The archive has a device or FIFO member ('{_shown(member.name)}'); refusing it.")
                path = _member_path(member.name, limits)
                if member.isdir():
                    continue
                if not member.isreg():
                    raise JobInputError(
                        f"The archive has a member of an unsupported type ('{_shown(member.name)}'); refusing it."
                    )
                if member.issparse():
                    raise JobInputError(f"The archive has a sparse member ('{_shown(member.name)}'); refusing it.")
                stream = archive.extractfile(member)
                if stream is None:
                    continue
                found.append((path, _read_bounded(stream, path, limits, declared=member.size)))
        while guarded.read(_CHUNK):  # to the end of the stream, so that a compressed one has its CRC checked
            limits.deadline.check(name)
    except (JobInputError, ArchiveRefused):
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        raise JobInputError(f"The tar archive could not be read ({error}).") from None
    return found


_S_IFMT = 0o170000


def _read_zip(handle: IO[bytes], limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    """A zip whose directory is counted before zipfile parses it; members decompressed by diagnosis.archive_limits."""
    zip_directory_check(handle, max_entries=limits.members - limits.used_members)
    handle.seek(0)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise JobInputError(f"The zip archive could not be read ({error}).") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.members - limits.used_members:
            raise JobInputError(f"The archive holds {len(infos)} members, over the limit of {limits.members}.")
        declared = sum(info.file_size for info in infos)
        if declared > limits.total_bytes - limits.used_bytes:
            raise JobTooLarge(
                f"The archive expands to {declared} bytes, over the limit of {size_text(limits.total_bytes)}; refusing it."
            )
        found = []
        for info in infos:
            limits.count_member(info.filename)
            mode = (info.external_attr >> 16) & 0xFFFF
            if mode & _S_IFMT and stat.S_ISLNK(mode):
                raise JobInputError(f"The archive has a symbolic link member ('{_shown(info.filename)}'); refusing it.")
            if mode & _S_IFMT and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise JobInputError(f"The archive has a device or special member ('{_shown(info.filename)}'); refusing it.")
            path = _member_path(info.filename, limits)
            if info.is_dir():
                continue
            if info.flag_bits & 0x1:
                notes.append(f"{path}: skipped, encrypted")
                continue
            try:
                stream = zip_member_stream(handle, info, deadline=limits.deadline)
                found.append((path, _read_bounded(stream, path, limits, declared=info.file_size)))
            except (NotImplementedError, RuntimeError) as error:
                notes.append(f"{path}: skipped, {error}")
        return found


def _read_directory(root: Path, limits: _Limits, notes: list[str]) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        relative_folder = Path(folder).relative_to(root)
        for name in list(dirs):
            if (Path(folder) / name).is_symlink():
                dirs.remove(name)
                notes.append(f"{(relative_folder / name).as_posix()}: skipped, a symbolic link")
        for name in sorted(files):
            full = Path(folder) / name
            relative = (relative_folder / name).as_posix()
            limits.count_member(relative)
            if len(PurePosixPath(relative).parts) > limits.depth:
                raise JobInputError(f"'{_shown(relative)}' is nested deeper than {limits.depth} folders.")
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                notes.append(f"{relative}: skipped, a symbolic link")
                continue
            if not stat.S_ISREG(info.st_mode):
                notes.append(f"{relative}: skipped, not a regular file")
                continue
            with open(full, "rb") as handle:
                head = handle.read(512)
                handle.seek(0)
                if head.startswith((b"PK\x03\x04", b"\x1f\x8b")) or _is_tar_stream(head):
                    notes.append(f"{relative}: skipped, an archive inside the job (give it on its own)")
                    continue
                found.append((relative, _read_bounded(handle, relative, limits)))
    return found


def _shown(name: str) -> str:
    return name.encode("ascii", "backslashreplace").decode("ascii")[:200]


# ---- what each file is, and its rank ----------------------------------------------------------------

_BINARY_MAGIC = (
    (b"\x7fELF", "an executable or core dump"),
    (b"\x89PNG", "an image"),
    (b"\xff\xd8\xff", "an image"),
    (b"GIF8", "an image"),
    (b"%PDF", "a PDF"),
    (b"PK\x03\x04", "an archive inside the archive (give it on its own)"),
    (b"\x1f\x8b", "a compressed archive inside the archive (give it on its own)"),
    (b"BZh", "a compressed file inside the archive (give it on its own)"),
    (b"\xfd7zXZ\x00", "a compressed file inside the archive (give it on its own)"),
    (b"\x93NUMPY", "a NumPy array"),
    (b"SQLite format 3", "a database"),
)


def file_kind(name: str, data: bytes) -> tuple[str | None, str]:
    """(kind, why): "log", "flight-recorder", or None (skip) with the reason."""
    if flight_recorder_detect(name, data):
        return KIND_FLIGHT_RECORDER, "a Flight Recorder dump"
    for magic, what in _BINARY_MAGIC:
        if data.startswith(magic):
            return None, what
    if _is_ustar(data[:512]):
        return None, "an archive inside the archive (give it on its own)"
    sample = data[:_SNIFF]
    if not sample.strip(_CONTROL_BYTES + b" \t\n\r\x0b\x0c"):
        return (KIND_LOG, "empty") if sample == b"" or sample.isspace() else (None, "empty")
    if non_text_bytes(sample) * 100 > BINARY_CONTROL_PERCENT * len(sample):
        return None, f"binary data (over {BINARY_CONTROL_PERCENT}% of its first bytes are not text)"
    return KIND_LOG, "text"


# C0 controls but tab, line feed, vertical tab, form feed, carriage return and escape (colour codes): in a text log
# they are strays, such as the NUL that PyTorch's DataLoader bus-error handler writes. Text with a few is still text
# (as a paste of it is); a file whose first 8 KB are more than this share of them and of bytes that are not UTF-8
# is binary (random or compressed data: about 60%).
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27))
BINARY_CONTROL_PERCENT = 30


def non_text_bytes(sample: bytes) -> int:
    """Stray control bytes plus bytes that are no part of a UTF-8 character (each decodes to one U+FFFD)."""
    invalid = sample.decode("utf-8", errors="replace").count("\ufffd") - sample.count("\ufffd".encode())
    return stray_control_bytes(sample) + invalid


def stray_control_bytes(data: bytes) -> int:
    """How many of `data`'s bytes are stray control bytes (C speed: a deleting translate)."""
    return len(data) - len(data.translate(None, _CONTROL_BYTES))


def stray_control_note(name: str, data: bytes) -> str | None:
    """What a log read as text has of stray control bytes, said on the result page: NULs are dropped as the paste's
    are (diagnosis/text.py), the others kept as they are."""
    count = stray_control_bytes(data)
    if not count:
        return None
    nuls = data.count(b"\x00")
    done = [f"{nuls} NUL byte{'s' if nuls != 1 else ''} dropped"] if nuls else []
    if count > nuls:
        done.append(f"{count - nuls} other kept")
    return f"{name}: read as text with {count} stray control byte{'s' if count != 1 else ''} ({', '.join(done)})"


_TORCHRUN_FILES = {"stdout.log", "stderr.log", "error.json"}
_ATTEMPT_RE = re.compile(r"^attempt_\d{1,6}$")
_RANK_RE = re.compile(r"(?:^|[^a-z])(local[_-]?)?rank[-_.]?(\d{1,6})(?:[^0-9]|$)", re.IGNORECASE)


def path_rank(path: str) -> tuple[int | None, int | None, str | None]:
    """(rank, local_rank, torchrun run folder) read from a path; the run folder is set only for the
    torchrun layout, where the number is a local rank."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 3 and parts[-1] in _TORCHRUN_FILES and parts[-2].isdigit() and _ATTEMPT_RE.match(parts[-3]):
        return None, int(parts[-2]), "/".join(parts[:-3])
    for part in reversed(parts):
        match = _RANK_RE.search(part)
        if match:
            number = int(match.group(2))
            return (None, number, None) if match.group(1) else (number, None, None)
    return None, None, None


def _classified(raw: list[tuple[str, bytes]], notes: list[str]) -> list[JobFile]:
    files: list[JobFile] = []
    located = []
    superseded = debug_dump_rounds([name for name, _ in raw], {name: data[:64] for name, data in raw})
    for name, data in raw:
        if name in superseded:
            notes.append(f"{name}: skipped, an older round of the debug server's periodic dump ({superseded[name]} is newer)")
            continue
        screened = pickle_screen(data)
        if screened.asked:
            raise JobInputError(
                f"'{_shown(name)}' is a pickle that asks to import {_shown(screened.asked)}; a Flight Recorder "
                "dump holds plain data only, so the job is refused (nothing in it was run)."
            )
        kind, why = file_kind(name, data)
        if kind is None:
            notes.append(f"{name}: skipped, {why}")
            continue
        stray = stray_control_note(name, data) if kind == KIND_LOG else None
        if stray:
            notes.append(stray)
        located.append((name, data, kind, screened.loaded, *path_rank(name)))
    run_folders = {run for *_, run in located if run is not None}
    one_node = len(run_folders) <= 1
    for name, data, kind, unpickled, rank, local_rank, run in located:
        if run is not None and one_node:
            rank = local_rank  # one node: the local rank is the global rank
        node = run if run is not None and not one_node else None
        files.append(JobFile(name, data, rank, local_rank, node, kind, unpickled))
    if len(run_folders) > 1:
        notes.append(
            f"torchrun logs from {len(run_folders)} nodes: their folders are local ranks, so no global "
            "rank is read from the paths"
        )
    return files
