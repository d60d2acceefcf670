"""The one active pack a writer process appends to: takeover, append, group commit, seal.

Every record reaches the OS with one os.write before put returns (no userspace buffer, so a
crash of the process loses nothing the OS has). What is *durable* depends on the durability
setting: "always" fdatasyncs per record; "batch" (default) lets a daemon thread fdatasync at most
`sync_interval` seconds or `sync_objects` records after a write; "never" leaves it to the OS.
`flush()` makes everything written so far durable in "batch" and "always" modes.
"""

from __future__ import annotations

import os
import threading
import time

from ..errors import InvalidInput
from ..lockfile import write_file_atomically
from .pack import (
    HEADER,
    HEADER_SIZE,
    IDX_SUFFIX,
    PACK_SUFFIX,
    Pack,
    check_header,
    create_pack,
    good_end,
    later_record,
    read_file_from,
    scan,
)
from .packindex import PackIndex, build_index
from .writerlock import open_locked

DURABILITY = ("always", "batch", "never")


def check_durability(durability: str) -> str:
    if durability not in DURABILITY:
        raise InvalidInput(f"durability must be one of {', '.join(DURABILITY)}, not {durability!r}")
    return durability


def idx_path(pack_path: str) -> str:
    return pack_path[:-len(PACK_SUFFIX)] + IDX_SUFFIX


def recover(fd: int, path: str) -> tuple[dict[str, tuple[int, int]], int] | None:
    """Scan a locked active pack and cut a torn tail: (id -> (offset, size), end).

    None if the pack is damaged in the middle (intact records follow a bad one): truncating
    would destroy them, so such a pack is left alone for fsck and never appended to.
    """
    data = read_file_from(fd, 0)
    check_header(data, path)
    if len(data) < HEADER_SIZE:
        os.ftruncate(fd, 0)
        os.pwrite(fd, HEADER, 0)
        os.fsync(fd)
        return {}, HEADER_SIZE
    entries, end = scan(data, HEADER_SIZE)
    end, keep = good_end(data, entries, end)
    if end < len(data):
        if later_record(data, end) >= 0:
            return None
        os.ftruncate(fd, end)
        os.fsync(fd)
    offsets: dict[str, tuple[int, int]] = {}
    for hex_id, off, size in entries[:keep]:
        offsets.setdefault(hex_id, (off, size))
    return offsets, end


def seal(fd: int, pack: Pack, end: int) -> PackIndex:
    """Write the index of a locked pack: pack data durable first, then the index (fsync+rename)."""
    os.fdatasync(fd)
    entries = [(bytes.fromhex(hex_id), off) for hex_id, (off, _) in pack.offsets.items()]
    path = idx_path(pack.path)
    try:
        os.unlink(path + ".lock")  # we hold the pack's flock: such a lock is from a dead sealer
    except FileNotFoundError:
        pass
    write_file_atomically(path, build_index(entries, end))
    index = PackIndex(path)
    pack.seal_with(index)
    return index


class PackWriter:
    """Appends records to one locked active pack; syncs them per the durability setting."""

    def __init__(self, packs_dir: str, durability: str = "batch", sync_interval: float = 0.1,
                 sync_objects: int = 100) -> None:
        self.packs_dir = packs_dir
        self.durability = check_durability(durability)
        self.sync_interval = sync_interval
        self.sync_objects = sync_objects
        self.pack: Pack | None = None
        self.size = 0
        self._fd: int | None = None
        self._cond = threading.Condition(threading.Lock())
        self._sync_lock = threading.Lock()  # held across take-pending + fdatasync
        self._pending = 0
        self._first_pending = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.orphans: list[tuple[int, Pack]] = []

    # -- acquiring a pack -----------------------------------------------------------------
    def acquire(self, candidates: list[Pack]) -> tuple[Pack, list[Pack]]:
        """Take over an unlocked active pack, else create one: (the pack, other orphans locked).

        Orphans are further unlocked active packs (left by writers that ran concurrently and
        exited); the caller seals them so readers stop scanning them. Their fds stay locked in
        `self.orphans` until sealed.
        """
        chosen, orphans = None, []
        for pack in sorted(candidates, key=lambda p: -_size(p.path)):
            fd = open_locked(pack.path)
            if fd is None:
                continue
            if os.path.exists(idx_path(pack.path)):  # sealed while we were looking
                os.close(fd)
                continue
            found = recover(fd, pack.path)
            if found is None:
                os.close(fd)
                continue
            pack.offsets, pack.scanned = found
            os.lseek(fd, pack.scanned, os.SEEK_SET)
            if chosen is None:
                chosen = (fd, pack)
            else:
                orphans.append((fd, pack))
        if chosen is None:
            fd, path = create_pack(self.packs_dir)
            pack = Pack(path, sealed=False)
            chosen = (fd, pack)
        self._fd, self.pack = chosen
        self.size = self.pack.scanned
        self.orphans = orphans
        return self.pack, [p for _, p in orphans]

    def seal_orphans(self) -> list[Pack]:
        sealed = []
        for fd, pack in self.orphans:
            seal(fd, pack, pack.scanned)
            os.close(fd)
            sealed.append(pack)
        self.orphans = []
        return sealed

    # -- appending ------------------------------------------------------------------------
    def append(self, hex_id: str, record: bytes) -> None:
        with self._cond:
            fd = self._fd
            off = self.size
            n = os.write(fd, record)
            if n != len(record):
                _write_rest(fd, record, n)
            self.size = off + len(record)
            self.pack.offsets[hex_id] = (off, len(record))
            self.pack.scanned = self.size
            if self.durability == "batch":
                self._pending += 1
                if self._pending == 1:
                    self._first_pending = time.monotonic()
                    if self._thread is None:
                        self._start_syncer()
                    self._cond.notify()
                elif self._pending >= self.sync_objects:
                    self._cond.notify()
        if self.durability == "always":
            os.fdatasync(fd)

    def _start_syncer(self) -> None:
        self._thread = threading.Thread(target=self._syncer, name="ctxstore-sync", daemon=True)
        self._thread.start()

    def _syncer(self) -> None:
        """Group commit: sync when `sync_objects` are pending or the oldest is `sync_interval` old."""
        cond = self._cond
        while True:
            with cond:
                while not self._pending and not self._closed:
                    cond.wait()
                if self._closed:
                    return
                deadline = self._first_pending + self.sync_interval
                while 0 < self._pending < self.sync_objects and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    cond.wait(left)
            self.sync()

    def sync(self) -> None:
        """Make every record appended so far durable (no-op for durability "never")."""
        if self.durability == "never":
            return
        with self._sync_lock:
            with self._cond:
                pending, fd = self._pending, self._fd
                self._pending = 0
            if pending and fd is not None:
                os.fdatasync(fd)

    # -- sealing and release ----------------------------------------------------------------
    def seal(self) -> Pack:
        """Seal the active pack and let it go; the next append needs a new `acquire`."""
        with self._sync_lock, self._cond:
            pack, fd = self.pack, self._fd
            seal(fd, pack, self.size)
            self._pending = 0
            os.close(fd)
            self._fd, self.pack = None, None
        return pack

    def close(self) -> None:
        self.sync()
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=1)
        with self._sync_lock, self._cond:
            for fd, _ in self.orphans:
                os.close(fd)
            self.orphans = []
            if self._fd is not None:
                os.close(self._fd)  # closing the descriptor drops the flock
                self._fd, self.pack = None, None


def _write_rest(fd: int, record: bytes, done: int) -> None:
    view = memoryview(record)
    while done < len(record):
        done += os.write(fd, view[done:])


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return -1
