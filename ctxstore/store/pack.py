"""Pack files: a small header followed by codec records back to back, and reading them.

A pack is append-only while it is *active* (no .idx beside it) and immutable once *sealed* (its
.idx exists). An active pack may have a partial index (.pidx) locating its records before an end
mark, so that readers scan only the tail after it. Record framing is exactly
`codec.encode_record`; this module only knows the pack header, how to walk records, and how to
tell a torn tail (a crash mid-append) from damage in the middle of a pack. See docs/format.md
"Packs", "Partial indexes" and "Crash recovery".
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from collections.abc import Iterator

from .. import codec
from ..errors import CorruptObject, CorruptStore
from ..lockfile import fsync_dir
from .packindex import PackIndex, PartialIndex
from .writerlock import try_lock

MAGIC = b"CPAK"
VERSION = 1
_HEADER = struct.Struct("<4sI")
HEADER = _HEADER.pack(MAGIC, VERSION)
HEADER_SIZE = _HEADER.size
PREFIX, PACK_SUFFIX, IDX_SUFFIX, PIDX_SUFFIX = "pack-", ".pack", ".idx", ".pidx"
_RECORD_START = codec.RECORD_MAGIC + bytes([codec.RECORD_VERSION])
_STORED_LEN = struct.Struct("<I").unpack_from
#: First read of a record found by a partial index: most records fit, others take a second.
_FIRST_READ = 4096


def pack_name(path: str) -> str:
    """`pack-<hex>` of a pack or index path."""
    base = os.path.basename(path)
    return base[:base.rindex(".")]


def sibling(pack_path: str, suffix: str) -> str:
    """The `.idx` or `.pidx` path of a pack path."""
    return pack_path[:-len(PACK_SUFFIX)] + suffix


def remove_partial_index(pack_path: str) -> None:
    """Delete a pack's .pidx if there is one (after its .idx exists or the pack is gone)."""
    try:
        os.unlink(sibling(pack_path, PIDX_SUFFIX))
    except FileNotFoundError:
        pass


def check_header(head: bytes, path: str) -> None:
    if len(head) < HEADER_SIZE:
        return  # an empty pack being born is not damage; it simply holds nothing yet
    magic, version = _HEADER.unpack_from(head)
    if magic != MAGIC:
        raise CorruptStore(f"{path} is not a ctxstore pack (bad magic)", path=path)
    if version != VERSION:
        raise CorruptStore(f"{path}: unsupported pack version {version}", path=path)


def create_pack(packs_dir: str) -> tuple[int, str]:
    """A new empty pack, already locked by the caller: (fd, path).

    The header is written under a temporary name and the file renamed into place, so no reader
    ever sees a pack without its header; the lock is taken before the rename, so no other
    writer can take the new pack over.
    """
    name = PREFIX + os.urandom(20).hex()
    tmp = os.path.join(packs_dir, f"tmp-{name}{PACK_SUFFIX}")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try_lock(fd)
        os.write(fd, HEADER)
        os.fsync(fd)
        path = os.path.join(packs_dir, name + PACK_SUFFIX)
        os.rename(tmp, path)
        fsync_dir(packs_dir)
    except BaseException:
        os.close(fd)
        raise
    return fd, path


def scan(buf, start: int, base: int = 0) -> tuple[list[tuple[str, int, int]], int]:
    """Walk record headers in `buf` from `start`: ([(hex id, offset, size)], end of last record).

    Offsets are `base + position in buf`. Stops at the first header that does not parse or a
    record that runs past the end of `buf`: that is either the tail still being written, a torn
    tail, or damage, which `tail_state` tells apart. Payload crcs are not checked here (reads
    and fsck check them); walking headers only keeps a takeover of a 32 MB pack fast.
    """
    out: list[tuple[str, int, int]] = []
    pos, n = start, len(buf)
    span = codec.record_span
    while pos < n:
        try:
            raw, size = span(buf, pos)
        except CorruptObject:
            break
        out.append((raw.hex(), base + pos, size))
        pos += size
    return out, base + pos


def record_ok(buf, pos: int) -> bool:
    """True if a whole record with a good crc starts at `pos`."""
    try:
        codec.record_payload(buf, codec.read_record_header(buf, pos))
    except CorruptObject:
        return False
    return True


def later_record(buf, pos: int) -> int:
    """Offset of the first good record after `pos`, or -1: tells damage from a torn tail."""
    i = buf.find(_RECORD_START, pos + 1)
    while i >= 0:
        if record_ok(buf, i):
            return i
        i = buf.find(_RECORD_START, i + 1)
    return -1


def good_end(buf, entries: list[tuple[str, int, int]], end: int, base: int = 0) -> tuple[int, int]:
    """(end of the last intact record, number of entries to keep) after a crash.

    Only the tail can be torn by a crash, so only the last record's crc is checked: a record
    whose bytes all arrived but whose crc fails (a power cut can leave zeros) is dropped too.
    """
    keep = len(entries)
    if keep and not record_ok(buf, entries[-1][1] - base):
        keep -= 1
        end = entries[-1][1]
    return end, keep


def read_file_from(fd: int, start: int) -> bytes:
    """Everything in the file from `start` to its current end, by pread (no mmap: active packs
    may be truncated by a recovering writer, and a mapped page past EOF would SIGBUS)."""
    size = os.fstat(fd).st_size
    chunks, pos = [], start
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


