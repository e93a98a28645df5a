"""An archive is measured before the standard library parses it.

`tarfile` and `zipfile` trust what they read: CPython 3.11.7's `tarfile` runs a quadratic regex over a PAX header
of any length (CVE-2024-6232, a 1 KB .tar.gz held a worker for two minutes), reads a GNU long name of any length
into memory, and decompresses bzip2 with no output limit; `zipfile` parses every central-directory entry before
anyone can count them, and decompresses bzip2 and LZMA members with no output limit. So here:

  - `DecompressedStream` decompresses gzip (every member, CRC checked), bzip2, xz and zip members at most one
    chunk per call, against a byte budget and a CPU deadline; a damaged stream is an `ArchiveRefused`.
  - `TarHeaderGuard` reads the tar stream's 512-byte header blocks as they pass, before `tarfile` sees them,
    and refuses extended headers (PAX, GNU long names) over a small size or malformed, too many entries, and
    GNU sparse files.
  - `zip_directory_check` reads a zip's end record and walks its central directory, refusing it when either is
    over its limit, before `zipfile.ZipFile` is opened.
"""

from __future__ import annotations

import bz2
import io
import lzma
import re
import struct
import time
import zlib
import zipfile
from typing import IO

CHUNK = 1024 * 1024  # decompressed bytes at most per read
_IN = 64 * 1024  # compressed bytes read at a time
MAX_PAX_BYTES = 16 * 1024  # one PAX header: a 4096-byte path and the usual records fit many times over
MAX_LONG_NAME_BYTES = 4096  # a GNU long name or link name (PATH_MAX)
MAX_EXTENDED_BYTES = 1024 * 1024  # every extended header of one archive together
MAX_EXTENDED_IN_A_ROW = 4  # a member has at most a PAX header, a global one, a long name and a long link name
_DIGIT_RUN_RE = re.compile(rb"\d{33}")  # longer runs make CPython 3.11.7's hdrcharset search quadratic
_PAX_KEY_RE = re.compile(
    rb"^(?:path|linkpath|size|mtime|atime|ctime|uid|gid|uname|gname|charset|comment|hdrcharset"
    rb"|(?:SCHILY|LIBARCHIVE)\.[A-Za-z0-9._-]+)$"
)


class ArchiveRefused(ValueError):
    """The archive is refused before (or while) it is parsed; the message says why."""


class ArchiveTooLarge(ArchiveRefused):
    """The archive expands past its byte budget."""


