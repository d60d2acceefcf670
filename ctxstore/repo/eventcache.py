"""Derived maps keyed by event id, kept under `.ctx/cache/<name>/` (or in memory).

- `snapshots`: event id -> id of a "snapshot" object holding the state projected there;
- `sessions`: event id -> the session it belongs to, marked by append transactions every
  SESSION_MARK_EVERY generations, so finding an event's session walks at most that far.

Everything here can be deleted at any time: a missing entry costs a longer walk or a full
fold, never correctness. A snapshot is used only if it names the event it is keyed by; a
session mark is written only by the transaction that appended the event to that session.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..codec import is_full_id
from ..lockfile import write_file_atomically

SESSION_MARK_EVERY = 256


class EventCache:
    def __init__(self, root: Path | None, name: str) -> None:
        self.root = root / "cache" / name if root is not None else None
        self._mem: dict[str, str] = {}

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
            path = self._path(event_id)
            os.makedirs(path.parent, exist_ok=True)
            # no fsync: a lost cache entry only costs a re-fold
            write_file_atomically(path, f"{snapshot_id}\n".encode(), fsync=False)

    def clear(self) -> None:
        self._mem.clear()
        if self.root is not None and self.root.exists():
            for p in sorted(self.root.rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
