"""The ref store interface: compare-and-swap is the only way to move a ref.

`set_if_equals(name, old, new)` moves `name` from `old` to `new` (None = absent) and writes the
reflog entry in the same step, or raises RefConflict saying what the ref is now. HEAD is
special: it holds either a ref name (symbolic) or an event id (detached); moving a branch that
HEAD names also records the move in HEAD's reflog, as git does.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import NamedTuple

from ..errors import CorruptStore, RefConflict
from .names import HEAD, check_ref_name

ZERO = "0" * 64


class ReflogEntry(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    old: str | None
    new: str | None
    ts_ms: int
    actor: str
    message: str

    def to_dict(self) -> dict:
        return {"old": self.old, "new": self.new, "ts_ms": self.ts_ms, "actor": self.actor,
                "message": self.message}


class Head(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    """HEAD: `ref` set when symbolic (the branch may not exist yet), `target` the event it names."""

    ref: str | None
    target: str | None

    @property
    def detached(self) -> bool:
        return self.ref is None


class RefStore(abc.ABC):
    # -- primitives --------------------------------------------------------------------------
    @abc.abstractmethod
    def read(self, name: str) -> str | None:
        """The id a ref names, or None. For HEAD, the id it resolves to."""

    @abc.abstractmethod
    def _cas(self, name: str, old: str | None, new: str | None, entry: ReflogEntry,
             fsync: bool) -> None:
        """Atomically check `old` and write `new` + reflog under the ref's lock."""

    @abc.abstractmethod
    def iter_refs(self, prefix: str = "refs/", *, damaged: list[CorruptStore] | None = None
                  ) -> Iterator[tuple[str, str]]:
        """(name, id) for every ref under prefix, sorted by name. A damaged ref raises
        CorruptStore naming its file, or with `damaged` (fsck) is collected there and left out."""

    @abc.abstractmethod
    def reflog(self, name: str, *, damaged: list[CorruptStore] | None = None) -> list[ReflogEntry]:
        """Entries oldest first. A damaged line raises CorruptStore naming file and line, or
        with `damaged` (fsck) is collected there and left out."""

    @abc.abstractmethod
    def read_head(self) -> Head: ...

    @abc.abstractmethod
    def _write_head(self, value: str, entry: ReflogEntry | None) -> None:
        """Replace HEAD's content ('ref: NAME' or an id) and append to its reflog."""

    @abc.abstractmethod
    def _append_reflog(self, name: str, entry: ReflogEntry) -> None: ...

    @abc.abstractmethod
    def reflog_names(self) -> list[str]:
        """Every ref that has a reflog, sorted: HEAD, live refs, and deleted refs' logs."""

    @abc.abstractmethod
    def replace_reflog(self, name: str, entries: list[ReflogEntry]) -> None:
        """Rewrite a reflog (reflog expire); under the ref's lock."""

    # -- API -----------------------------------------------------------------------------------
    def set_if_equals(self, name: str, old: str | None, new: str | None, *, actor: str = "ctx",
                      message: str = "", fsync: bool = True) -> None:
        check_ref_name(name)
        if name == HEAD:
            raise ValueError("use set_head_* to move HEAD")
        entry = ReflogEntry(old, new, int(time.time() * 1000), actor, message)
        self._cas(name, old, new, entry, fsync)
        head = self.read_head()
        if head.ref == name:
            self._append_reflog(HEAD, entry)

    def set_head_symbolic(self, ref: str, *, actor: str = "ctx", message: str = "") -> None:
        check_ref_name(ref)
        old = self.read_head()
        new_target = self.read(ref)
        self._write_head(f"ref: {ref}", ReflogEntry(old.target, new_target,
                                                     int(time.time() * 1000), actor, message))

    def set_head_detached(self, target: str, *, actor: str = "ctx", message: str = "") -> None:
        old = self.read_head()
        self._write_head(target, ReflogEntry(old.target, target, int(time.time() * 1000),
                                             actor, message))

    # -- transaction primitives ------------------------------------------------------------------
    # Used only by ctxstore/repo/transaction.py, which checks every move under
    # `transaction_lock()` and records it in the journal first (docs/format.md, "Transactions").
    @abc.abstractmethod
    def transaction_lock(self) -> AbstractContextManager:
        """Exclusive across processes while a transaction checks and applies its moves."""

    @abc.abstractmethod
    def read_journal(self) -> bytes | None: ...

    @abc.abstractmethod
    def write_journal(self, data: bytes, fsync: bool = True) -> None:
        """Replace the journal: temp file, fsync, rename, fsync directory (the fsyncs only
        with `fsync`: a store with durability "never")."""

    @abc.abstractmethod
    def remove_journal(self, fsync: bool) -> None: ...

    @abc.abstractmethod
    def read_op_head(self) -> str | None: ...

    @abc.abstractmethod
    def write_op_head(self, op_id: str, fsync: bool) -> None: ...

    @abc.abstractmethod
    def write_ref(self, name: str, value: str | None, fsync: bool) -> None:
        """Set (or with None remove) a ref, or HEAD's content, with no check: the caller holds
        the transaction lock and has checked."""

    @abc.abstractmethod
    def append_reflog(self, name: str, entry: ReflogEntry, fsync: bool) -> None: ...

    def check_writable(self, name: str) -> None:
        """Raise InvalidRefName if `name` cannot be created (checked before the commit point,
        so that applying a journal never fails half-way)."""
        check_ref_name(name)

    def read_head_value(self) -> str | None:
        """HEAD's content as the journal records it: "ref: NAME", an event id, or None."""
        head = self.read_head()
        if head.ref is not None:
            return f"ref: {head.ref}"
        return head.target

    def conflict(self, name: str, expected: str | None, actual: str | None) -> RefConflict:
        def show(v):
            return v[:12] if v else "(absent)"

        return RefConflict(f"ref {name} moved: expected {show(expected)}, found {show(actual)}; "
                           f"re-read and retry", ref=name, expected=expected, actual=actual)
