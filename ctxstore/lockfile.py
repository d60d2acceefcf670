"""The one way a file is replaced: create NAME.lock exclusively, write, fsync, rename over NAME.

A held lock is a clear error (LockHeld), after a short wait for a concurrent writer to finish;
a lock left by a crashed process is reported with the path to remove, as git does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import LockHeld

#: Seconds `LockFile` waits for a held lock when no `wait` is given. Read when each lock is
#: made, not when this module was loaded, so a caller (or a test) may change it at run time.
DEFAULT_WAIT = 2.0


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LockFile:
    """`with LockFile(path) as lock: lock.write(data); lock.commit()` — abort if not committed."""

    def __init__(self, path: str | os.PathLike, wait: float | None = None) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.wait = DEFAULT_WAIT if wait is None else wait
        self._fd: int | None = None

    def acquire(self) -> LockFile:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait
        delay = 0.001
        while True:
            try:
                self._fd = os.open(self.lock_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                return self
            except FileExistsError:
                if time.monotonic() >= deadline:
                    raise LockHeld(
                        f"unable to lock {self.path}: {self.lock_path} exists; another ctx process "
                        f"may be running — if not, remove that file", path=str(self.lock_path)
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def write(self, data: bytes) -> None:
        assert self._fd is not None, "lock not held"
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def commit(self, fsync: bool = True) -> None:
        """Make the new content durable and atomically visible under the real name."""
        assert self._fd is not None, "lock not held"
        fd, self._fd = self._fd, None
        _publish(fd, self.lock_path, self.path, fsync)

    def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            try:
                os.unlink(self.lock_path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> LockFile:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.abort()


def _publish(fd: int, tmp: Path, path: Path, fsync: bool) -> None:
    """The one temp-file-then-rename step for store files: fsync and close FD (open on TMP),
    rename TMP over PATH, fsync the directory. (Files the user names: userfiles.py.)"""
    try:
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def replace_file(tmp: str | os.PathLike, path: str | os.PathLike, data: bytes,
                 fsync: bool = True) -> None:
    """Write DATA to TMP (created or truncated: the caller holds whatever lock makes TMP
    its own, e.g. the repository transaction's) and publish it as PATH (see _publish)."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    _publish(fd, Path(tmp), Path(path), fsync)


def write_file_atomically(path: str | os.PathLike, data: bytes, fsync: bool = True) -> None:
    with LockFile(path) as lock:
        lock.write(data)
        lock.commit(fsync=fsync)


#: libgit2's lock files of a repository's own files (config, HEAD, index, packed-refs).
GIT_LOCKS = ("config.lock", "HEAD.lock", "index.lock", "packed-refs.lock")


def clear_git_locks(gitdir: Path) -> list[Path]:
    """Remove the lock files libgit2 leaves in GITDIR when killed mid-write (`config.lock`
    while setting the work tree, `HEAD.lock` while creating the repository, ...), which would
    otherwise fail every later command. Only for the git repositories ctxstore owns under
    `.ctx` (workspace.git, remotes.git), and only by a holder of the flock that every writer
    of that repository takes first: then no live process can be writing. Returns what went."""
    gone = []
    for stale in [*(gitdir / name for name in GIT_LOCKS), *(gitdir / "refs").rglob("*.lock")]:
        if stale.is_file():
            stale.unlink()
            gone.append(stale)
    return gone