class Pack:
    """A pack as a reader sees it: sealed (index + mmap) or active (partial index for the
    records before its end mark, a scanned map for the tail after it, pread)."""

    def __init__(self, path: str, sealed: bool) -> None:
        self.path = path
        self.name = pack_name(path)
        self.where = f" in pack {self.name}"
        self.index: PackIndex | None = PackIndex(sibling(path, IDX_SUFFIX)) if sealed else None
        self._fd: int | None = None
        self._mm: mmap.mmap | None = None
        #: active packs: the .pidx, once opened (None: none, or not valid); see `load_partial`
        self.partial: PartialIndex | None = None
        self._partial_tried = False
        self.offsets: dict[str, tuple[int, int]] = {}  # active packs' tail: id -> (offset, size)
        self.scanned = HEADER_SIZE

    @property
    def sealed(self) -> bool:
        return self.index is not None

    @property
    def indexed_end(self) -> int:
        """End mark of the partial index: records before it need no scan."""
        return self.partial.pack_length if self.partial is not None else HEADER_SIZE

    def load_partial(self) -> int:
        """Open this active pack's .pidx, if it has a valid one, and return its end mark
        (HEADER_SIZE if none). Invalid (unreadable, claiming more than the pack holds, or a
        trailer checksum that does not match: one flipped byte could hide a record) means
        ignored, never trusted: the pack is then scanned from its header, which gives the same
        answers, and the writer's next partial index replaces it."""
        self._partial_tried = True
        index = PartialIndex(sibling(self.path, PIDX_SUFFIX))
        try:
            end = index.pack_length_checked()
            if end > os.fstat(self.fd()).st_size:
                raise CorruptStore(f"{index.path} covers {end} bytes, more than the pack holds")
            if not index.verify_checksum():
                raise CorruptStore(f"{index.path}: checksum mismatch")
        except (FileNotFoundError, CorruptStore):
            index.close()
            self.partial = None
            return HEADER_SIZE
        self.partial = index
        return end

    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
            check_header(os.pread(self._fd, HEADER_SIZE, 0), self.path)
        return self._fd

    def data(self) -> mmap.mmap:
        """The mapped pack (sealed packs only: they never shrink)."""
        if self._mm is None:
            fd = self.fd()
            size = os.fstat(fd).st_size
            if size < HEADER_SIZE:  # a sealed pack is never born: shorter than a header is damage
                raise CorruptStore(f"{self.path}: a sealed pack of {size} bytes, shorter than "
                                   f"its header", path=self.path)
            self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        return self._mm

    def seal_with(self, index: PackIndex) -> None:
        """This pack was sealed: switch to its index, drop the partial index and scanned map."""
        self.index, self.offsets, self.partial = index, {}, None

    def refresh(self) -> int:
        """Scan records appended since the last scan (the first time: from the partial index's
        end mark); returns how many were found (or became known through the partial index)."""
        known = 0
        if not self._partial_tried and self.scanned == HEADER_SIZE:
            self.scanned = self.load_partial()
            known = len(self.partial) if self.partial is not None else 0
        tail = read_file_from(self.fd(), self.scanned)
        entries, end = scan(tail, 0, self.scanned)
        offsets = self.offsets
        for hex_id, off, size in entries:
            offsets.setdefault(hex_id, (off, size))
        self.scanned = end
        return known + len(entries)

    def locate(self, hex_id: str, raw: bytes) -> int:
        """Offset of a record in this pack, or -1 (active packs: only what has been scanned)."""
        if self.index is not None:
            return self.index.find(raw)
        hit = self.offsets.get(hex_id)
        if hit is not None:
            return hit[0]
        partial = self.partial
        return partial.find(raw) if partial is not None else -1

    def read(self, hex_id: str, offset: int, reader, raw: bytes | None = None) -> tuple[str, bytes]:
        """(type, body) of the record at `offset`, verified: crc, header id, size.

        `reader` is `codec.Decompressor.read`; `raw` is the id as bytes, if the caller has it."""
        try:
            if self.index is not None:
                buf, pos = (self._mm if self._mm is not None else self.data()), offset
            else:
                hit = self.offsets.get(hex_id)
                buf = self._pread_record(offset) if hit is None else os.pread(self.fd(), hit[1], offset)
                pos = 0
            code, raw_id, body, _ = reader(buf, pos)
            if raw_id != (raw if raw is not None else bytes.fromhex(hex_id)):
                raise CorruptObject(f"record header names {raw_id.hex()}")
            return codec.type_name(code), body
        except CorruptObject as exc:
            raise CorruptObject(f"object {hex_id}{self.where} at offset {offset}: {exc}",
                                id=hex_id, pack=self.name, offset=offset) from None

    def _pread_record(self, offset: int) -> bytes:
        """The record at `offset` of an active pack, located by the partial index (which does
        not record sizes): its header first, then the rest if it is longer than one read."""
        fd = self.fd()
        buf = os.pread(fd, _FIRST_READ, offset)
        if len(buf) >= codec.RECORD_HEAD_SIZE:
            size = codec.RECORD_HEAD_SIZE + _STORED_LEN(buf, 16)[0]
            if size > len(buf):
                buf = os.pread(fd, size, offset)
        return buf

    def ids(self) -> Iterator[str]:
        if self.index is not None:
            return self.index.ids()
        tail = list(self.offsets)
        if self.partial is None:
            return iter(tail)
        return itertools.chain(self.partial.ids(), (i for i in tail if self.partial.find(bytes.fromhex(i)) < 0))

    def with_prefix(self, prefix: str) -> Iterator[str]:
        if self.index is not None:
            return self.index.with_prefix(prefix)
        found = {i for i in self.offsets if i.startswith(prefix)}
        if self.partial is not None:
            found.update(self.partial.with_prefix(prefix))
        return iter(sorted(found))

    def count(self) -> int:
        if self.index is not None:
            return len(self.index)
        return len(self.offsets) + (len(self.partial) if self.partial is not None else 0)

    def close(self) -> None:
        if self.partial is not None:
            self.partial.close()
            self.partial = None
        if self.index is not None:
            self.index.close()
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
