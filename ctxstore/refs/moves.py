"""A transaction's ref moves as the journal records them (docs/format.md, "Transactions").

Here, below the repository, because two readers need the format: the transaction that writes
and applies it (repo/transaction_journal.py), and the refs resolved journal-first
(refs/journalrefs.py), which read the moves of the write-ahead journal's records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import CorruptStore

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
