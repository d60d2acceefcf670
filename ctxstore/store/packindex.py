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
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterator

import blake3

from ..errors import CorruptStore

MAGIC = b"CIDX"
VERSION = 1
_HEAD = struct.Struct("<4sIQ")
_FANOUT = struct.Struct("<256I")
_OFFSET = struct.Struct("<Q")
_U64 = struct.Struct(">Q").unpack_from  # first 8 bytes of an id, as a number
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


def merge_index(base: PackIndex | None, entries: list[tuple[bytes, int]], pack_length: int) -> bytes:
    """The index of base's entries and then `entries`, where an id listed more than once keeps
    its earliest offset (its first record in the pack), without re-sorting the base: the new
    entries are sorted and spliced into the base's id and offset arrays. Byte for byte what
    `build_index` makes of the same (id, offset) pairs.

    What a writer uses to extend an active pack's partial index (or seal it) after a group
    commit: the cost is one read of the base plus a search per new entry, not a sort of the
    whole pack."""
    first = sorted(dict(reversed(entries)).items())
    count = len(base) if base is not None else 0
    if count == 0:
        return build_index(first, pack_length)
    fanout = base._fanout
    body = base._bytes(IDS_START, IDS_START + 40 * count)  # ids, then offsets
    ids_end, new = 32 * count, []
    for raw, off in first:
        pos = _position(body, fanout[raw[0]], fanout[raw[0] + 1], raw)
        if pos == count or body[32 * pos:32 * pos + 32] != raw:
            new.append((raw, off, pos))
    counts = [0] * 256
    for raw, _, _ in new:
        counts[raw[0]] += 1
    out_fanout, total = [], 0
    for b, c in enumerate(counts):
        total += c
        out_fanout.append(fanout[b + 1] + total)
    # views of the base, not copies: sealing a 32 MiB pack otherwise held its ~2.5 MB of ids
    # and offsets four times over at once (a step in a large import's peak memory)
    view = memoryview(body)
    ids, offs, prev = [], [], 0
    for raw, off, pos in new:
        ids += (view[32 * prev:32 * pos], raw)
        offs += (view[ids_end + 8 * prev:ids_end + 8 * pos], _OFFSET.pack(off))
        prev = pos
    ids.append(view[32 * prev:ids_end])
    offs.append(view[ids_end + 8 * prev:])
    parts = [_HEAD.pack(MAGIC, VERSION, pack_length), _FANOUT.pack(*out_fanout), *ids, *offs]
    digest = blake3.blake3()
    for part in parts:
        digest.update(part)
    parts.append(digest.digest())
    return b"".join(parts)


def _prefix_bounds(prefix: str) -> tuple[bytes, int]:
    """(the smallest id a hex prefix allows, the largest first byte it allows). A prefix of
    one digit stands for sixteen first bytes ("3": 0x30 to 0x3f), so its ids span sixteen
    fan-out buckets; from two digits on, one."""
    low = bytes.fromhex((prefix + "0" * 64)[:64])
    return low, int((prefix + "ff")[:2], 16)


