"""In-memory refs for tests and dry runs; same contract as the file refs."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from .base import Head, ReflogEntry, RefStore
from .names import HEAD


class MemoryRefs(RefStore):
    def __init__(self) -> None:
        self._refs: dict[str, str] = {}
        self._logs: dict[str, list[ReflogEntry]] = {}
        self._head = ""
        self._lock = threading.Lock()
        self._tx_lock = threading.RLock()
        self._journal: bytes | None = None
        self._op_head: str | None = None

    @classmethod
    def copy_of(cls, other: RefStore) -> MemoryRefs:
        """Every ref and HEAD of `other`, without reflogs: a scratch copy for dry runs."""
        refs = cls()
        refs._refs = dict(other.iter_refs("refs/"))
        refs._head = other.read_head_value() or ""
        return refs

    def read(self, name: str) -> str | None:
        if name == HEAD:
            return self.read_head().target
        return self._refs.get(name)

    def _cas(self, name, old, new, entry, fsync) -> None:
        with self._lock:
            actual = self._refs.get(name)
            if actual != old:
                raise self.conflict(name, old, actual)
            if new is None:
                self._refs.pop(name, None)
            else:
                self._refs[name] = new
            self._logs.setdefault(name, []).append(entry)

    def iter_refs(self, prefix: str = "refs/", *, damaged: list | None = None
                  ) -> Iterator[tuple[str, str]]:
        return iter(sorted((k, v) for k, v in self._refs.items() if k.startswith(prefix)))

    def reflog(self, name: str, *, damaged: list | None = None) -> list[ReflogEntry]:
        return list(self._logs.get(name, ()))

    def read_head(self) -> Head:
        if self._head.startswith("ref: "):
            ref = self._head[5:]
            return Head(ref, self._refs.get(ref))
        return Head(None, self._head or None)

    def _write_head(self, value: str, entry: ReflogEntry | None) -> None:
        self._head = value
        if entry is not None:
            self._logs.setdefault(HEAD, []).append(entry)

    def _append_reflog(self, name: str, entry: ReflogEntry) -> None:
        self._logs.setdefault(name, []).append(entry)

    def reflog_names(self) -> list[str]:
        return sorted(self._logs)

    def replace_reflog(self, name: str, entries: list[ReflogEntry]) -> None:
        self._logs[name] = list(entries)

    # -- transaction primitives ----------------------------------------------------------------
    def transaction_lock(self):
        return self._tx_lock

    def read_journal(self) -> bytes | None:
        return self._journal

    def write_journal(self, data: bytes, fsync: bool = True) -> None:
        self._journal = data

    def remove_journal(self, fsync: bool) -> None:
        self._journal = None

    def read_op_head(self) -> str | None:
        return self._op_head

    def write_op_head(self, op_id: str, fsync: bool) -> None:
        self._op_head = op_id

    def write_ref(self, name: str, value: str | None, fsync: bool) -> None:
        if name == HEAD:
            self._head = value or ""
        elif value is None:
            self._refs.pop(name, None)
        else:
            self._refs[name] = value

    def append_reflog(self, name: str, entry: ReflogEntry, fsync: bool) -> None:
        self._logs.setdefault(name, []).append(entry)
