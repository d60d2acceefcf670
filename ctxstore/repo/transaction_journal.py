"""A transaction's ref moves as one record, and how they are applied and rolled forward.

The moves of a committing transaction (docs/format.md, "Transactions"): written whole as
`.ctx/journal` before they are applied (the pack path), or inside a record of the write-ahead
journal (repo/journal_apply.py). Applying them is the same either way: reflog lines and ref
files in order, then op-head; rolling forward after a crash skips what was already applied.
Below the transaction and the repository, so that both import it downward.
"""

from __future__ import annotations

from ..refs import HEAD, ReflogEntry, RefStore
from ..refs.moves import JOURNAL_VERSION, Journal, Move

__all__ = ["JOURNAL_VERSION", "Journal", "Move", "apply_journal", "reflog_lines", "roll_forward"]


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


def reflog_lines(refs: RefStore, journal: Journal) -> list[tuple[str, ReflogEntry]]:
    """(reflog, line) for each line a journalled record's moves log, in order, as
    apply_journal writes them; read right after the record, when its moves are visible (the
    refs resolve journal-first) and HEAD's content before it is the move's old value or, if
    the record does not move HEAD, what HEAD holds now."""
    head_move = next((m for m in journal.moves if m.ref == HEAD), None)
    head_before = head_move.old if head_move is not None else refs.read_head_value()
    after = {m.ref: m.new for m in journal.moves if m.ref != HEAD}
    out = []
    for m in journal.moves:
        if m.ref == HEAD:
            out.append((HEAD, ReflogEntry(_target(refs, m.old, after), _target(refs, m.new, after),
                                          journal.ts_ms, journal.actor, m.message)))
            continue
        entry = ReflogEntry(m.old, m.new, journal.ts_ms, journal.actor, m.message)
        out.append((m.ref, entry))
        if head_before == f"ref: {m.ref}":
            out.append((HEAD, entry))
    return out


def same_line(a: ReflogEntry | None, b: ReflogEntry) -> bool:
    return a is not None and (a.old, a.new, a.ts_ms) == (b.old, b.new, b.ts_ms)


def _log_once(refs: RefStore, name: str, entry: ReflogEntry, fsync: bool) -> None:
    last = getattr(refs, "last_reflog_entry", None)
    newest = last(name) if last is not None else (refs.reflog(name)[-1:] or [None])[0]
    if not same_line(newest, entry):
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