class CpuDeadline:
    """CPU seconds this process may spend reading one job (None: no limit, as on the command line); `check`
    raises once they are spent."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._until = None if seconds is None else time.process_time() + seconds

    def check(self, name: str) -> None:
        if self._until is not None and time.process_time() > self._until:
            raise ArchiveRefused(f"'{shown(name)}' took more than {self.seconds:g} s of CPU to unpack; refusing it.")


def shown(name: str) -> str:
    """A name safe to put in a message: ASCII, backslash escapes, at most 200 characters."""
    return name.encode("ascii", "backslashreplace").decode("ascii")[:200]


class _Slice:
    """`length` bytes of a seekable file from `start` (a zip member's compressed data)."""

    def __init__(self, handle: IO[bytes], start: int, length: int) -> None:
        self._handle, self._at, self._left = handle, start, length

    def read(self, size: int) -> bytes:
        if self._left <= 0:
            return b""
        self._handle.seek(self._at)
        data = self._handle.read(min(size, self._left))
        self._at += len(data)
        self._left -= len(data)
        return data


class DecompressedStream(io.RawIOBase):
    """A compressed stream read as its decompressed bytes, at most `CHUNK` a call and `budget` in all.

    kind: "gzip" (members one after another, each CRC checked; NUL padding after the last is allowed), "bzip2"
    and "xz" (streams one after another), "deflate", "bzip2-zip" and "lzma-zip" (one zip member), "stored".
    Damaged data, and data that ends early, raise ArchiveRefused; more than `budget` bytes ArchiveTooLarge."""

    def __init__(
        self,
        raw: IO[bytes] | _Slice,
        kind: str,
        *,
        name: str,
        budget: int,
        deadline: CpuDeadline,
        too_large: str | None = None,
        crc: int | None = None,
    ) -> None:
        super().__init__()
        self._raw, self._kind, self._name = raw, kind, name
        self._budget, self._deadline, self._too_large, self._crc = budget, deadline, too_large, crc
        self._produced = 0
        self._running_crc = 0
        self._pending = b""
        self._finished = False
        try:
            self._decompressor = self._new()
        except (lzma.LZMAError, EOFError, ValueError) as error:
            raise ArchiveRefused(f"'{shown(name)}' is damaged and cannot be decompressed ({error}); refusing it.") from None

    def readable(self) -> bool:
        return True

    def _new(self):
        if self._kind == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self._kind == "deflate":
            return zlib.decompressobj(-zlib.MAX_WBITS)
        if self._kind in ("bzip2", "bzip2-zip"):
            return bz2.BZ2Decompressor()
        if self._kind == "xz":
            return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        if self._kind == "lzma-zip":
            return _zip_lzma_decompressor(self._raw)
        if self._kind == "stored":
            return None
        raise ValueError(f"unknown compression {self._kind}")

    def read(self, size: int | None = -1) -> bytes:
        size = CHUNK if size is None or size < 0 else min(size, CHUNK)
        if size == 0 or self._finished:
            return b""
        try:
            out = self._step(size)
        except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as error:
            if isinstance(error, ArchiveRefused):
                raise
            raise ArchiveRefused(f"'{shown(self._name)}' is damaged and cannot be decompressed ({error}); refusing it.") from None
        self._produced += len(out)
        if self._produced > self._budget:
            raise ArchiveTooLarge(
                self._too_large or f"'{shown(self._name)}' expands past the limit of {self._budget} bytes; refusing it."
            )
        if self._crc is not None:
            self._running_crc = zlib.crc32(out, self._running_crc)
            if not out and self._running_crc != self._crc:
                raise ArchiveRefused(f"'{shown(self._name)}' is damaged (its CRC does not match); refusing it.")
        return out

    def _step(self, size: int) -> bytes:
        """Decompressed bytes, or b"" at the end; every pass of the loop consumes input or gives output."""
        if self._kind == "stored":
            self._deadline.check(self._name)
            out = self._raw.read(size)
            self._finished = not out
            return out
        while True:
            self._deadline.check(self._name)
            decompressor = self._decompressor
            if decompressor.eof:
                rest = decompressor.unused_data + self._pending
                self._pending = b""
                if self._kind in ("gzip", "bzip2", "xz"):
                    rest = rest or self._raw.read(_IN)
                    if self._kind == "gzip":
                        rest = self._skip_padding(rest)
                    if rest:  # another member or stream follows
                        self._decompressor = self._new()
                        self._pending = rest
                        continue
                self._finished = True
                return b""
            if self._kind in ("gzip", "deflate"):
                data = decompressor.unconsumed_tail or self._pending or self._raw.read(_IN)
                self._pending = b""
                if not data:
                    raise EOFError("the compressed data ends early")
                out = decompressor.decompress(data, size)
            else:
                data = b""
                if decompressor.needs_input:
                    data = self._pending or self._raw.read(_IN)
                    self._pending = b""
                    if not data:
                        raise EOFError("the compressed data ends early")
                out = decompressor.decompress(data, size)
            if out:
                return out

    def _skip_padding(self, rest: bytes) -> bytes:
        while rest and not rest.strip(b"\x00"):
            rest = self._raw.read(_IN)
        return rest.lstrip(b"\x00") if rest else b""


def _zip_lzma_decompressor(raw: _Slice) -> lzma.LZMADecompressor:
    """A zip LZMA member opens with a version (2 bytes), the properties' size (2) and LZMA1's 5 property bytes."""
    head = raw.read(4)
    if len(head) < 4:
        raise EOFError("the LZMA header ends early")
    (props_size,) = struct.unpack("<H", head[2:4])
    props = raw.read(props_size)
    if props_size != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise ValueError("the LZMA properties are not valid")
    lc_lp_pb, dict_size = props[0], struct.unpack("<I", props[1:5])[0]
    lc, lp, pb = lc_lp_pb % 9, (lc_lp_pb // 9) % 5, lc_lp_pb // 45
    return lzma.LZMADecompressor(
        format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dict_size}]
    )


# ---- tar ---------------------------------------------------------------------------------------------

_BLOCK = 512
_EXTENDED = {b"x": MAX_PAX_BYTES, b"g": MAX_PAX_BYTES, b"L": MAX_LONG_NAME_BYTES, b"K": MAX_LONG_NAME_BYTES}
# tarfile skips the data of these types only (TarInfo._proc_builtin); links, folders and devices have none.
_HAS_DATA = {b"0", b"\x00", b"7"}
_KNOWN = {b"0", b"\x00", b"1", b"2", b"3", b"4", b"5", b"6", b"7"}


