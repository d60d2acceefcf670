"""The one write path: a repository transaction builds events, stores objects, and moves any
number of refs (branches and HEAD) atomically, recording one operation in the operation log.

Every writer uses it — the context manager, `append --batch`, the importers, the LangGraph
saver, compaction and merge, unpack, new sessions, fork/branch/reset/checkout, undo — so the
rules live here once: generation = max(parent generations) + 1, a session mark every 256th
generation, objects durable before a ref names them, a lost race on an append-only branch
re-parents the new events onto the new tip, any other lost race is a RefConflict with nothing
written. The bytes on disk and their ordering are specified in docs/format.md, "Transactions".

    with repo.transaction(message="append") as tx:      # appends to HEAD's branch
        tx.append("UserPromptSubmitted", "user", {"text": "hi"})
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, Any

from .. import codec
from ..clock import now_iso
from ..errors import BadRevision, InvalidInput, RefConflict
from ..objects import DEFAULT_SESSION_CONFIG, Event, Operation, Session, is_valid_event_type
from ..refs import (
    DEFAULT_BRANCH,
    HEAD,
    ReflogEntry,
    branch_ref,
    check_ref_name,
    split_branch_ref,
)
from .eventcache import SESSION_MARK_EVERY
from .transaction_journal import Journal, Move, apply_journal, roll_forward

if TYPE_CHECKING:
    from .repolike import RepoLike

#: Generations of this many of a transaction's newest events are kept at hand (`generation`
#: reads older ones back from the store), so a long import's memory does not grow with it.
GENERATION_CACHE = 8192
_UNSET: Any = object()


# ---------------------------------------------------------------------------------------------
# Appends to one branch
# ---------------------------------------------------------------------------------------------

class BranchAppend:
    """The events a transaction appends to one branch, in order: each names the previous tip as
    its first parent. Rebased at commit if the branch moved meanwhile."""

    def __init__(self, tx: Transaction, ref: str, base: str, rebase: bool) -> None:
        self.tx = tx
        self.ref = ref
        self.base = base
        self.tip = base
        self.rebase = rebase
        #: if the branch is deleted before the commit, drop these appends instead of failing
        self.drop_if_deleted = False
        self.dropped = False
        self.rebased = False
        self.message: str | None = None  # the reflog message (default: the transaction's)
        self.appended: list[str] = []
        self._fields: list[dict[str, Any] | Event] = []
        self._fresh: str | None = None  # the tip, if the store lacked it when it was put
        parts = split_branch_ref(ref)
        self.session = parts[0] if parts else None

    def add(self, fields: dict[str, Any]) -> str:
        """Store one prepared field map (parents must start with the tip) and advance the tip.
        An event on a tip the store lacked a moment ago cannot be in the store (its id names
        that tip), so it is stored without a presence check (see `extend`)."""
        eid, new = self.tx.put_new_event(fields, self.session,
                                         absent=fields["parents"][0] == self._fresh)
        self._fresh = eid if new else None
        self._fields.append(fields)
        self.appended.append(eid)
        self.tip = eid
        return eid

    def extend(self, events: Iterable[dict[str, Any]]) -> None:
        """Append many events, each on the previous: the bulk path of `append --batch`. Each
        map holds type, actor, payload, ts and causality; its "parents" ([the tip]) and
        "generation" are set here, so the field maps, and the ids, are those `add` would store
        one by one. Once one event proved new to the store, the events after it cannot be in it
        (each names the previous one), so they are stored without a presence check."""
        tx = self.tx
        store, gens, encode = tx.objects, tx._gen, codec.encode_object
        marks = tx.repo.session_marks if self.session else None
        fields, appended = self._fields, self.appended
        tip = self.tip
        gen = tx.generation(tip)
        fresh = self._fresh == tip
        try:
            for f in events:
                gen += 1
                f["parents"] = [tip]
                f["generation"] = gen
                tip, body = encode("event", f)
                if fresh:
                    store.put_absent(tip, "event", body)
                else:
                    fresh = store.put_new(tip, "event", body)
                gens[tip] = gen
                if marks is not None and gen % SESSION_MARK_EVERY == 0:
                    marks.put_soon(tip, self.session)
                fields.append(f)
                appended.append(tip)
        finally:
            if marks is not None:
                marks.wait()
        self.tip = tip
        self._fresh = tip if fresh else None
        tx._forget_generations()

    @property
    def fields(self) -> list[dict[str, Any]]:
        """The appended events' field maps, in order (after a rebase: the re-created ones)."""
        return [_fields_of(f) for f in self._fields]

    def replay_onto(self, new_base: str) -> None:
        """Re-create the appended events on top of `new_base` (new parents, so new ids)."""
        self.rebased = True
        mapping = {self.base: new_base}
        old_ids, old_fields = self.appended, self._fields
        self.base = self.tip = new_base
        self.appended, self._fields, self._fresh = [], [], None
        gen = self.tx.generation
        for old_id, f in zip(old_ids, old_fields, strict=True):
            f = _fields_of(f)
            parents = [mapping.get(p, p) for p in f["parents"]]
            mapping[old_id] = self.add({**f, "parents": parents,
                                        "generation": 1 + max(gen(p) for p in parents)})


