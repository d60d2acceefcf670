"""Derived maps keyed by event id, kept under `.ctx/cache/<name>/` (or in memory).

- `snapshots`: event id -> id of a "snapshot" object holding the state projected there;
- `sessions`: event id -> the session it belongs to, marked by append transactions every
  SESSION_MARK_EVERY generations, so finding an event's session walks at most that far.

Everything here can be deleted at any time: a missing entry costs a longer walk or a full
fold, never correctness. A snapshot is used only if it names the event it is keyed by; a
session mark is written only by the transaction that appended the event to that session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..codec import is_full_id
from ..lockfile import write_file_atomically

if TYPE_CHECKING:
    from concurrent.futures import Future

SESSION_MARK_EVERY = 256


class EventCache:
    def __init__(self, root: Path | None, name: str) -> None:
        self.root = root / "cache" / name if root is not None else None
        self._mem: dict[str, str] = {}
        self._pool: Any = None  # put_soon's worker, from the first put_soon until wait()
        self._pending: list[Future] = []

    def _path(self, event_id: str) -> Path:
        assert self.root is not None
        return self.root / event_id[:2] / event_id

    def get(self, event_id: str) -> str | None:
        hit = self._mem.get(event_id)
        if hit is not None or self.root is None or not is_full_id(event_id):
            return hit
        try:
            value = self._path(event_id).read_text().strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not is_full_id(value):
            return None
        self._mem[event_id] = value
        return value

    def put(self, event_id: str, snapshot_id: str) -> None:
        self._mem[event_id] = snapshot_id
        if self.root is not None:
            self._write(event_id, snapshot_id)

    def _write(self, event_id: str, value: str) -> None:
        # no fsync: a lost cache entry only costs a re-fold (LockFile makes the directory)
        write_file_atomically(self._path(event_id), f"{value}\n".encode(), fsync=False)

    def put_soon(self, event_id: str, value: str) -> None:
        """`put`, with the file written by a worker thread: a bulk append goes on encoding
        while the file system creates the entry (a new file and directory cost 2–4 ms of wall
        time on a busy disk, ~15 µs of every event of a batch at one mark per 256). `wait()`
        waits for them and raises the first error; the entry is readable here at once."""
        self._mem[event_id] = value
        if self.root is None:
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # imports logging: not at start-up

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="ctxstore-marks")
        self._pending.append(self._pool.submit(self._write, event_id, value))

    def wait(self) -> None:
        """Wait for every `put_soon` file and stop the worker; raises the first error."""
        pool, pending = self._pool, self._pending
        self._pool, self._pending = None, []
        if pool is not None:
            pool.shutdown(wait=True)
        for future in pending:
            future.result()

    def clear(self) -> None:
        self._mem.clear()
        if self.root is not None and self.root.exists():
            for p in sorted(self.root.rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
