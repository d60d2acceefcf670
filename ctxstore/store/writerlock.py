"""Advisory per-file locks that vanish with the process that held them.

A writer holds `flock(LOCK_EX)` on the pack file it appends to, and consolidation holds one on
`packs/consolidate.lock`. Unlike a `NAME.lock` file (see ctxstore.lockfile), an flock needs no
cleanup after kill -9: the kernel drops it when the holder's descriptor closes, so a crashed
writer's pack can be taken over by the next process without a human removing anything.
"""

from __future__ import annotations

import fcntl
import os


def try_lock(fd: int) -> bool:
    """Take an exclusive flock on `fd` without waiting; False if another descriptor holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def open_locked(path: str | os.PathLike, flags: int = os.O_RDWR) -> int | None:
    """Open `path` and lock it; None if it is locked elsewhere or has vanished."""
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    if try_lock(fd):
        return fd
    os.close(fd)
    return None
