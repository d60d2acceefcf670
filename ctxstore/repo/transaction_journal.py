"""A transaction's ref moves as one record, and how they are applied and rolled forward.

The moves of a committing transaction (docs/format.md, "Transactions"): written whole as
`.ctx/journal` before they are applied (the pack path), or inside a record of the write-ahead
journal (repo/journal_apply.py). Applying them is the same either way: reflog lines and ref
files in order, then op-head; rolling forward after a crash skips what was already applied.
Below the transaction and the repository, so that both import it downward.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import CorruptStore
from ..refs import HEAD, ReflogEntry, RefStore

JOURNAL_VERSION = 1


@dataclass(frozen=True)
class Move:
    """One ref move. For HEAD, `old`/`new` are HEAD's content ("ref: NAME" or an event id)."""

    ref: str
    old: str | None
    new: str | None
    message: str


@dataclass(frozen=True)
class Journal:
    op: str
    ts_ms: int
    actor: str
    moves: tuple[Move, ...]

    def encode(self) -> bytes:
        doc = {"actor": self.actor, "moves": [[m.ref, m.old, m.new, m.message] for m in self.moves],
               "op": self.op, "ts_ms": self.ts_ms, "version": JOURNAL_VERSION}
        return (json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                + "\n").encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, where: str = "journal") -> Journal:
        try:
            doc = json.loads(data.decode("utf-8"))
            if doc.get("version") != JOURNAL_VERSION:
                raise ValueError(f"unknown journal version {doc.get('version')!r}")
            moves = tuple(Move(str(r), o, n, str(m)) for r, o, n, m in doc["moves"])
            return cls(str(doc["op"]), int(doc["ts_ms"]), str(doc["actor"]), moves)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise CorruptStore(f"{where}: not a transaction journal ({exc}); the moves of the "
                               f"interrupted transaction cannot be replayed") from None


def _target(refs: RefStore, value: str | None, state: dict[str, str | None]) -> str | None:
    """The event a HEAD content names, with `state` overriding the stored refs."""
    if value is None or not value.startswith("ref: "):
        return value
    name = value[5:]
    return state[name] if name in state else refs.read(name)


def apply_journal(refs: RefStore, journal: Journal, *, fsync: bool, recovering: bool) -> None:
    """Step 7 of the write ordering: reflog lines and ref files in journal order, then op-head.

    When `recovering` (a previous process died after the commit point), a ref already at its
    new value is left alone, and a reflog line already written is not written twice."""
    head_move = next((m for m in journal.moves if m.ref == HEAD), None)
    head_before = head_move.old if head_move is not None else refs.read_head_value()
    after = {m.ref: m.new for m in journal.moves if m.ref != HEAD}
    for m in journal.moves:
        if m.ref == HEAD:
            # HEAD moves last: the branch it named has already moved (and logged that in
            # HEAD's reflog), so its line starts where that one ended
            entry = ReflogEntry(_target(refs, m.old, after), _target(refs, m.new, after),
                                journal.ts_ms, journal.actor, m.message)
            current = refs.read_head_value()
        else:
            entry = ReflogEntry(m.old, m.new, journal.ts_ms, journal.actor, m.message)
            current = refs.read(m.ref)
        if recovering:
            if current == m.new or current != m.old:
                continue  # applied before the crash, or moved since by a writer outside this layer
            _log_once(refs, m.ref, entry, fsync)
        else:
            refs.append_reflog(m.ref, entry, fsync)
        if m.ref != HEAD and head_before == f"ref: {m.ref}":
            if recovering:
                _log_once(refs, HEAD, entry, fsync)
            else:
                refs.append_reflog(HEAD, entry, fsync)
        refs.write_ref(m.ref, m.new, fsync)
    refs.write_op_head(journal.op, fsync)


def _log_once(refs: RefStore, name: str, entry: ReflogEntry, fsync: bool) -> None:
    last = refs.reflog(name)[-1:]
    if last and (last[0].old, last[0].new, last[0].ts_ms) == (entry.old, entry.new, entry.ts_ms):
        return
    refs.append_reflog(name, entry, fsync)


def roll_forward(refs: RefStore, *, fsync: bool = False) -> bool:
    """Finish an interrupted transaction (the caller holds the transaction lock). True if a
    journal was found and applied."""
    data = refs.read_journal()
    if data is None:
        return False
    apply_journal(refs, Journal.decode(data), fsync=fsync, recovering=True)
    refs.remove_journal(fsync)
    return True


