"""Branches within a session: create, delete, fork, checkout, reset (rollback)."""

from __future__ import annotations

from ..errors import BadRevision, NotFound, RefNotFound
from ..refs import DEFAULT_BRANCH, HEAD, branch_ref, check_branch_name
from ..repo import Repository
from ..repo.revparse import resolve, resolve_event, resolve_ref_name


def session_of(repo: Repository, event_id: str) -> str:
    """The session to branch in: HEAD's, else the one at the root of the event's history."""
    cur = repo.current()
    if cur.session:
        return cur.session
    sid = repo.session_of_event(event_id)
    if not sid:
        raise BadRevision(f"event {event_id[:12]} does not lead to a session root")
    return sid


def list_branches(repo: Repository) -> tuple[str | None, dict[str, str]]:
    cur = repo.current()
    if not cur.session:
        return None, {}
    return cur.branch, repo.branches(cur.session)


def _new_branch(repo: Repository, name: str, rev: str | None) -> tuple[str, str]:
    """(ref, tip) of a branch NAME that may be created at REV (default HEAD) in its session."""
    check_branch_name(name)
    tip = resolve_event(repo, rev or HEAD)
    session = session_of(repo, tip)
    repo.check_same_session(tip, session, rev or HEAD)
    ref = branch_ref(session, name)
    if repo.refs.read(ref) is not None:
        raise BadRevision(f"branch {name!r} already exists")
    return ref, tip


def create_branch(repo: Repository, name: str, rev: str | None = None) -> tuple[str, str]:
    """A new branch NAME at REV (default HEAD) in HEAD's session; returns (ref, tip)."""
    ref, tip = _new_branch(repo, name, rev)
    with repo.transaction(message=f"branch: created from {rev or 'HEAD'}") as tx:
        tx.create_ref(ref, tip)
    return ref, tip


def delete_branch(repo: Repository, name: str) -> str:
    cur = repo.current()
    if not cur.session:
        raise BadRevision("HEAD is detached: no current session to delete a branch from")
    ref = branch_ref(cur.session, name)
    tip = repo.refs.read(ref)
    if tip is None:
        raise RefNotFound(f"no branch {name!r} in this session")
    if cur.ref == ref:
        raise BadRevision(f"cannot delete branch {name!r}: HEAD is on it (checkout another first)")
    with repo.transaction(message=f"branch: deleted {name}") as tx:
        tx.set_ref(ref, None, expected=tip)
    return tip


def fork(repo: Repository, name: str, at: str | None = None) -> tuple[str, str]:
    """A new branch at REV (default HEAD) and switch to it, as one operation; the old branch is
    untouched."""
    ref, tip = _new_branch(repo, name, at)
    with repo.transaction(message=f"fork: {name} from {at or 'HEAD'}") as tx:
        tx.create_ref(ref, tip, message=f"branch: created from {at or 'HEAD'}")
        tx.set_head(ref=ref, message=f"fork: moving to {name}")
    return ref, tip


def checkout(repo: Repository, rev: str) -> tuple[str | None, str]:
    """Switch HEAD to a branch (symbolic), to a session's main branch (a session id or prefix),
    or to any event (detached). Returns (ref, tip)."""
    ref = resolve_ref_name(repo, rev)
    if ref == HEAD:  # as in git, `checkout HEAD` (or `@`) stays where HEAD is: no detaching
        head = repo.refs.read_head()
        if head.target is None:
            resolve_event(repo, rev)  # raises: HEAD names no event yet
        return head.ref, head.target  # type: ignore[return-value]
    if ref is None:
        ref = _session_branch(repo, rev)
    if ref is not None:
        with repo.transaction(message=f"checkout: moving to {rev}") as tx:
            tx.set_head(ref=ref)
        return ref, repo.refs.read(ref)  # type: ignore[return-value]
    tip = resolve_event(repo, rev)
    with repo.transaction(message=f"checkout: moving to {rev} (detached)") as tx:
        tx.set_head(detached=tip)
    return None, tip


def _session_branch(repo: Repository, rev: str) -> str | None:
    """The branch `checkout SESSION` attaches to (the session's `main`, as a revision naming a
    session resolves), or None when REV is no session id prefix."""
    try:
        repo.resolve_session(rev)
    except (BadRevision, NotFound):
        return None
    return resolve(repo, rev).ref  # AmbiguousId when the prefix also names another object


def reset(repo: Repository, rev: str) -> tuple[str, str, str]:
    """Move the current branch to REV (rollback). The old tip stays reachable via the reflog.

    Returns (ref, old tip, new tip)."""
    cur = repo.current()
    if cur.ref is None:
        raise BadRevision("HEAD is detached: `ctx checkout REV` instead, or check out a branch")
    target = resolve_event(repo, rev)
    if cur.session:
        repo.check_same_session(target, cur.session, rev)
    old = repo.refs.read(cur.ref)
    with repo.transaction(message=f"reset: moving to {rev}") as tx:
        tx.set_ref(cur.ref, target, expected=old)
    return cur.ref, old or "", target


__all__ = ["DEFAULT_BRANCH", "checkout", "create_branch", "delete_branch", "fork",
           "list_branches", "reset", "session_of"]
