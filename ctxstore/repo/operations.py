"""The operation log: reading it, undoing the newest operation, restoring the refs of any one.

Every transaction records an Operation (objects/operation.py) naming the previous one, and
moves `op-head` to it in the same atomic apply (docs/format.md, "The operation log"). Undo and
restore are transactions themselves, so they are operations too and can be undone in turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from ..errors import AmbiguousId, BadRevision, ObjectNotFound
from ..objects import Operation
from ..refs import HEAD
from .repository import Repository
from .transaction import entry_of


@dataclass(frozen=True)
class LoggedOperation:
    id: str
    op: Operation

    def to_dict(self) -> dict:
        return {"id": self.id, **self.op.to_dict()}


def op_head(repo: Repository) -> str | None:
    return repo.refs.read_op_head()


def walk(repo: Repository, start: str | None = None) -> Iterator[LoggedOperation]:
    """Operations newest first, from `start` (default op-head) back along parents. Stops at an
    operation gc removed (older than the expiry); `truncated(repo)` tells whether it did."""
    oid = start if start is not None else op_head(repo)
    while oid:
        try:
            op = repo.objects.get_typed(oid, Operation)
        except ObjectNotFound:
            return
        yield LoggedOperation(oid, op)
        oid = op.parents[0] if op.parents else None


def truncated_at(repo: Repository) -> str | None:
    """The id of the newest operation the log names but gc removed, if any."""
    last = None
    for lo in walk(repo):
        last = lo
    if last is None:
        return op_head(repo) if op_head(repo) else None
    return last.op.parents[0] if last.op.parents else None


def split_by_age(repo: Repository, cutoff: float | None) -> tuple[list[str], list[LoggedOperation]]:
    """(ids of operations at or after `cutoff` (unix seconds; None: all), the older ones still
    stored). gc keeps the first and everything they name; undo and op restore to the second
    can no longer be relied on once gc ran."""
    young: list[str] = []
    old: list[LoggedOperation] = []
    for lo in walk(repo):
        if cutoff is None or _seconds(lo.op.time) >= cutoff:
            young.append(lo.id)
        else:
            old.append(lo)
    return young, old


def _seconds(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")  # an unreadable time is never old enough to drop


def resolve(repo: Repository, text: str) -> LoggedOperation:
    """An operation by full id, unique prefix (>= 4 hex digits), `@` (the newest) or `@-N`."""
    text = text.strip().lower()
    ops = walk(repo)
    if text == "@" or text.startswith("@-"):
        back = int(text[2:]) if text.startswith("@-") and text[2:].isdigit() else 0
        if text not in ("@", f"@-{back}"):
            raise BadRevision(f"cannot read operation {text!r}: use an id, @ or @-N")
        for i, lo in enumerate(ops):
            if i == back:
                return lo
        raise BadRevision(f"no operation {text}: the log is shorter")
    if len(text) < 4 or any(c not in "0123456789abcdef" for c in text):
        raise BadRevision(f"no operation {text!r}: give at least 4 hex digits of its id")
    matches = [lo for lo in ops if lo.id.startswith(text)]
    if not matches:
        raise BadRevision(f"no operation {text} in the operation log")
    if len(matches) > 1:
        raise AmbiguousId(f"operation prefix {text} is ambiguous: "
                          f"{', '.join(m.id[:12] for m in matches[:3])}")
    return matches[0]


def _stage(tx, name: str, old: str | None, new: str | None, message: str) -> None:
    if name == HEAD:
        tx.set_head_value(new, message=message, expected=old)
    else:
        tx.set_ref(name, new, expected=old, message=message)


def _current(repo: Repository, name: str) -> str | None:
    return repo.refs.read_head_value() if name == HEAD else repo.refs.read(name)


def undo(repo: Repository, *, command: str | None = None) -> tuple[str, LoggedOperation]:
    """Revert the newest operation's ref moves as a new operation; (new op id, undone op).

    An undo is an operation too, so undoing again redoes. A ref that no longer holds what the
    undone operation left in it is a RefConflict (only a writer outside the log can do that)."""
    newest = next(walk(repo), None)
    if newest is None:
        raise BadRevision("nothing to undo: the operation log is empty")
    msg = f"undo: operation {newest.id[:12]} ({newest.op.description})"
    with repo.transaction(message=msg, command=command) as tx:
        for name, old, new in reversed(newest.op.changes):
            _stage(tx, name, new, old, msg)
        for name, how, entries in newest.op.reflogs:
            back = [entry_of(e) for e in entries]
            if how == "expired":
                tx.restore_reflog(name, back)
            else:
                tx.expire_reflog(name, back)
    return tx.op_id or "", newest


def refs_after(repo: Repository, target: str) -> dict[str, str | None]:
    """Every ref (and HEAD's content) as it was right after operation `target`: today's values,
    with each later operation's changes taken back, newest first."""
    state: dict[str, str | None] = {name: tip for name, tip in repo.refs.iter_refs("refs/")}
    state[HEAD] = repo.refs.read_head_value()
    for lo in walk(repo):
        if lo.id == target:
            return state
        for name, old, _new in lo.op.changes:
            state[name] = old
    raise BadRevision(f"operation {target[:12]} is not in the operation log")


def restore(repo: Repository, target: str, *,
            command: str | None = None) -> tuple[str | None, dict[str, tuple]]:
    """Set every ref to its value after `target`, as one new operation.

    Returns (new op id or None if nothing differed, {ref: (now, restored)})."""
    wanted = refs_after(repo, target)
    diff = {}
    for name, value in sorted(wanted.items(), key=lambda kv: (kv[0] == HEAD, kv[0])):
        now = _current(repo, name)
        if now != value:
            diff[name] = (now, value)
    msg = f"restore: to operation {target[:12]}"
    with repo.transaction(message=msg, command=command) as tx:
        for name, (now, value) in diff.items():
            _stage(tx, name, now, value, msg)
    return tx.op_id, diff


__all__ = ["LoggedOperation", "op_head", "refs_after", "resolve", "restore", "split_by_age",
           "truncated_at", "undo", "walk"]
