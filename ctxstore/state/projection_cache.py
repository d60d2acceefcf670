"""The newest projections readers made, kept under `.ctx/cache/projections/` (docs/format.md).

Snapshot objects exist only every SNAPSHOT_EVERY generations, so without this a `ctx state` or
`ctx sessions` at a tip folds up to 255 events each time, and loading the folds alone costs
more than the rest of the command. With it, asking again at the same tip reads one small file,
and asking a few events later folds only those events.

The cache is derived and bounded: at most KEEP files, the oldest removed when one is written. A
file is used only if it names the event it is stored under and holds a state of the current
format; anything else is removed and ignored, never trusted. Writes are atomic without fsync:
a lost entry costs a longer fold, nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..codec import is_full_id, pack_value, unpack_value
from ..errors import CorruptObject
from ..lockfile import replace_file

#: How many projections are kept (a few per session for the sessions a user works in).
KEEP = 64


class ProjectionCache:
    def __init__(self, root: Path | None) -> None:
        self.dir = root / "cache" / "projections" if root is not None else None
        self._mem: dict[str, dict[str, Any]] = {}
        self._ids: set[str] | None = None

    def ids(self) -> set[str]:
        """The events with a cached projection (one directory listing per process)."""
        if self._ids is None:
            if self.dir is None:
                self._ids = set(self._mem)
            else:
                try:
                    self._ids = {n for n in os.listdir(self.dir) if is_full_id(n)}
                except (FileNotFoundError, NotADirectoryError):
                    self._ids = set()
        return self._ids

    def load(self, event_id: str) -> dict[str, Any] | None:
        """The snapshot body cached for EVENT_ID, or None (a bad file is removed)."""
        if self.dir is None:
            return self._mem.get(event_id)
        path = self.dir / event_id
        try:
            value = unpack_value(path.read_bytes())
        except FileNotFoundError:
            return None
        except CorruptObject:
            value = None
        state = value.get("state") if isinstance(value, dict) else None
        if (not isinstance(state, dict) or value.get("event") != event_id
                or state.get("source_event") != event_id):
            self._drop(event_id)
            return None
        return value

    def save(self, event_id: str, value: dict[str, Any]) -> None:
        ids = self.ids()
        if self.dir is None:
            self._mem[event_id] = value
        else:
            # a temporary file of this process's own, not a lock file: a reader killed here
            # must not leave a lock that makes the next `ctx state` wait and fail
            tmp = self.dir / f".{event_id}.{os.getpid()}.tmp"
            try:
                os.makedirs(self.dir, exist_ok=True)
                replace_file(tmp, self.dir / event_id, pack_value(value), fsync=False)
            except OSError:  # a cache on a read-only or full disk: the fold stays correct
                return
        ids.add(event_id)
        if len(ids) > KEEP:
            self._prune(ids)

    def _prune(self, ids: set[str]) -> None:
        if self.dir is None:
            for eid in list(self._mem)[: len(self._mem) - KEEP]:
                self._drop(eid)
            return
        aged = []
        for eid in list(ids):
            try:
                aged.append((os.stat(self.dir / eid).st_mtime_ns, eid))
            except FileNotFoundError:
                ids.discard(eid)
        aged.sort()
        oldest = aged[0][0] if aged else 0
        for name in os.listdir(self.dir):  # left by a process killed between write and rename
            if name.endswith(".tmp"):
                try:
                    if os.stat(self.dir / name).st_mtime_ns < oldest:
                        os.unlink(self.dir / name)
                except FileNotFoundError:
                    pass
        for _mtime, eid in aged[: max(0, len(aged) - KEEP)]:
            self._drop(eid)

    def _drop(self, event_id: str) -> None:
        self._mem.pop(event_id, None)
        if self._ids is not None:
            self._ids.discard(event_id)
        if self.dir is not None:
            try:
                os.unlink(self.dir / event_id)
            except FileNotFoundError:
                pass
