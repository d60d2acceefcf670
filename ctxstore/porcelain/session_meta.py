"""Session titles and tags, and removing or restoring a whole session (docs/format.md,
"Session titles, tags and removal").

The session object is immutable, so a title or tags given later are a chain of
`ctx:session-meta` events named by `refs/session-meta/<session id>`; each holds the complete
metadata. Removal deletes the session's refs by compare-and-swap, so their reflogs keep the
tips and `restore` can put them back until gc expires those entries.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import BadRevision, InvalidInput, NotFound, RefConflict
from ..refs import SESSIONS_PREFIX, split_branch_ref
from ..repo import Repository

META_PREFIX = "refs/session-meta/"
META_EVENT = "ctx:session-meta"
REMOVE_MESSAGE = "session rm"  # the reflog message `restore` looks for


def meta_ref(session_id: str) -> str:
    return f"{META_PREFIX}{session_id}"


class SessionMeta(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    session: str
    title: str
    tags: tuple[str, ...]
    event: str | None  # the metadata event, None when the session has none

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "title": self.title, "tags": list(self.tags),
                "event": self.event}


def own_meta(repo: Repository, session_id: str) -> tuple[str, tuple[str, ...], str | None]:
    """(title, tags, event) as the metadata chain alone says: ("", (), None) without one."""
    tip = repo.refs.read(meta_ref(session_id))
    if tip is None:
        return "", (), None
    if tip not in repo.objects:
        repo._missing_target(meta_ref(session_id), tip)
    p = repo.graph.event(tip).payload
    title = p.get("title") if isinstance(p.get("title"), str) else ""
    return title, tuple(t for t in p.get("tags", ()) if isinstance(t, str)), tip


def read_meta(repo: Repository, session_id: str) -> SessionMeta:
    """The session's title (metadata title, else the session object's) and tags."""
    title, tags, tip = own_meta(repo, session_id)
    return SessionMeta(session_id, title or repo.session(session_id).title, tags, tip)


def _write_meta(repo: Repository, session_id: str, title: str, tags: tuple[str, ...],
                message: str) -> SessionMeta:
    ref = meta_ref(session_id)
    old = repo.refs.read(ref)
    parent = old or _root_of(repo, session_id)
    payload = {"session": session_id, "title": title, "tags": sorted(set(tags))}
    with repo.transaction(message=message) as tx:  # one operation: `ctx undo` reverts it
        eid = tx.event(META_EVENT, "user", payload, (parent,), session=session_id)
        tx.set_ref(ref, eid, expected=old)
    return SessionMeta(session_id, title or repo.session(session_id).title,
                       tuple(payload["tags"]), eid)


def _root_of(repo: Repository, session_id: str) -> str:
    """The session's SessionStarted event: the first-parent root of any of its branches."""
    for tip in repo.branches(session_id).values():
        eid = tip
        while True:
            parents = repo.graph.event(eid).parents
            if not parents:
                return eid
            eid = parents[0]
    raise NotFound(f"session {session_id[:12]} has no branches")


def rename(repo: Repository, session: str, title: str) -> SessionMeta:
    sid = repo.resolve_session(session)
    title = " ".join(title.split())
    if not title:
        raise InvalidInput("a session title cannot be empty")
    _title, tags, _tip = own_meta(repo, sid)
    return _write_meta(repo, sid, title, tags, f"session rename: {title}")


def tag(repo: Repository, session: str, add: list[str], remove: list[str]) -> SessionMeta:
    """Add and remove tags; no change writes nothing."""
    sid = repo.resolve_session(session)
    for t in (*add, *remove):
        if not t or any(c.isspace() for c in t):
            raise InvalidInput(f"invalid tag {t!r}: tags are non-empty and have no whitespace")
    title, tags, _tip = own_meta(repo, sid)
    new = (set(tags) | set(add)) - set(remove)
    if new == set(tags):
        return read_meta(repo, sid)
    desc = " ".join([*(f"+{t}" for t in add), *(f"-{t}" for t in remove)])
    return _write_meta(repo, sid, title, tuple(new), f"session tag: {desc}")


# -- removal ----------------------------------------------------------------------------------

def session_refs(repo: Repository, session_id: str) -> dict[str, str]:
    """{ref: tip} of every live ref of the session: its branches and its metadata ref."""
    out = {f"{SESSIONS_PREFIX}{session_id}/{b}": t for b, t in repo.branches(session_id).items()}
    meta = repo.refs.read(meta_ref(session_id))
    if meta is not None:
        out[meta_ref(session_id)] = meta
    return out


def remove(repo: Repository, session: str) -> dict[str, str]:
    """Delete every ref of the session by compare-and-swap; returns {ref: old tip}.

    Refuses when HEAD is on one of its branches. The reflogs keep the tips (see `restore`)."""
    sid = repo.resolve_session(session)
    head = repo.refs.read_head()
    parts = split_branch_ref(head.ref) if head.ref else None
    if parts and parts[0] == sid:
        raise BadRevision(f"HEAD is on session {sid[:12]} (branch {parts[1]}): check out "
                          f"another session first (ctx checkout SESSION)")
    refs = session_refs(repo, sid)
    _move_refs(repo, [(name, tip, None) for name, tip in refs.items()], REMOVE_MESSAGE)
    return refs


def _move_refs(repo: Repository, moves: list[tuple[str, str | None, str | None]],
               message: str) -> None:
    """Apply (ref, old, new) moves atomically as one operation (`ctx undo` reverts it), each
    with a reflog line carrying `message`."""
    with repo.transaction(message=message) as tx:
        for name, old, new in moves:
            tx.set_ref(name, new, expected=old, message=message)


def removed_sessions(repo: Repository) -> dict[str, dict[str, str]]:
    """{session id: {ref: tip to restore}} for sessions whose every ref was deleted and whose
    reflogs still end in that deletion."""
    out: dict[str, dict[str, str]] = {}
    live = {name for name, _ in repo.refs.iter_refs("refs/")}
    for name in repo.refs.reflog_names():
        if name in live:
            continue
        if name.startswith(META_PREFIX):
            sid = name[len(META_PREFIX):]
        else:
            parts = split_branch_ref(name)
            if parts is None:
                continue
            sid = parts[0]
        entries = repo.refs.reflog(name)
        if entries and entries[-1].new is None and entries[-1].old and \
                entries[-1].message == REMOVE_MESSAGE:
            out.setdefault(sid, {})[name] = entries[-1].old
    live_sessions = set(repo.session_ids())
    return {sid: refs for sid, refs in out.items() if sid not in live_sessions}


def restore(repo: Repository, session: str) -> dict[str, str]:
    """Re-create the refs `remove` deleted, at the tips their reflogs name; {ref: tip}."""
    text = session.strip().lower()
    candidates = {sid: refs for sid, refs in removed_sessions(repo).items() if sid.startswith(text)}
    if len(text) < 4 or not candidates:
        if any(s.startswith(text) for s in repo.session_ids()) and len(text) >= 4:
            raise BadRevision(f"session {text} is not removed: nothing to restore")
        raise NotFound(f"no removed session {text!r} with reflogs to restore it from "
                       f"(gc may have expired them)")
    if len(candidates) > 1:
        from ..errors import AmbiguousId

        raise AmbiguousId(f"removed-session prefix {text} is ambiguous: "
                          f"{', '.join(s[:12] for s in candidates)}")
    (sid, refs), = candidates.items()
    for name in refs:
        if repo.refs.read(name) is not None:
            raise RefConflict(f"ref {name} exists again; not restoring over it")
    _move_refs(repo, [(name, None, tip) for name, tip in refs.items()], "session restore")
    return refs