class TarHeaderGuard(io.RawIOBase):
    """A tar stream passed through to `tarfile` once each header block, and each extended header, has been read
    and found within limits. Every byte is seen here before `tarfile` gets it, so nothing over a limit is parsed."""

    def __init__(self, stream: IO[bytes], *, max_entries: int, max_member_bytes: int, name: str = "the archive") -> None:
        super().__init__()
        self._stream, self._name = stream, name
        self._max_entries, self._max_member_bytes = max_entries, max_member_bytes
        self._pos = 0  # stream offset of the next byte read
        self._next = 0  # stream offset of the next header block
        self._header = bytearray()
        self._extended: tuple[bytes, int] | None = None  # (type, size) of the extended header being collected
        self._extended_data = bytearray()
        self._extended_total = 0
        self._pax_size: int | None = None  # a PAX `size` record: the next member's real size
        self._entries = 0
        self._in_a_row = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._stream.read(CHUNK if size is None or size < 0 else size)
        if data and not self._done:
            self._scan(memoryview(data))
        self._pos += len(data)
        return data

    def _scan(self, chunk: memoryview) -> None:
        start, end = self._pos, self._pos + len(chunk)
        offset = 0
        while not self._done:
            if self._extended is not None:
                kind, wanted = self._extended
                piece = chunk[offset : offset + wanted - len(self._extended_data)]
                self._extended_data += piece
                offset += len(piece)
                if len(self._extended_data) < wanted:
                    return
                self._extended_check(kind, bytes(self._extended_data))
                self._extended, self._extended_data = None, bytearray()
                continue
            if not self._header:
                if self._next >= end:
                    return
                offset = max(offset, self._next - start)
            piece = chunk[offset : offset + _BLOCK - len(self._header)]
            self._header += piece
            offset += len(piece)
            if len(self._header) < _BLOCK:
                return
            header_at = self._next
            block, self._header = bytes(self._header), bytearray()
            self._block_check(header_at, block)  # an extended header's data follows at `offset`

    def _block_check(self, header_at: int, block: bytes) -> None:
        if not block.strip(b"\x00"):
            self._done = True  # the end-of-archive block: tarfile stops here too
            return
        if _checksum(block) != _field_number(block[148:156], allow_binary=False):
            self._done = True  # not a header: tarfile stops reading here (or refuses the archive)
            return
        kind = block[156:157]
        self._entries += 1 if kind not in _EXTENDED else 0
        if self._entries > self._max_entries:
            raise ArchiveRefused(f"{self._name} holds more than {self._max_entries} files; refusing it (limit on members).")
        size = _field_number(block[124:136], allow_binary=True)
        if size is None or size < 0:
            raise ArchiveRefused(f"{self._name} has a header whose size cannot be read; refusing it.")
        if kind == b"S":
            raise ArchiveRefused(f"{self._name} has a GNU sparse member; refusing it.")
        self._in_a_row = self._in_a_row + 1 if kind in _EXTENDED else 0
        if self._in_a_row > MAX_EXTENDED_IN_A_ROW:  # tarfile reads each one by recursion
            raise ArchiveRefused(f"{self._name} has more than {MAX_EXTENDED_IN_A_ROW} extended headers in a row; refusing it.")
        if kind in _EXTENDED:
            if size > _EXTENDED[kind]:
                what = "PAX header" if kind in (b"x", b"g") else "GNU long name"
                raise ArchiveRefused(
                    f"{self._name} has a {what} of {size} bytes, over the limit of {_EXTENDED[kind]}; refusing it."
                )
            self._extended_total += size
            if self._extended_total > MAX_EXTENDED_BYTES:
                raise ArchiveRefused(f"{self._name} has more than {MAX_EXTENDED_BYTES} bytes of extended headers; refusing it.")
            self._extended = (kind, size) if size else None
            self._next = header_at + _BLOCK + _padded(size)
            return
        if self._pax_size is not None:
            size, self._pax_size = self._pax_size, None
        if size > self._max_member_bytes and (kind in _HAS_DATA or kind not in _KNOWN):
            raise ArchiveTooLarge(
                f"{self._name} has a member of {size} bytes, over the limit of {self._max_member_bytes} for one file."
            )
        self._next = header_at + _BLOCK + (_padded(size) if kind in _HAS_DATA or kind not in _KNOWN else 0)

    def _extended_check(self, kind: bytes, data: bytes) -> None:
        if kind in (b"L", b"K"):
            return
        if _DIGIT_RUN_RE.search(data):
            raise ArchiveRefused(f"{self._name} has a PAX header with a run of more than 32 digits; refusing it.")
        at = 0
        while at < len(data):
            space = data.find(b" ", at, at + 21)
            length_text = data[at:space] if space > at else b""
            if not length_text.isdigit() or int(length_text) <= len(length_text) + 1:
                raise ArchiveRefused(f"{self._name} has a malformed PAX record; refusing it.")
            length = int(length_text)
            if at + length > len(data) or data[at + length - 1 : at + length] != b"\n":
                raise ArchiveRefused(f"{self._name} has a malformed PAX record; refusing it.")
            key, equals, value = data[space + 1 : at + length - 1].partition(b"=")
            if not equals or not _PAX_KEY_RE.match(key):
                raise ArchiveRefused(
                    f"{self._name} has a PAX record this reader does not accept ({shown(key.decode('latin-1'))}); refusing it."
                )
            if key == b"size":
                if kind == b"g" or not value.isdigit():
                    raise ArchiveRefused(f"{self._name} has a PAX size record it cannot use; refusing it.")
                self._pax_size = int(value)
            at += length


