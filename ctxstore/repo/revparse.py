"""Revisions like git's: ids, branch names, SESSION/BRANCH, HEAD, REV~N, REV^N, BRANCH@{N}.

Resolution order for a name: HEAD; a full ref name (`refs/...`); a branch of HEAD's session;
a remote-tracking ref `REMOTE/SESSION/BRANCH` or `REMOTE/BRANCH` (HEAD's session);
`SESSION/BRANCH` with SESSION a session id or unique prefix; finally an object id or unique
prefix. A session object's id resolves to that session's `main` tip, so "REV may be a session id".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import BadRevision, NotFound
from ..objects import Session
from ..refs import DEFAULT_BRANCH, HEAD, branch_ref, check_ref_name
from .repository import Repository

_SUFFIX = re.compile(r"(~\d*|\^\d*|@\{\d+\})")


class Resolved(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    """An event id, plus the ref it came from when the revision named one."""

    id: str
    ref: str | None = None


def resolve_ref_name(repo: Repository, name: str) -> str | None:
    """The ref a bare name denotes (HEAD, refs/..., branch, SESSION/BRANCH), or None."""
    if name in (HEAD, "@"):
        return HEAD
    if name.startswith("refs/"):
        check_ref_name(name)
        return name if repo.refs.read(name) is not None else None
    cur = repo.current()
    session = cur.session or (repo.session_of_event(cur.tip) if cur.tip else None)
    if session:
        try:
            ref = branch_ref(session, name)
        except BadRevision:  # not a valid branch name; may still be an id
            ref = None
        if ref and repo.refs.read(ref) is not None:
            return ref
    if "/" in name:
        ref = _tracking_ref_name(repo, name, session)
        if ref is not None:
            return ref
        sess, _, branch = name.partition("/")
        try:
            sid = repo.resolve_session(sess)
        except (BadRevision, NotFound):
            return None
        ref = branch_ref(sid, branch)
        if repo.refs.read(ref) is not None:
            return ref
    return None


def _tracking_ref_name(repo: Repository, name: str, session: str | None) -> str | None:
    """A remote-tracking ref (docs/format.md "Git remotes"): `REMOTE/SESSION/BRANCH` with
    SESSION an id or unique prefix of at least 4 hex digits, or `REMOTE/BRANCH` for HEAD's
    session; None when REMOTE has no tracking refs or nothing matches."""
    remote, _, rest = name.partition("/")
    prefix = f"refs/remotes/{remote}/"
    if not remote or not rest:
        return None
    if "/" not in rest:
        if not session:
            return None
        ref = f"{prefix}{session}/{rest}"
        return ref if repo.refs.read(ref) is not None else None
    sess, _, branch = rest.partition("/")
    if len(sess) < 4:
        return None
    sids = {n[len(prefix):].partition("/")[0] for n, _ in repo.refs.iter_refs(prefix)}
    matches = sorted(s for s in sids if s.startswith(sess.lower()))
    if len(matches) > 1:
        from ..errors import AmbiguousId

        raise AmbiguousId(f"session prefix {sess} is ambiguous on remote {remote}: "
                          f"{', '.join(m[:12] for m in matches[:3])}")
    if not matches:
        return None
    ref = f"{prefix}{matches[0]}/{branch}"
    return ref if repo.refs.read(ref) is not None else None


def reflog_ref_name(repo: Repository, name: str) -> str | None:
    """Like `resolve_ref_name`, but a ref that was deleted still names its reflog, so a
    deleted branch can be recovered with NAME@{N} (its reflog outlives it)."""
    ref = resolve_ref_name(repo, name)
    if ref is not None:
        return ref
    logged = set(repo.refs.reflog_names())
    candidates = [name] if name.startswith("refs/") else []
    cur = repo.current()
    session = cur.session or (repo.session_of_event(cur.tip) if cur.tip else None)
    if session:
        try:
            candidates.append(branch_ref(session, name))
        except BadRevision:
            pass
    return next((c for c in candidates if c in logged), None)


def _base(repo: Repository, text: str) -> Resolved:
    if not text:
        raise BadRevision("empty revision")
    ref = resolve_ref_name(repo, text)
    if ref is not None:
        target = repo.refs.read(ref)
        if target is None:
            hint = ""
            if ref == HEAD and (n := len(repo.session_ids())):
                # after `ctx import` into a fresh store HEAD is still unborn: say where to go
                hint = (f": the store has {n} session(s); `ctx checkout SESSION` attaches to "
                        f"one (`ctx sessions` lists them)")
            raise BadRevision(f"{text} does not point to an event yet{hint}")
        if ref == HEAD:
            ref = repo.refs.read_head().ref  # None when detached
        if target not in repo.objects:  # the ref's file is damaged: say which (issue 28)
            repo._missing_target(ref or HEAD, target)
        return Resolved(target, ref)
    try:
        obj_id = repo.objects.resolve(text)
    except BadRevision:
        raise BadRevision(f"unknown revision {text!r}: not a branch, session or object id") from None
    except NotFound:
        raise BadRevision(f"unknown revision {text!r}: no branch, session or object matches") from None
    obj = repo.objects.get(obj_id)
    if isinstance(obj, Session):
        branches = repo.branches(obj_id)
        if not branches:
            raise BadRevision(f"session {obj_id[:12]} has no branches")
        branch = DEFAULT_BRANCH if DEFAULT_BRANCH in branches else min(branches)
        return Resolved(branches[branch], branch_ref(obj_id, branch))
    return Resolved(obj_id)


def _reflog_nth(repo: Repository, ref: str, n: int, text: str) -> str:
    entries = repo.refs.reflog(ref)
    if n >= len(entries):
        raise BadRevision(f"{text}: reflog of {ref} has only {len(entries)} entries")
    value = entries[-1 - n].new
    if value is None:
        raise BadRevision(f"{text}: the ref was deleted at that point")
    return value


def resolve(repo: Repository, text: str) -> Resolved:
    """Resolve a revision expression to an event (or any object, for a bare id)."""
    if ".." in text:  # no ref name holds '..' (check_ref_name): git's A..B, which names a range
        raise BadRevision(f"{text!r} is a range (A..B); this command takes one revision: "
                          f"`ctx diff A B` compares two, `ctx log B` lists B's history")
    m = _SUFFIX.search(text)
    base_text = text[:m.start()] if m else text
    suffixes = _SUFFIX.findall(text[len(base_text):])
    if "".join(suffixes) != text[len(base_text):]:
        raise BadRevision(f"cannot parse revision {text!r}")
    if suffixes and suffixes[0].startswith("@{"):
        ref = reflog_ref_name(repo, base_text or HEAD)
        if ref is None:
            raise BadRevision(f"{text}: {base_text!r} is not a ref with a reflog")
        cur = Resolved(_reflog_nth(repo, ref, int(suffixes[0][2:-1]), text))
        suffixes = suffixes[1:]
    else:
        cur = _base(repo, base_text)
    for s in suffixes:
        if s.startswith("@{"):
            raise BadRevision(f"{text}: @{{N}} must follow a ref name")
        n = int(s[1:]) if len(s) > 1 else 1
        if s[0] == "~":
            cur = Resolved(repo.graph.nth_ancestor(cur.id, n))
        else:
            cur = Resolved(repo.graph.nth_parent(cur.id, n))
    return cur


def resolve_object(repo: Repository, text: str) -> str:
    """Like `resolve`, but a bare object id names that object itself (a session id names the
    session object, not its main tip): what `show` and `cat-object` want."""
    if not _SUFFIX.search(text) and resolve_ref_name(repo, text) is None:
        try:
            return repo.objects.resolve(text)
        except (BadRevision, NotFound):
            pass
    return resolve(repo, text).id


def resolve_event(repo: Repository, text: str) -> str:
    rid = resolve(repo, text).id
    repo.graph.event(rid)  # raises BadRevision if not an event
    return rid
