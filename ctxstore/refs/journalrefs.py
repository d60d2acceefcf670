"""Refs resolved journal-first: the write-ahead journal's records over the ref files.

With the journal on (docs/format.md, "The write-ahead journal") a small transaction moves its
refs only inside its journal record; the ref files, HEAD and op-head are written at the next
checkpoint. So every read looks at the journal's valid prefix first — the newest value of each
ref a record moved, HEAD's content, the last record's operation — and at the files for the
rest. The journal is stat'ed per read and re-read only when it changed; the moves of records
already seen are kept, so a long-lived reader folds each record once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import CorruptStore, InvalidRefName
from ..store.journal import JournalFile, Scan, decode_payload
from .base import Head
from .files import FileRefs
from .moves import Journal
from .names import HEAD

_UNMOVED = object()


class JournalRefs(FileRefs):
    def __init__(self, root: str | os.PathLike, journal: JournalFile) -> None:
        super().__init__(root)
        self.journal = journal
        self._salt: bytes | None = None
        self._folded = 0  # records of the journal with salt `_salt` folded into the state below
        self._refs: dict[str, str | None] = {}
        self._head: object = _UNMOVED
        self._op: str | None = None

    # -- the overlay -------------------------------------------------------------------------
    def _overlay(self) -> None:
        scan = self.journal.scan()
        if scan is None or scan.salt != self._salt or len(scan.records) < self._folded:
            self._salt, self._folded = (scan.salt if scan else None), 0
            self._refs, self._head, self._op = {}, _UNMOVED, None
        if scan is None:
            return
        for record in scan.records[self._folded:]:
            journal = record_journal(scan, record.seq)
            for m in journal.moves:
                if m.ref == HEAD:
                    self._head = m.new
                else:
                    self._refs[m.ref] = m.new
            self._op = journal.op
        self._folded = len(scan.records)

    def journalled(self) -> dict[str, str | None]:
        """The refs the journal's records moved, with their newest values (None: deleted)."""
        self._overlay()
        return dict(self._refs)

    def journalled_head(self) -> tuple[bool, str | None]:
        """(whether a record moved HEAD, HEAD's content after it)."""
        self._overlay()
        return (False, None) if self._head is _UNMOVED else (True, self._head)  # type: ignore[return-value]

    # -- reads -------------------------------------------------------------------------------
    def read(self, name: str) -> str | None:
        if name == HEAD:
            return self.read_head().target
        self._overlay()
        if name in self._refs:
            return self._refs[name]
        return super().read(name)

    def read_head(self) -> Head:
        self._overlay()
        head = self._head
        if head is _UNMOVED:
            return super().read_head()
        if head is None:
            return Head(None, None)
        if head.startswith("ref: "):  # type: ignore[union-attr]
            ref = head[5:]  # type: ignore[index]
            return Head(ref, self.read(ref))
        return Head(None, head)  # type: ignore[arg-type]

    def iter_refs(self, prefix: str = "refs/", *, damaged: list[CorruptStore] | None = None
                  ) -> Iterator[tuple[str, str]]:
        found = dict(super().iter_refs(prefix, damaged=damaged))
        self._overlay()
        for name, value in self._refs.items():
            if name.startswith(prefix):
                if value is None:
                    found.pop(name, None)
                else:
                    found[name] = value
        return iter(sorted(found.items()))

    def read_op_head(self) -> str | None:
        self._overlay()
        return self._op if self._op is not None else super().read_op_head()

    def check_writable(self, name: str) -> None:
        """As for files, and against the refs only the journal holds yet: a name cannot be both
        a branch and a folder of branches there either (the checkpoint could not write it)."""
        super().check_writable(name)
        for other, value in self.journalled().items():
            if value is None or other == name:
                continue
            if other.startswith(name + "/"):
                raise InvalidRefName(f"ref {name} conflicts with existing refs under {name}/")
            if name.startswith(other + "/"):
                raise InvalidRefName(f"ref {name} conflicts with an existing ref {other} (a name "
                                     f"cannot be both a branch and a folder of branches)")

    # -- the checkpoint ----------------------------------------------------------------------
    def write_overlay(self) -> set[Path]:
        """Write every ref, HEAD and op-head the journal holds to its file, synced (the caller
        holds the transaction lock and starts a new journal next). Returns the reflogs the
        records wrote to, for the caller to sync."""
        self._overlay()
        logs: set[Path] = set()
        for name, value in sorted(self._refs.items()):
            if FileRefs.read(self, name) != value:
                self.write_ref(name, value, True)
            logs.update((self._log_path(name), self._log_path(HEAD)))
        if self._head is not _UNMOVED:
            if self._read_file(self.root / HEAD) != self._head:
                if self._head is None:
                    self.write_ref(HEAD, None, True)
                else:
                    self._replace(self.root / HEAD, self._head, True)  # type: ignore[arg-type]
            logs.add(self._log_path(HEAD))
        if self._op is not None:
            self.write_op_head(self._op, True)
        return logs


def record_journal(scan: Scan, seq: int) -> Journal:
    """The moves of record `seq` of `scan`."""
    moves, _objects = decode_payload(scan.records[seq - 1].payload, f"wal record {seq}")
    return Journal.decode(moves, f"wal record {seq}")
