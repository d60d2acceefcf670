"""What `ctx view [REV|SESSION|A..B]` puts in a self-contained page, and where the page opens.

A revision (branch, event, session id, `HEAD~3`, ...) names a session: that session and the
subagent sessions under it are embedded, and the page opens on it (at the event, when REV named
an event rather than a branch). `A..B` opens the two histories side by side from their merge
base. With no revision the page holds HEAD's session, or every session when HEAD is on none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..errors import BadRevision
from ..refs import split_branch_ref
from ..repo import Repository
from ..repo.revparse import resolve
from . import model


@dataclass
class Target:
    sessions: list[str]  # sessions to embed
    start: str  # the page's first route ("#session=…")
    title: str = "ctx view"
    notes: list[str] = field(default_factory=list)


def _session_of(repo: Repository, event_id: str, text: str) -> str:
    sid = repo.session_of_event(event_id)
    if sid is None:
        raise BadRevision(f"{text}: event {event_id[:12]} belongs to no session")
    return sid


def _label(repo: Repository, text: str, sid: str, bookkeeping: bool) -> tuple[str, str]:
    """(label for the page, event id) of one side of A..B."""
    r = resolve(repo, text)
    repo.graph.event(r.id)
    parts = split_branch_ref(r.ref) if r.ref else None
    if parts and parts[0] == sid and repo.branches(sid).get(parts[1]) == r.id:
        return parts[1], r.id
    eid = r.id if bookkeeping else model.shown_event(repo, r.id, sid)
    return eid, eid


def target(repo: Repository, rev: str | None, all_sessions: bool = False,
           store: dict[str, Any] | None = None, bookkeeping: bool = False) -> Target:
    """What to embed and where to open; STORE is `model.store_model(repo)` if already built.
    An event the page leaves out (without `bookkeeping`) opens at the nearest one it shows."""
    store = store or model.store_model(repo)
    rows = store["sessions"]
    everything = [s["id"] for s in rows] if all_sessions else []
    if rev and ".." in rev:
        a_text, _, b_text = rev.partition("..")
        if not a_text or not b_text or b_text.startswith("."):
            raise BadRevision(f"{rev!r}: give two revisions as A..B")
        a, b = resolve(repo, a_text).id, resolve(repo, b_text).id
        sa, sb = _session_of(repo, a, a_text), _session_of(repo, b, b_text)
        if sa != sb:
            raise BadRevision(f"{rev}: {a_text} and {b_text} are in different sessions "
                              f"({sa[:12]}, {sb[:12]}); compare branches of one session")
        la, _ = _label(repo, a_text, sa, bookkeeping)
        lb, _ = _label(repo, b_text, sa, bookkeeping)
        return Target(everything or _with_children(rows, sa),
                      f"#compare={sa}&a={quote(la)}&b={quote(lb)}",
                      f"ctx view: {a_text}..{b_text}")
    if rev is None:
        cur = repo.current()
        if cur.tip is None:
            ids = [s["id"] for s in rows]
            return Target(ids, "#sessions", "ctx view: all sessions")
        rev = "HEAD"
    r = resolve(repo, rev)
    repo.graph.event(r.id)
    sid = _session_of(repo, r.id, rev)
    parts = split_branch_ref(r.ref) if r.ref else None
    if parts and parts[0] == sid and repo.branches(sid).get(parts[1]) == r.id:
        start = f"#session={sid}&branch={quote(parts[1])}"
    else:
        eid = r.id if bookkeeping else model.shown_event(repo, r.id, sid)
        start = f"#session={sid}&event={eid}"
    title = repo.session(sid).title or sid[:12]
    return Target(everything or _with_children(rows, sid), start, f"ctx view: {title}")


def _with_children(session_rows: list[dict[str, Any]], sid: str) -> list[str]:
    """SID and every session spawned under it (subagents, forks), depth-first."""
    rows = {s["id"]: s for s in session_rows}
    out, todo = [], [sid]
    while todo:
        s = todo.pop(0)
        if s in out:
            continue
        out.append(s)
        todo.extend(rows.get(s, {}).get("children", ()))
    return out


def export_data(repo: Repository, tgt: Target, store: dict[str, Any] | None = None, *,
                bookkeeping: bool = False) -> dict[str, Any]:
    """The data of a self-contained page for TGT (`bookkeeping`: see model.session_model)."""
    store = store or model.store_model(repo)
    return {**store, "start": tgt.start,
            "data": {sid: model.session_model(repo, sid, bookkeeping=bookkeeping)
                     for sid in tgt.sessions}}