def _position(ids: bytes, lo: int, hi: int, key: bytes) -> int:
    """Where `key` sorts among the 32-byte ids `ids[32*lo:32*hi]` (bisect_left)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if ids[32 * mid:32 * mid + 32] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


class PackIndex:
    """Read-only view of one .idx file, mapped on first use and searched by fan-out + bisect."""

    __slots__ = ("path", "_mm", "_fanout", "_count", "_offsets_at", "pack_length", "_prefixes",
                 "_lookups")

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._mm: mmap.mmap | None = None
        self._prefixes: array | None = None
        self._lookups = 0

    def _open(self) -> mmap.mmap:
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self._check_size(size)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._read_head(mm, size)
        self._mm = mm
        return mm

    def _check_size(self, size: int) -> None:
        if size < IDS_START + TRAILER_SIZE:
            raise CorruptStore(f"index {self.path} is truncated ({size} bytes)", path=self.path)

    def _read_head(self, buf, size: int) -> None:
        """Check magic, version and size from the first IDS_START bytes in `buf`, then keep the
        fan-out, count and covered pack length."""
        magic, version, pack_length = _HEAD.unpack_from(buf, 0)
        if magic != MAGIC:
            raise CorruptStore(f"index {self.path} has a bad magic", path=self.path)
        if version != VERSION:
            raise CorruptStore(f"index {self.path} has unsupported version {version}",
                               path=self.path)
        fanout = _FANOUT.unpack_from(buf, HEAD_SIZE)
        count = fanout[255]
        if size != IDS_START + 40 * count + TRAILER_SIZE:
            raise CorruptStore(f"index {self.path}: size {size} does not match {count} entries",
                               path=self.path)
        self._fanout = (0,) + fanout
        self._count = count
        self._offsets_at = IDS_START + 32 * count
        self.pack_length = pack_length

    def pack_length_checked(self) -> int:
        """The pack length this index covers, after the checks of opening it (magic, version,
        size); raises FileNotFoundError or CorruptStore."""
        if self._mm is None:
            self._open()
        return self.pack_length

    def __len__(self) -> int:
        if self._mm is None:
            self._open()
        return self._count

    def find(self, key: bytes) -> int:
        """Record offset of a raw 32-byte id, or -1. The hot path of every sealed-pack read.

        Ids are blake3 hashes, so uniform: interpolation search on their first 8 bytes needs
        ~3 probes where bisection needs ~log2(N/256) (12 at 1M ids). An index looked up often
        (more than N/256 times: a long-lived reader) also gets its ids' first 8 bytes copied
        into an array (8 bytes per id, ~10 ms per million ids, paid for by ~4k lookups), which
        C's bisect searches in well under a microsecond. Equal 8-byte prefixes (never seen in
        practice) fall back to comparing whole ids, so the answer is always exact.
        """
        mm = self._mm
        if mm is None:
            mm = self._open()
        b = key[0]
        fanout = self._fanout
        lo, hi = fanout[b], fanout[b + 1]
        kv = _U64(key)[0]
        prefixes = self._prefixes
        if prefixes is None:
            self._lookups += 1
            if self._lookups > self._count >> 8:
                prefixes = self._prefixes = self._load_prefixes(mm)
        if prefixes is not None:
            lo = bisect_left(prefixes, kv, lo, hi)
            while lo < hi and prefixes[lo] == kv:
                p = IDS_START + (lo << 5)
                cand = mm[p:p + 32]
                if cand == key:
                    return _OFFSET.unpack_from(mm, self._offsets_at + (lo << 3))[0]
                if cand > key:
                    return -1
                lo += 1
            return -1
        vlo, vhi = b << 56, (b + 1) << 56  # every id in [lo, hi) is >= vlo and < vhi
        while hi - lo > 8 and vlo < vhi:
            est = lo + (kv - vlo) * (hi - lo) // (vhi - vlo)
            if est >= hi:
                est = hi - 1
            p = IDS_START + (est << 5)
            cand = mm[p:p + 32]
            if cand < key:
                lo, vlo = est + 1, _U64(cand)[0]
            elif cand == key:
                return _OFFSET.unpack_from(mm, self._offsets_at + (est << 3))[0]
            else:
                hi, vhi = est, _U64(cand)[0]
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

    def _bytes(self, start: int, end: int) -> bytes:
        mm = self._mm
        if mm is None:
            mm = self._open()
        return mm[start:end]

    def _load_prefixes(self, mm: mmap.mmap) -> array:
        """The first 8 bytes of every id, as big-endian numbers (so sorted like the ids)."""
        end = IDS_START + 32 * self._count
        with memoryview(mm) as view, view[IDS_START:end] as ids, ids.cast("Q") as words, \
                words[::4] as firsts:
            out = array("Q", firsts.tobytes())
        if sys.byteorder == "little":
            out.byteswap()
        return out

    def with_prefix(self, prefix: str) -> Iterator[str]:
        """Hex ids starting with a hex prefix, in order."""
        mm = self._mm
        if mm is None:
            mm = self._open()
        low, last = _prefix_bounds(prefix)
        lo, hi = self._fanout[low[0]], self._fanout[low[0] + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            p = IDS_START + (mid << 5)
            if mm[p:p + 32] < low:
                lo = mid + 1
            else:
                hi = mid
        end = self._fanout[last + 1]
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
        count = self._count
        offsets = struct.unpack_from(f"<{count}Q", mm, self._offsets_at)
        ids = mm[IDS_START:IDS_START + 32 * count]
        return zip([ids[p:p + 32] for p in range(0, 32 * count, 32)], offsets, strict=True)

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
        self._prefixes = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None


class PartialIndex(PackIndex):
    """An active pack's .pidx, read with pread and never mapped.

    Same file format and answers as PackIndex. Not mapped because a reader that maps it pays
    for it in resident memory: the kernel maps the pages around each one a lookup touches, so a
    few dozen lookups make most of a 4 MB index resident, and a reader's peak memory would grow
    with the pack — what partial indexes exist to prevent. A lookup here is an interpolation
    step or two (one 32-byte pread each) and one pread of at most `WINDOW` ids.
    """

    __slots__ = ("_fd",)
    WINDOW = 64

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__(path)
        self._fd: int | None = None

    def _open(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            self._check_size(size)
            self._read_head(os.pread(fd, IDS_START, 0), size)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _bytes(self, start: int, end: int) -> bytes:
        if self._fd is None:
            self._open()
        out = os.pread(self._fd, end - start, start)
        if len(out) != end - start:
            raise CorruptStore(f"index {self.path} is shorter than it says", path=self.path)
        return out

    def pack_length_checked(self) -> int:
        if self._fd is None:
            self._open()
        return self.pack_length

    def __len__(self) -> int:
        if self._fd is None:
            self._open()
        return self._count

    def _offset(self, i: int) -> int:
        return _OFFSET.unpack(self._bytes(self._offsets_at + 8 * i, self._offsets_at + 8 * i + 8))[0]

    def find(self, key: bytes) -> int:
        """As PackIndex.find. A writer probes its pack for every object it puts (mostly
        misses): past `count / 256` lookups the ids' first 8 bytes are read into an array, so a
        miss costs a C bisect and no system call."""
        if self._fd is None:
            self._open()
        b = key[0]
        lo, hi = self._fanout[b], self._fanout[b + 1]
        kv = _U64(key)[0]
        prefixes = self._prefixes
        if prefixes is None:
            self._lookups += 1
            if self._lookups > self._count >> 8:
                prefixes = self._prefixes = self._read_prefixes()
        if prefixes is not None:
            lo = bisect_left(prefixes, kv, lo, hi)
            while lo < hi and prefixes[lo] == kv:
                p = IDS_START + (lo << 5)
                cand = self._bytes(p, p + 32)
                if cand == key:
                    return self._offset(lo)
                if cand > key:
                    return -1
                lo += 1
            return -1
        vlo, vhi = b << 56, (b + 1) << 56
        while hi - lo > self.WINDOW and vlo < vhi:
            est = min(lo + (kv - vlo) * (hi - lo) // (vhi - vlo), hi - 1)
            p = IDS_START + (est << 5)
            cand = self._bytes(p, p + 32)
            if cand < key:
                lo, vlo = est + 1, _U64(cand)[0]
            elif cand == key:
                return self._offset(est)
            else:
                hi, vhi = est, _U64(cand)[0]
        if lo >= hi:
            return -1
        window = self._bytes(IDS_START + 32 * lo, IDS_START + 32 * hi)
        i = _position(window, 0, hi - lo, key)
        if i < hi - lo and window[32 * i:32 * i + 32] == key:
            return self._offset(lo + i)
        return -1

    def _read_prefixes(self) -> array:
        ids = self._bytes(IDS_START, IDS_START + 32 * self._count)
        with memoryview(ids) as view, view.cast("Q") as words, words[::4] as firsts:
            out = array("Q", firsts.tobytes())
        if sys.byteorder == "little":
            out.byteswap()
        return out

    def with_prefix(self, prefix: str) -> Iterator[str]:
        if self._fd is None:
            self._open()
        low, last = _prefix_bounds(prefix)
        lo, hi = self._fanout[low[0]], self._fanout[last + 1]
        ids = self._bytes(IDS_START + 32 * lo, IDS_START + 32 * hi)
        for i in range(_position(ids, 0, self._fanout[low[0] + 1] - lo, low), hi - lo):
            hex_id = ids[32 * i:32 * i + 32].hex()
            if not hex_id.startswith(prefix):
                return
            yield hex_id

    def entries(self) -> Iterator[tuple[bytes, int]]:
        count = len(self)
        body = self._bytes(IDS_START, IDS_START + 40 * count)
        offsets = struct.unpack_from(f"<{count}Q", body, 32 * count)
        return zip([body[p:p + 32] for p in range(0, 32 * count, 32)], offsets, strict=True)

    def ids(self) -> Iterator[str]:
        count = len(self)
        ids = self._bytes(IDS_START, IDS_START + 32 * count)
        return (ids[p:p + 32].hex() for p in range(0, 32 * count, 32))

    def verify_checksum(self) -> bool:
        """Does the trailer match the bytes? Hashed 1 MiB at a time: a reader's memory does
        not grow with the index."""
        if self._fd is None:
            self._open()
        size = os.fstat(self._fd).st_size
        h = blake3.blake3()
        pos, end = 0, size - TRAILER_SIZE
        while pos < end:
            chunk = self._bytes(pos, min(end, pos + (1 << 20)))
            h.update(chunk)
            pos += len(chunk)
        return h.digest() == self._bytes(end, size)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # dropped by a writer while another thread may still search it
        self.close()