def _padded(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


def _checksum(block: bytes) -> int:
    return sum(block[:148]) + 8 * 0x20 + sum(block[156:])


def _field_number(field: bytes, *, allow_binary: bool) -> int | None:
    """A header's number field: octal text, or (size fields) GNU base-256 (first byte 0x80 positive, 0xff negative)."""
    if allow_binary and field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return -1 if field[:1] == b"\xff" else value
    text = field.split(b"\x00", 1)[0].strip(b" ")
    if not text:
        return 0
    if not all(48 <= c <= 55 for c in text):
        return None
    return int(text, 8)


# ---- zip ---------------------------------------------------------------------------------------------

_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_CENTRAL_ENTRY_BYTES = 46 + 256  # an entry with a name and extras of ordinary length


def zip_directory_check(handle: IO[bytes], *, max_entries: int) -> None:
    """Refuse a zip whose end record declares more than `max_entries` entries, whose central directory is larger
    than that many entries of ordinary length (`zipfile` parses all of it when it opens), or whose directory holds
    more entries than it declares. A zip whose end record cannot be found is left to `zipfile` to refuse."""
    handle.seek(0, io.SEEK_END)
    size = handle.tell()
    tail_at = max(0, size - (_EOCD.size + 65535))
    handle.seek(tail_at)
    tail = handle.read()
    found = tail.rfind(b"PK\x05\x06")
    if found < 0 or len(tail) - found < _EOCD.size:
        return
    _, _, _, _, entries, cd_size, cd_offset, _ = _EOCD.unpack(tail[found : found + _EOCD.size])
    end_at = tail_at + found
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        locator = tail[found - _EOCD64_LOCATOR.size : found] if found >= _EOCD64_LOCATOR.size else b""
        if len(locator) == _EOCD64_LOCATOR.size and locator[:4] == b"PK\x06\x07":
            end_at = end_at - _EOCD64_LOCATOR.size - _EOCD64.size
            handle.seek(max(0, end_at))
            record = handle.read(_EOCD64.size)
            if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
                fields = _EOCD64.unpack(record)
                entries, cd_size = fields[6], fields[7]
    limit_bytes = max_entries * _CENTRAL_ENTRY_BYTES + 64 * 1024
    if entries > max_entries:
        raise ArchiveRefused(f"The zip archive declares {entries} members, over the limit of {max_entries}; refusing it.")
    if cd_size > limit_bytes:
        raise ArchiveRefused(
            f"The zip archive's directory is {cd_size} bytes, over the limit of {limit_bytes} for {max_entries} members; "
            "refusing it."
        )
    handle.seek(max(0, end_at - cd_size))
    directory = handle.read(cd_size)
    at = counted = 0
    while at + _CENTRAL.size <= len(directory) and directory[at : at + 4] == b"PK\x01\x02":
        fields = _CENTRAL.unpack(directory[at : at + _CENTRAL.size])
        at += _CENTRAL.size + fields[12] + fields[13] + fields[14]
        counted += 1
        if counted > max_entries:
            raise ArchiveRefused(f"The zip archive holds more than {max_entries} members; refusing it (limit on members).")


_ZIP_KINDS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2-zip",
    zipfile.ZIP_LZMA: "lzma-zip",
}


def zip_member_stream(handle: IO[bytes], info: zipfile.ZipInfo, *, deadline: CpuDeadline) -> DecompressedStream:
    """A zip member's bytes, decompressed here within its declared size (its CRC checked at the end), rather
    than by `zipfile`, which decompresses bzip2 and LZMA with no output limit. Raises NotImplementedError for a
    compression this reader does not know."""
    if info.compress_type not in _ZIP_KINDS:
        raise NotImplementedError(f"compression method {info.compress_type} is not supported")
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise ArchiveRefused(f"'{shown(info.filename)}' has no local header where the directory says; refusing the archive.")
    name_length, extra_length = struct.unpack("<2H", local[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    return DecompressedStream(
        _Slice(handle, start, info.compress_size),
        _ZIP_KINDS[info.compress_type],
        name=info.filename,
        budget=info.file_size,
        deadline=deadline,
        too_large=f"'{shown(info.filename)}' holds more data than its header declares; refusing the archive.",
        crc=info.CRC,
    )
