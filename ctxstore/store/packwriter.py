"""The one active pack a writer process appends to: takeover, append, group commit, seal.

Every record reaches the OS with one os.write before put returns (no userspace buffer, so a
crash of the process loses nothing the OS has) — except while `buffering` is on: the store turns
it on for the length of a repository transaction, whose objects no ref names before its commit
flushes them. Then records collect in memory and reach the OS in one write per `BUFFER_BYTES`
(or at the next sync, seal, read of the store, or the transaction's end): a batch of 30k events
makes ~100 writes instead of 30k. A kill -9 inside the transaction loses only objects that
nothing names yet. What is *durable* depends on the durability
setting: "always" fdatasyncs per record; "batch" (default) lets a daemon thread fdatasync at most
`sync_interval` seconds or `sync_objects` records after a write; "never" leaves it to the OS.
`flush()` makes everything written so far durable in "batch" and "always" modes.

The writer also keeps the pack's partial index (.pidx) current, so that no reader scans more
than a bounded tail: after a sync that leaves `index_every` bytes unindexed, and at close when
`index_at_close` bytes are (docs/format.md "Partial indexes").
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import AbstractContextManager, nullcontext

from ..errors import InvalidInput, IOFailure
from ..lockfile import write_file_atomically
from .pack import (
    HEADER,
    HEADER_SIZE,
    IDX_SUFFIX,
    PIDX_SUFFIX,
    Pack,
    check_header,
    create_pack,
    good_end,
    later_record,
    read_file_from,
    remove_partial_index,
    scan,
    sibling,
)
from .packindex import PackIndex, PartialIndex, merge_index
from .writerlock import open_locked

DURABILITY = ("always", "batch", "never")
#: Unindexed bytes after which a sync also extends the partial index.
INDEX_EVERY = 1024 * 1024
#: Unindexed bytes a writer leaves behind at close without indexing them.
INDEX_AT_CLOSE = 64 * 1024
#: Buffered records are written once they reach this many bytes.
BUFFER_BYTES = 256 * 1024


def check_durability(durability: str) -> str:
    if durability not in DURABILITY:
        raise InvalidInput(f"durability must be one of {', '.join(DURABILITY)}, not {durability!r}")
    return durability


def idx_path(pack_path: str) -> str:
    return sibling(pack_path, IDX_SUFFIX)


def recover(fd: int, path: str, start: int = HEADER_SIZE) -> tuple[dict[str, tuple[int, int]], int] | None:
    """Scan a locked active pack from `start` (its partial index's end mark) and cut a torn
    tail: (id -> (offset, size) of the records from `start`, end).

    None if the pack is damaged in the middle (intact records follow a bad one): truncating
    would destroy them, so such a pack is left alone for fsck and never appended to.
    """
    head = os.pread(fd, HEADER_SIZE, 0)
    check_header(head, path)
    if len(head) < HEADER_SIZE:
        os.ftruncate(fd, 0)
        os.pwrite(fd, HEADER, 0)
        os.fsync(fd)
        return {}, HEADER_SIZE
    data = read_file_from(fd, start)
    entries, end = scan(data, 0, start)
    end, keep = good_end(data, entries, end, start)
    if end < start + len(data):
        if later_record(data, end - start) >= 0:
            return None
        os.ftruncate(fd, end)
        os.fsync(fd)
    offsets: dict[str, tuple[int, int]] = {}
    for hex_id, off, size in entries[:keep]:
        offsets.setdefault(hex_id, (off, size))
    return offsets, end


def take_over(fd: int, pack: Pack) -> bool:
    """Prepare a locked active pack for appending or sealing: its partial index (re-read: the
    previous writer may have extended it), then recovery of the tail after its end mark.
    False if the pack is damaged in the middle (see `recover`)."""
    if pack.partial is not None:
        pack.partial.close()
    start = pack.load_partial()
    found = recover(fd, pack.path, start)
    if found is None:
        return False
    pack.offsets, pack.scanned = found
    return True


def _tail_entries(pack: Pack, end: int) -> list[tuple[bytes, int]]:
    return [(bytes.fromhex(hex_id), off) for hex_id, (off, _) in list(pack.offsets.items())
            if off < end]


def _write_index(path: str, data: bytes, fsync: bool = True) -> None:
    try:
        os.unlink(path + ".lock")  # we hold the pack's flock: such a lock is from a dead writer
    except FileNotFoundError:
        pass
    write_file_atomically(path, data, fsync=fsync)


def seal(fd: int, pack: Pack, end: int) -> PackIndex:
    """Write the index of a locked pack: pack data durable first, then the index (fsync+rename),
    then remove the partial index it supersedes."""
    os.fdatasync(fd)
    path = idx_path(pack.path)
    _write_index(path, merge_index(pack.partial, _tail_entries(pack, end), end))
    index = PackIndex(path)
    pack.seal_with(index)
    remove_partial_index(pack.path)
    return index


def extend_partial(pack: Pack, end: int, fsync: bool = True,
                   guard: AbstractContextManager | None = None) -> None:
    """Write the partial index of a locked active pack up to `end` (a record boundary whose
    bytes the caller has made durable: write ordering rule 7), then use it.

    `guard` is held while the pack's scanned map is read and trimmed (the writer's append lock:
    appends go on meanwhile from another thread), not while the index is merged and written."""
    if end <= pack.indexed_end:
        return
    guard = guard or nullcontext()
    with guard:
        entries = _tail_entries(pack, end)
    path = sibling(pack.path, PIDX_SUFFIX)
    _write_index(path, merge_index(pack.partial, entries, end), fsync)
    index = PartialIndex(path)
    index.pack_length_checked()
    with guard:
        # the new index first, then drop what it covers from the scanned map: a concurrent
        # lookup in this process finds an id in one or the other (the old index is left to the
        # collector, as another thread may be searching it)
        pack.partial = index
        offsets = pack.offsets
        for hex_id in [h for h, (off, _) in offsets.items() if off < end]:
            del offsets[hex_id]


class PackWriter:
    """Appends records to one locked active pack; syncs them per the durability setting."""

    def __init__(self, packs_dir: str, durability: str = "batch", sync_interval: float = 0.1,
                 sync_objects: int = 100, index_every: int = INDEX_EVERY,
                 index_at_close: int = INDEX_AT_CLOSE) -> None:
        self.packs_dir = packs_dir
        self.durability = check_durability(durability)
        self.sync_interval = sync_interval
        self.sync_objects = sync_objects
        self.index_every = index_every
        self.index_at_close = index_at_close
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
        #: collect records in `_buf` instead of writing each (see the module docstring)
        self.buffering = False
        self._buf: list[bytes] = []
        self.buffered = 0  # bytes in `_buf`

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
            if not take_over(fd, pack):
                os.close(fd)
                continue
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
            buffered = self.buffering and self.durability != "always"
            if buffered:
                # the syncer hears of them once they are written (`_drain_locked`)
                self._buf.append(record)
                self.buffered += len(record)
            else:
                self._write_or_cut(record, off)
            self.size = end = off + len(record)
            self.pack.offsets[hex_id] = (off, len(record))
            self.pack.scanned = end
            if buffered:
                if self.buffered >= BUFFER_BYTES:
                    self._drain_locked()
            elif self.durability == "batch":
                self._written(1)
        if self.durability == "always":
            os.fdatasync(fd)  # everything written up to `end` is durable now
            if end - self.pack.indexed_end >= self.index_every:
                with self._sync_lock:
                    self._index_to(end)
        elif self.durability == "never" and end - self.pack.indexed_end >= self.index_every:
            with self._sync_lock:
                self.drain()  # the partial index covers only written bytes
                self._index_to(end)

    def drain(self) -> None:
        """Hand the buffered records to the OS (reads of this pack and syncs need them there)."""
        if self.buffered:
            with self._cond:
                self._drain_locked()

    def _drain_locked(self) -> None:
        if self._buf and self._fd is not None:
            data = b"".join(self._buf)
            start = self.size - self.buffered
            try:
                self._write_or_cut(data, start)
            except IOFailure:
                # the buffered records were never stored: forget them (a later put of the same
                # object writes it again); the transaction that put them fails with this error
                for hex_id in [k for k, (o, _) in self.pack.offsets.items() if o >= start]:
                    del self.pack.offsets[hex_id]
                self.size = self.pack.scanned = start
                self._buf.clear()
                self.buffered = 0
                raise
            if self.durability == "batch":
                self._written(len(self._buf))
        self._buf.clear()
        self.buffered = 0

    def _write_or_cut(self, data: bytes, start: int) -> None:
        """Write DATA at the pack's end (START); on an OS error (a full disk) cut the pack back
        to START, so no torn record is left, and raise IOFailure naming the pack file."""
        fd = self._fd
        try:
            n = os.write(fd, data)
            if n != len(data):
                _write_rest(fd, data, n)
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
                os.lseek(fd, start, os.SEEK_SET)
            except OSError:
                pass  # the next writer to take the pack over cuts a torn tail (prepare)
            raise IOFailure(f"{self.pack.path}: {exc.strerror or exc} (writing "
                            f"{len(data)} bytes at offset {start}; nothing after it was "
                            f"stored)", path=self.pack.path) from None

    def _written(self, records: int) -> None:
        """`records` more reached the OS: the group-commit thread syncs them in time (caller
        holds `_cond`)."""
        first = self._pending == 0
        self._pending += records
        if first:
            self._first_pending = time.monotonic()
            if self._thread is None:
                self._start_syncer()
            self._cond.notify()
        elif self._pending >= self.sync_objects:
            self._cond.notify()

    def _index_to(self, end: int) -> None:
        """Extend the partial index to `end` (caller holds `_sync_lock`; bytes before `end`
        durable, or durability "never")."""
        pack = self.pack
        if pack is not None and not pack.sealed:
            extend_partial(pack, end, fsync=self.durability != "never", guard=self._cond)

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
        """Make every record appended so far durable (for durability "never": only written)."""
        if self.durability == "never":
            self.drain()
            return
        with self._sync_lock:
            with self._cond:
                self._drain_locked()
                pending, fd, end = self._pending, self._fd, self.size
                self._pending = 0
            if pending and fd is not None:
                os.fdatasync(fd)
                if self.pack is not None and end - self.pack.indexed_end >= self.index_every:
                    self._index_to(end)

    # -- sealing and release ----------------------------------------------------------------
    def seal(self) -> Pack:
        """Seal the active pack and let it go; the next append needs a new `acquire`."""
        with self._sync_lock, self._cond:
            self._drain_locked()
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
        with self._sync_lock:  # leave at most `index_at_close` bytes for readers to scan
            if self.pack is not None and self.size - self.pack.indexed_end >= self.index_at_close:
                self._index_to(self.size)
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
