"""`packs/gc.lock`: keeps gc from deleting an object that a live process may be about to name.

A writer that finds an object already stored does not write it again (put's presence check,
`id in store`); it then names it, by an event or by a ref. If that object sits in an old pack
that gc marked dead a moment earlier, gc would delete it under the writer. So:

- every PackStore that has looked an object up to decide something (a put, `in`, a prefix
  search) holds a *shared* flock on `packs/gc.lock`, from that first look-up until it is closed;
- gc takes the *exclusive* flock only for its last step: with no such process left (and none
  able to start), it re-reads refs, HEAD and reflogs, marks what became reachable meanwhile,
  copies that out of the packs it is about to delete, and only then deletes them.

An flock needs no cleanup after kill -9 (see writerlock.py). Neither side waits forever: a
writer waits up to WRITER_WAIT seconds for gc's short exclusive step, gc up to its `wait` for
the writers to close; each then raises LockHeld, having changed nothing it should not have.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time

from ..errors import LockHeld

LOCK_NAME = "gc.lock"
#: How long a writer waits for gc's exclusive step (re-mark, copy, delete) before giving up.
WRITER_WAIT = 60.0
_POLL = 0.01


def _open(path: str) -> int | None:
    """The lock file, created if need be; None if this process may not create or open it (a
    read-only store, which no one can gc through this process either)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
            raise
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def create_lock_file(packs_dir: str) -> None:
    """Create an empty `gc.lock` (a new store does, so that no later look-up adds a file)."""
    fd = _open(os.path.join(packs_dir, LOCK_NAME))
    if fd is not None:
        os.close(fd)


def _poll(fd: int, mode: int, wait: float) -> bool:
    """Take the flock `mode` on `fd`, retrying for up to `wait` seconds."""
    deadline = time.monotonic() + wait
    delay = _POLL
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


class GcLock:
    """One descriptor on `packs/gc.lock`, shared (`share`) or exclusive (`exclusive`)."""

    def __init__(self, packs_dir: str) -> None:
        self.path = os.path.join(packs_dir, LOCK_NAME)
        self._fd: int | None = None
        self._mutex = threading.Lock()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def share(self, wait: float = WRITER_WAIT) -> None:
        """Hold the shared lock (no-op if held); waits out a gc's exclusive step."""
        if self._fd is not None:
            return
        with self._mutex:
            if self._fd is None:
                self._fd = self._take(fcntl.LOCK_SH, wait, "gc is deleting packs")

    def exclusive(self, wait: float) -> None:
        """Hold the exclusive lock: no process holds or can take the shared one meanwhile."""
        with self._mutex:
            if self._fd is not None:
                raise LockHeld(f"{self.path} is already held by this store")
            self._fd = self._take(fcntl.LOCK_EX, wait, "other processes have the store open")

    def _take(self, mode: int, wait: float, what: str) -> int:
        """The locked descriptor; -1 (remembered, so not retried per call) where a shared lock
        cannot be had because the file cannot be opened."""
        fd = _open(self.path)
        if fd is None:
            if mode == fcntl.LOCK_EX:
                raise LockHeld(f"cannot open {self.path}: gc needs to write the store")
            return -1
        if not _poll(fd, mode, wait):
            os.close(fd)
            raise LockHeld(f"{self.path} stayed locked for {wait:g}s ({what})")
        return fd

    def release(self) -> None:
        with self._mutex:
            if self._fd is not None and self._fd >= 0:
                os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> GcLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
