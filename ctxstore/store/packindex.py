"""The sorted on-disk index of a sealed pack: fan-out table, ids, offsets, checksum.

Layout (all integers little-endian; see docs/format.md "Indexes"):

    0     4      magic b"CIDX"
    4     4      version (u32) = 1
    8     8      pack length (u64): bytes of the pack this index covers
    16    1024   fan-out: 256 x u32, entry b = number of ids whose first byte <= b
    1040  32*N   ids, sorted ascending (N = fan-out[255])
    ...   8*N    record offsets (u64), in id order
    ...   32     blake3 of every preceding byte

Opening an index only maps it: nothing is read until the first lookup, which checks the magic,
version and size. The checksum is verified by fsck (`verify_checksum`), not on every open,
because opening must stay cheap for a store with many packs.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator

import blake3

from ..errors import CorruptStore

MAGIC = b"CIDX"
VERSION = 1
_HEAD = struct.Struct("<4sIQ")
_FANOUT = struct.Struct("<256I")
_OFFSET = struct.Struct("<Q")
HEAD_SIZE = _HEAD.size
IDS_START = HEAD_SIZE + _FANOUT.size
TRAILER_SIZE = 32


def build_index(entries: list[tuple[bytes, int]], pack_length: int) -> bytes:
    """Index bytes for (raw 32-byte id, record offset) pairs; a duplicate id keeps one offset."""
    entries = sorted(dict(entries).items())
    counts = [0] * 256
    for raw, _ in entries:
        counts[raw[0]] += 1
    fanout, total = [], 0
    for c in counts:
        total += c
        fanout.append(total)
    parts = [_HEAD.pack(MAGIC, VERSION, pack_length), _FANOUT.pack(*fanout)]
    parts.extend(raw for raw, _ in entries)
    parts.append(struct.pack(f"<{len(entries)}Q", *(off for _, off in entries)))
    data = b"".join(parts)
    return data + blake3.blake3(data).digest()


class PackIndex:
    """Read-only view of one .idx file, mapped on first use and searched by fan-out + bisect."""

    __slots__ = ("path", "_mm", "_fanout", "_count", "_offsets_at", "pack_length")

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._mm: mmap.mmap | None = None

    def _open(self) -> mmap.mmap:
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < IDS_START + TRAILER_SIZE:
                raise CorruptStore(f"index {self.path} is truncated ({size} bytes)", path=self.path)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        magic, version, pack_length = _HEAD.unpack_from(mm, 0)
        if magic != MAGIC:
            raise CorruptStore(f"index {self.path} has a bad magic", path=self.path)
        if version != VERSION:
            raise CorruptStore(f"index {self.path} has unsupported version {version}",
                               path=self.path)
        fanout = _FANOUT.unpack_from(mm, HEAD_SIZE)
        count = fanout[255]
        if size != IDS_START + 40 * count + TRAILER_SIZE:
            raise CorruptStore(f"index {self.path}: size {size} does not match {count} entries",
                               path=self.path)
        self._fanout = (0,) + fanout
        self._count = count
        self._offsets_at = IDS_START + 32 * count
        self.pack_length = pack_length
        self._mm = mm
        return mm

    def __len__(self) -> int:
        if self._mm is None:
            self._open()
        return self._count

    def find(self, key: bytes) -> int:
        """Record offset of a raw 32-byte id, or -1. The hot path of every sealed-pack read."""
        mm = self._mm
        if mm is None:
            mm = self._open()
        b = key[0]
        lo, hi = self._fanout[b], self._fanout[b + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            p = IDS_START + (mid << 5)
            cand = mm[p:p + 32]
            if cand < key:
                lo = mid + 1
            elif cand == key:
                return _OFFSET.unpack_from(mm, self._offsets_at + (mid << 3))[0]
            else:
                hi = mid
        return -1

    def with_prefix(self, prefix: str) -> Iterator[str]:
        """Hex ids starting with a hex prefix, in order."""
        mm = self._mm
        if mm is None:
            mm = self._open()
        low = bytes.fromhex((prefix + "0" * 64)[:64])
        lo, hi = self._fanout[low[0]], self._fanout[low[0] + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            p = IDS_START + (mid << 5)
            if mm[p:p + 32] < low:
                lo = mid + 1
            else:
                hi = mid
        end = self._fanout[low[0] + 1]
        while lo < end:
            p = IDS_START + (lo << 5)
            hex_id = mm[p:p + 32].hex()
            if not hex_id.startswith(prefix):
                return
            yield hex_id
            lo += 1

    def entries(self) -> Iterator[tuple[bytes, int]]:
        """(raw id, offset) for every entry, in id order."""
        mm = self._mm
        if mm is None:
            mm = self._open()
        offsets = struct.unpack_from(f"<{self._count}Q", mm, self._offsets_at)
        for i, off in enumerate(offsets):
            p = IDS_START + (i << 5)
            yield mm[p:p + 32], off

    def ids(self) -> Iterator[str]:
        mm = self._mm
        if mm is None:
            mm = self._open()
        for i in range(self._count):
            p = IDS_START + (i << 5)
            yield mm[p:p + 32].hex()

    def verify_checksum(self) -> bool:
        mm = self._mm
        if mm is None:
            mm = self._open()
        body_end = len(mm) - TRAILER_SIZE
        with memoryview(mm) as view, view[:body_end] as body:
            digest = blake3.blake3(body).digest()
        return digest == mm[body_end:]

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
