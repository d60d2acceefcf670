"""Merging small sealed packs into one, so lookups probe few indexes.

Which packs: when more than `max_packs` sealed packs exist, packs are sorted by size and the
smallest run is merged that leaves every remaining pack at least twice the size of all smaller
ones together (git's geometric repack, factor 2). Pack count then stays logarithmic in the store
size while each record is copied O(log n) times over the store's life.

Order (docs/format.md "Write ordering"): the new pack is written under a temporary name,
fdatasync'd and renamed; its index is made durable (fsync + rename); only then are the old
packs deleted, each pack file before its index. A kill at any point leaves every object in at
least one sealed pack; duplicates are harmless and the next consolidation drops them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .. import codec
from ..errors import CorruptObject
from ..lockfile import fsync_dir, write_file_atomically
from .pack import HEADER, IDX_SUFFIX, PACK_SUFFIX, PREFIX, Pack, remove_partial_index
from .packindex import build_index
from .writerlock import try_lock

LOCK_NAME = "consolidate.lock"
_CHUNK = 1 << 20


def choose(sizes: list[int]) -> int:
    """How many of the smallest packs (sizes sorted ascending) to merge: 0 or >= 2."""
    k, total = 0, 0
    for j, size in enumerate(sizes):
        if size < 2 * total:
            k = j + 1
        total += size
    return k if k >= 2 else 0


def sealed_packs(packs_dir: str) -> list[tuple[int, str]]:
    """(size, path) of every sealed pack, smallest first."""
    names = set(os.listdir(packs_dir))
    out = []
    for name in names:
        if name.startswith(PREFIX) and name.endswith(PACK_SUFFIX):
            if name[:-len(PACK_SUFFIX)] + IDX_SUFFIX in names:
                try:
                    out.append((os.stat(os.path.join(packs_dir, name)).st_size,
                                os.path.join(packs_dir, name)))
                except FileNotFoundError:
                    continue
    return sorted(out)


def consolidate(packs_dir: str, max_packs: int) -> list[str]:
    """Merge small sealed packs if there are more than `max_packs`; returns the removed paths.

    Does nothing if another process is consolidating (its flock on consolidate.lock is held).
    A pack with a record that fails its crc is left out of the merge, never copied or dropped.
    """
    lock_fd = os.open(os.path.join(packs_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not try_lock(lock_fd):
            return []
        packs = sealed_packs(packs_dir)
        if len(packs) <= max_packs:
            return []
        k = choose([size for size, _ in packs])
        if not k:
            return []
        return _merge([path for _, path in packs[:k]], packs_dir)
    finally:
        os.close(lock_fd)


def _merge(paths: list[str], packs_dir: str) -> list[str]:
    name = PREFIX + os.urandom(20).hex()
    tmp = os.path.join(packs_dir, f"tmp-{name}{PACK_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    seen: dict[bytes, int] = {}
    merged: list[str] = []
    try:
        pos = _write(fd, HEADER)
        for path in paths:
            end = _copy(Pack(path, sealed=True), fd, pos, seen)
            if end >= 0:
                pos = end
                merged.append(path)
        os.fdatasync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    if len(merged) < 2:
        os.unlink(tmp)
        return []
    install_sealed(packs_dir, tmp, name, list(seen.items()), pos)
    for path in merged:
        os.unlink(path)
        os.unlink(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX)
        remove_partial_index(path)  # left by a crash between sealing and its removal
    fsync_dir(packs_dir)
    return merged


def install_sealed(packs_dir: str, tmp: str, name: str, entries: list[tuple[bytes, int]],
                   end: int, write_index: Callable[[str, bytes], None] | None = None) -> str:
    """Put a new pack written as `tmp` (already fdatasync'd) in place as `name`, sealed: its
    index durable first, then the rename, then the directory fsync; returns the pack's path.

    That order matters (format.md "Write ordering" 6): a `pack-*.pack` without its `.idx` is an
    active pack, and a writer looking for an unlocked one would take it over and append to it.
    Renaming first let a writer append records past the end the index then covered, where no
    reader looks: acknowledged objects vanished (gc and consolidation beside writers, issue 30).
    An index without its pack is nothing to readers (a kill between the two leaves one, as a
    kill between a deleted pack and its index does). `write_index(path, data)`: by default
    `write_file_atomically`; a caller's own (tests make it fail like a full disk)."""
    final = os.path.join(packs_dir, name + PACK_SUFFIX)
    (write_index or write_file_atomically)(final[:-len(PACK_SUFFIX)] + IDX_SUFFIX,
                                           build_index(entries, end))
    os.rename(tmp, final)
    fsync_dir(packs_dir)
    return final


def _copy(pack: Pack, fd: int, pos: int, seen: dict[bytes, int]) -> int:
    """Append the crc-checked records of `pack` at `pos`; the new end, or -1 (pack left out)."""
    out = copy_records(pack, fd, pos, seen)
    return -1 if out is None else out[0]


def copy_records(pack: Pack, fd: int, pos: int, written: dict[bytes, int],
                 live: Callable[[str], bool] | None = None,
                 present: Callable[[bytes], bool] | None = None,
                 transform: Callable[..., bytes] | None = None) -> tuple[int, int, int] | None:
    """Append the crc-checked records of `pack` at `pos`, in offset order, skipping records
    already `written` (raw id -> new offset, updated), those `present` elsewhere, and those
    whose hex id is not `live`. Returns (new end, records seen, records not live), or None if
    the pack is damaged or vanished: then nothing of it stays in the new pack (it is rolled
    back), so a damaged pack is neither lost nor copied with its damage. Consolidation and gc
    both copy through here. `transform(data, info, where)` returns the record to write instead
    of the original bytes (repack's recompression; it raises CorruptObject on damage)."""
    start, added, buf, buffered, total, dead = pos, [], [], 0, 0, 0
    try:
        data = pack.data()
        for raw, off in sorted(pack.index.entries(), key=lambda e: e[1]):
            total += 1
            hex_id = raw.hex()
            if live is not None and not live(hex_id):
                dead += 1
                continue
            if raw in written or (present is not None and present(raw)):
                continue
            info = codec.read_record_header(data, off, pack.where)
            if info.id != hex_id:
                raise CorruptObject(f"index and record disagree at offset {off}{pack.where}")
            if transform is None:
                codec.record_payload(data, info, pack.where)
                record = data[off:off + info.size]
            else:
                record = transform(data, info, pack.where)
            written[raw] = pos
            added.append(raw)
            pos += len(record)
            buf.append(record)
            buffered += len(record)
            if buffered >= _CHUNK:
                _write(fd, b"".join(buf))
                buf, buffered = [], 0
        _write(fd, b"".join(buf))
        return pos, total, dead
    except (CorruptObject, FileNotFoundError):
        for raw in added:
            del written[raw]
        os.ftruncate(fd, start)
        os.lseek(fd, start, os.SEEK_SET)
        return None


def _write(fd: int, data: bytes) -> int:
    view = memoryview(data)
    done = 0
    while done < len(data):
        done += os.write(fd, view[done:])
    return done