# ---------------------------------------------------------------------------------------------
# The transaction
# ---------------------------------------------------------------------------------------------

def _hostname() -> str:
    import socket  # as in default_user: only a transaction that writes needs it

    return socket.gethostname()


def default_user() -> str:
    import getpass  # here, not at the top: every `ctx` command imports this module

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


class Transaction:
    """Objects now, ref moves at `commit()`, all or nothing. See the module docstring.

    `ref` is the default branch for `append` (HEAD's branch if not given, resolved on first
    use). `rebase` lets that branch's appends move onto a new tip if another writer moved it.
    `message` describes the operation (and prefixes the appends' reflog lines); `command` is
    the API call the operation records when no command line is set (`repo.command`, set by
    the CLI)."""

    def __init__(self, repo: RepoLike, ref: str | None = None, *, rebase: bool = True,
                 actor: str = "ctx", message: str = "", command: str | None = None) -> None:
        self.repo = repo
        self.objects = repo.objects
        self.refs = repo.refs
        self.ref = ref
        self.rebase = rebase
        self.actor = actor
        self.message = message
        self.command = command
        self._branches: dict[str, BranchAppend] = {}
        self._moves: dict[str, tuple[str | None, str | None, str]] = {}  # ref: (expect, new, msg)
        self._head: tuple[str | None, str, str] | None = None  # (expected content, new, msg)
        self._gen: dict[str, int] = {}
        #: reflog rewrites: ref -> ("expired" | "restored", entries)
        self._reflogs: dict[str, tuple[str, list[ReflogEntry]]] = {}
        self.committed = False
        self.op_id: str | None = None
        self._closed = False
        if repo._open_transactions == 0:
            self.objects.begin_transaction()  # buffered writes until the last one closes
            if repo.journal_commits:  # its bodies, for a write-ahead journal record
                from .journal_apply import CAPTURE_LIMIT

                self.objects.start_capture(CAPTURE_LIMIT)
        repo._open_transactions += 1

    # -- reading through the transaction -------------------------------------------------------
    def read(self, ref: str) -> str | None:
        """A ref's value as this transaction will leave it."""
        if ref in self._branches:
            return self._branches[ref].tip
        if ref in self._moves:
            return self._moves[ref][1]
        return self.refs.read(ref)

    def generation(self, eid: str) -> int:
        """An event's generation: from this transaction's recent events, else from the store."""
        gen = self._gen.get(eid)
        return gen if gen is not None else self.repo.graph.generation(eid)

    # -- events ----------------------------------------------------------------------------------
    def put_event(self, fields: dict[str, Any], session: str | None = None) -> str:
        """Store an event field map (Event.to_dict() form) as is; mark it with its session every
        SESSION_MARK_EVERY generations. The one place events are written."""
        eid, body = codec.encode_object("event", fields)
        self.objects.put_encoded(eid, "event", body)  # its presence check sees no other writers
        self._mark(eid, fields["generation"], session)
        return eid

    def put_new_event(self, fields: dict[str, Any], session: str | None = None, *,
                      absent: bool = False) -> tuple[str, bool]:
        """put_event, also telling whether the store lacked the event (importers count them;
        the check catches up with other processes' new packs, at most once a second).
        `absent`: the caller knows the store lacks it (its parent was new): no check."""
        eid, body = codec.encode_object("event", fields)
        if absent:
            self.objects.put_absent(eid, "event", body)
            new = True
        else:
            new = self.objects.put_new(eid, "event", body)
        self._mark(eid, fields["generation"], session)
        return eid, new

    def _mark(self, eid: str, gen: int, session: str | None) -> None:
        gens = self._gen
        gens[eid] = gen
        if len(gens) > GENERATION_CACHE:
            self._forget_generations()
        if session and gen % SESSION_MARK_EVERY == 0:
            self.repo.session_marks.put(eid, session)

    def _forget_generations(self) -> None:
        """Keep the newest GENERATION_CACHE // 2 generations once there are more than
        GENERATION_CACHE (an import writes millions)."""
        gens = self._gen
        if len(gens) > GENERATION_CACHE:
            for old in list(islice(gens, len(gens) - GENERATION_CACHE // 2)):
                del gens[old]

    def event_fields(self, type: str, actor: str = "system", payload: dict | None = None,
                     parents: Iterable[str] = (), causality: dict | None = None,
                     ts: str | None = None) -> dict[str, Any]:
        """A checked event field map: generation = max(parent generations) + 1."""
        check_event(type, payload)
        parents = list(parents)
        gen = 1 + (self.generation(parents[0]) if len(parents) == 1 else
                   max((self.generation(p) for p in parents), default=0))
        return {"type": type, "actor": actor, "payload": payload or {}, "parents": parents,
                "generation": gen, "ts": ts or now_iso(), "causality": causality or {}}

    def event(self, type: str, actor: str = "system", payload: dict | None = None,
              parents: Iterable[str] = (), causality: dict | None = None, ts: str | None = None,
              *, session: str | None = None) -> str:
        """Store one event on any parents (no ref moves): importers build histories this way
        and name their tips with `set_ref` at the end."""
        return self.put_event(self.event_fields(type, actor, payload, parents, causality, ts),
                              session)

    # -- appends to branches ---------------------------------------------------------------------
    def branch(self, ref: str | None = None, *, rebase: bool | None = None) -> BranchAppend:
        """The appends to `ref` (default: this transaction's branch, else HEAD's)."""
        if ref is None:
            ref = self.ref
        if ref is None:
            ref = self.ref = self.repo.head_branch()
        br = self._branches.get(ref)
        if br is None:
            if ref in self._moves:
                raise InvalidInput(f"{ref}: a transaction cannot both move and append to a ref")
            tip = self.refs.read(ref)
            if tip is None:
                raise BadRevision(f"branch {ref} does not exist")
            br = self._branches[ref] = BranchAppend(
                self, ref, tip, self.rebase if rebase is None else rebase)
        return br

    def adopt(self, ref: str, base: str, events: Iterable[tuple[str, Event]], *,
              message: str | None = None, drop_if_deleted: bool = False) -> BranchAppend:
        """Appends already stored by a group-committing writer (the LangGraph saver): events
        (id, event) chained on `base`, which the ref held when the first was appended. Their
        field maps are only built if a rebase needs them."""
        if ref in self._branches or ref in self._moves:
            raise InvalidInput(f"{ref}: already part of this transaction")
        br = self._branches[ref] = BranchAppend(self, ref, base, True)
        br.message, br.drop_if_deleted = message, drop_if_deleted
        for eid, ev in events:
            br._fields.append(ev)
            br.appended.append(eid)
            br.tip = eid
            self._gen[eid] = ev.generation
        return br

    @property
    def tip(self) -> str:
        return self.branch().tip

    @property
    def base(self) -> str:
        return self.branch().base

    @property
    def appended(self) -> list[str]:
        return self.branch().appended

    def append(self, type: str, actor: str = "system", payload: dict | None = None,
               causality: dict | None = None, ts: str | None = None,
               extra_parents: tuple[str, ...] = (), *, ref: str | None = None) -> str:
        """Append one event on the branch's tip (plus `extra_parents`, e.g. a merge)."""
        br = self.branch(ref)
        return br.add(self.event_fields(type, actor, payload, (br.tip, *extra_parents),
                                        causality, ts))

    def append_event(self, ev: Event, *, ref: str | None = None) -> str:
        """Append a prepared event; its parents must include the branch tip."""
        br = self.branch(ref)
        if br.tip not in ev.parents:
            raise InvalidInput("an appended event must name the branch tip as a parent")
        return br.add(ev.to_dict())

    # -- other ref moves -------------------------------------------------------------------------
    def set_ref(self, name: str, new: str | None, *, expected: str | None = _UNSET,
                message: str = "") -> None:
        """Move `name` to `new` (None deletes it) at commit, if it still holds `expected` (default:
        what it holds now). Never rebased: a ref that moved meanwhile fails the commit."""
        if name == HEAD:
            raise InvalidInput("use set_head to move HEAD")
        if name in self._branches:
            raise InvalidInput(f"{name}: a transaction cannot both append to and move a ref")
        if name in self._moves:
            old = self._moves[name][0]
        else:
            old = self.refs.read(name) if expected is _UNSET else expected
        self._moves[name] = (old, new, message or self.message)

    def create_ref(self, name: str, new: str, *, message: str = "") -> None:
        self.set_ref(name, new, expected=None, message=message)

    def delete_ref(self, name: str, *, message: str = "") -> None:
        self.set_ref(name, None, message=message)

    def set_head(self, *, ref: str | None = None, detached: str | None = None,
                 message: str = "", expected: str | None = _UNSET) -> None:
        """Point HEAD at branch `ref` (symbolic) or at event `detached`, at commit."""
        if (ref is None) == (detached is None):
            raise InvalidInput("set_head needs exactly one of ref and detached")
        if ref is not None:
            check_ref_name(ref)
        self.set_head_value(f"ref: {ref}" if ref is not None else detached, message=message,
                            expected=expected)

    def set_head_value(self, value: str | None, *, message: str = "",
                       expected: str | None = _UNSET) -> None:
        """Set HEAD's content as the journal records it ("ref: NAME", an id, or None for no
        HEAD at all, as in a new store): undo and op restore put back what they find."""
        if self._head is not None:
            old = self._head[0]
        else:
            old = self.refs.read_head_value() if expected is _UNSET else expected
        self._head = (old, value, message or self.message)

    # -- reflogs ---------------------------------------------------------------------------------
    def expire_reflog(self, name: str, entries: list[ReflogEntry]) -> None:
        """Remove these entries from `name`'s reflog at commit (reflog expire); the operation
        keeps them, so undo can put them back."""
        if entries:
            self._reflogs[name] = ("expired", list(entries))

    def restore_reflog(self, name: str, entries: list[ReflogEntry]) -> None:
        """Put expired entries back into `name`'s reflog at commit (undo of an expire)."""
        if entries:
            self._reflogs[name] = ("restored", list(entries))

    def _rewrite_reflogs(self) -> None:
        """Under the lock: entries written meanwhile are kept; restored ones merged by time."""
        for name, (how, entries) in sorted(self._reflogs.items()):
            current = self.refs.reflog(name)
            key = {_entry_key(e) for e in entries}
            if how == "expired":
                new = [e for e in current if _entry_key(e) not in key]
            else:
                have = {_entry_key(e) for e in current}
                back = [e for e in entries if _entry_key(e) not in have]
                # by time; at an equal millisecond (two moves in one ms) a restored entry comes
                # first, as the entries an expiry removed are the older ones, each side in order
                order = [(e.ts_ms, 0, i, e) for i, e in enumerate(back)] + \
                    [(e.ts_ms, 1, i, e) for i, e in enumerate(current)]
                new = [e for *_k, e in sorted(order, key=lambda x: x[:3])]
            if new != current:
                self.refs.replace_reflog(name, new)

    # -- sessions --------------------------------------------------------------------------------
    def new_session(self, title: str = "", goal: str = "", *, config: dict | None = None,
                    ts: str | None = None, kind: str = "main", parent_session: str = "",
                    spawn_event: str = "", origin: dict | None = None, nonce: str | None = None,
                    cwd: str = "", repo_root: str = "", branch: str = DEFAULT_BRANCH,
                    checkout: bool = True) -> tuple[str, str]:
        """A session object, its SessionStarted root event and its first branch (created at
        commit; HEAD moves there too with `checkout`). Returns (session id, root event id).

        Without a nonce every call makes a new session; with one (importers use the source's
        session id) the same inputs give the same ids, and a branch that already exists and
        descends from the root is left as it is."""
        ts = ts or now_iso()
        cfg = dict(DEFAULT_SESSION_CONFIG)
        cfg.update(config or {})
        session = Session(title=title, created=ts, config=cfg, cwd=cwd, repo_root=repo_root,
                          parent_session=parent_session, spawn_event=spawn_event, kind=kind,
                          origin=origin or {},
                          nonce=nonce if nonce is not None else os.urandom(8).hex())
        sid = self.objects.put_object(session)
        payload: dict[str, Any] = {"session": sid}
        if title:
            payload["title"] = title
        if goal:
            payload["goal"] = goal
        root = self.event("SessionStarted", "system", payload, (), ts=ts, session=sid)
        ref = branch_ref(sid, branch)
        current = self.read(ref)
        if current is None:
            self.create_ref(ref, root, message="session: created")
        elif current != root and not self.repo.graph.is_ancestor(root, current):
            raise RefConflict(f"ref {ref} exists and does not descend from this session's root")
        if checkout:
            self.set_head(ref=ref, message=f"checkout: new session {sid[:12]}")
        return sid, root

    # -- commit ----------------------------------------------------------------------------------
    def _planned(self) -> list[Move]:
        moves = [Move(ref, br.base, br.tip, br.message or
                      f"{self.message or 'append'}: {len(br.appended)} event(s)")
                 for ref, br in self._branches.items() if br.tip != br.base and not br.dropped]
        moves += [Move(ref, old, new, msg) for ref, (old, new, msg) in self._moves.items()
                  if old != new]
        moves.sort(key=lambda m: m.ref)
        if self._head is not None and self._head[0] != self._head[1]:
            moves.append(Move(HEAD, *self._head))
        return moves

    def _check(self) -> None:
        """Step 4 (under the lock): expected values still hold; append-only branches rebase."""
        refs = self.refs
        for ref, br in self._branches.items():
            if br.tip == br.base:
                continue
            now = refs.read(ref)
            if now != br.base:
                if now is None and br.drop_if_deleted:
                    br.dropped = True
                    continue
                if not br.rebase or now is None:
                    raise refs.conflict(ref, br.base, now)
                br.replay_onto(now)
        for ref, (old, new, _msg) in self._moves.items():
            now = refs.read(ref)
            if now != old and now != new:  # already at `new`: nothing to do, not a conflict
                raise refs.conflict(ref, old, now)
            if new is not None:
                refs.check_writable(ref)
        if self._head is not None:
            now = refs.read_head_value()
            if now != self._head[0] and now != self._head[1]:
                raise refs.conflict(HEAD, self._head[0], now)

    def commit(self) -> str | None:
        """Apply every ref move at once and record the operation; returns its id (None when
        nothing moved). Raises RefConflict, with nothing written, when a ref that cannot be
        rebased moved since the transaction read it."""
        if self.committed:
            return self.op_id
        if self._closed:
            raise InvalidInput("the transaction was aborted")
        try:
            if any(br.tip != br.base for br in self._branches.values()) or self._moves or \
                    self._head is not None or self._reflogs:
                self._commit_locked()
            self.committed = True
        finally:
            self._close()
        return self.op_id

    def _commit_locked(self) -> None:
        refs = self.refs
        durability = self.repo.config.get("durability")
        always = durability == "always"
        with refs.transaction_lock():
            roll_forward(refs, fsync=always)
            wal = None
            if self.repo.journal is not None:
                from . import journal_apply

                wal = journal_apply.recover(self.repo)
            self._check()
            # moves are re-read now: a ref that already holds its new value is not moved
            moves = [m for m in self._planned()
                     if (refs.read_head_value() if m.ref == HEAD else refs.read(m.ref)) != m.new]
            if not moves and not self._reflogs:
                return
            parent = refs.read_op_head()
            op = Operation(parents=(parent,) if parent else (), time=now_iso(),
                           user=default_user(), host=_hostname(),
                           command=self.repo.command or self.command or f"api: {self.message}",
                           description=self._description(moves),
                           changes=tuple((m.ref, m.old, m.new) for m in moves),
                           reflogs=tuple((name, how, tuple(_entry_key(e) for e in entries))
                                         for name, (how, entries) in sorted(self._reflogs.items())))
            self.op_id = self.objects.put_object(op)
            journal = Journal(self.op_id, int(time.time() * 1000), self.actor, tuple(moves))
            captured = self.objects.take_captured() if wal is not None else None
            if captured is not None and not self._reflogs and durability == "batch":
                journal_apply.commit(self.repo, wal, journal, captured)  # format.md J1-J4
                return
            if wal is not None and wal.records:  # no record may shadow the files written now
                journal_apply.checkpoint(self.repo, wal)
            self.objects.flush()  # step 5: every object a ref will name is durable
            refs.write_journal(journal.encode(), fsync=durability != "never")  # step 6: commit
            apply_journal(refs, journal, fsync=always, recovering=False)
            self._rewrite_reflogs()
            refs.remove_journal(always)

    def _description(self, moves: list[Move]) -> str:
        if not moves:
            return self.message
        if len(moves) == 1:
            return moves[0].message
        return f"{self.message or moves[0].message} ({len(moves)} refs)"

    def abort(self) -> None:
        """Drop the staged moves (objects already stored stay, unnamed, for gc)."""
        self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.repo._open_transactions -= 1
        if self.repo._open_transactions == 0:
            if self.repo.journal_commits:
                self.objects.take_captured()
            self.objects.end_transaction()  # let gc run between transactions (store/gclock.py)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _fields_of(f: dict[str, Any] | Event) -> dict[str, Any]:
    return f.to_dict() if isinstance(f, Event) else f


def _entry_key(e: ReflogEntry) -> tuple:
    return (e.old, e.new, e.ts_ms, e.actor, " ".join(e.message.split()))


def entry_of(key: Iterable) -> ReflogEntry:
    old, new, ts_ms, actor, message = key
    return ReflogEntry(old, new, int(ts_ms), actor, message)


def check_event(type: str, payload: Any) -> None:
    if not is_valid_event_type(type):
        raise InvalidInput(f"invalid event type {type!r}: use a core type (e.g. "
                           f"UserPromptSubmitted) or a namespaced one (x.yourtool.Thing)")
    if payload is not None and not isinstance(payload, dict):
        raise InvalidInput("an event payload must be a JSON object")


__all__ = ["BranchAppend", "Journal", "Move", "Transaction", "apply_journal", "check_event",
           "roll_forward"]
