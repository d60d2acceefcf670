"""The cache of state snapshots: event id -> id of a "snapshot" object holding the projection.

Snapshots are derived data: the map lives in `.ctx/cache/snapshots/` (or in memory), can be
deleted at any time, and a snapshot is used only if it decodes and names the event it is keyed
by. Losing the cache costs one full fold, never correctness.
"""

from __future__ import annotations

import os
from pathlib import Path

from .codec import is_full_id
from .lockfile import write_file_atomically


class SnapshotCache:
    def __init__(self, root: Path | None) -> None:
        self.root = root / "cache" / "snapshots" if root is not None else None
        self._mem: dict[str, str] = {}

    def _path(self, event_id: str) -> Path:
        assert self.root is not None
        return self.root / event_id[:2] / event_id

    def get(self, event_id: str) -> str | None:
        hit = self._mem.get(event_id)
        if hit is not None or self.root is None:
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
