"""Remote-tracking refs in the ctx store: `refs/remotes/<remote>/<sid>/<branch>` and
`refs/remotes/<remote>/session-meta/<sid>` (docs/format.md "Git remotes")."""

from __future__ import annotations

from ..refs import split_branch_ref

TRACKING_PREFIX = "refs/remotes/"


def tracking_ref(remote: str, rest: str) -> str | None:
    """The tracking ref of a travelling ref `rest` (its name without `refs/`), or None."""
    if rest.startswith("sessions/"):
        return f"{TRACKING_PREFIX}{remote}/{rest[len('sessions/'):]}"
    if rest.startswith("session-meta/"):
        return f"{TRACKING_PREFIX}{remote}/{rest}"
    return None


def local_ref(tracking: str, remote: str) -> str | None:
    """The local ref a tracking ref mirrors (the inverse of tracking_ref)."""
    prefix = f"{TRACKING_PREFIX}{remote}/"
    if not tracking.startswith(prefix):
        return None
    rest = tracking[len(prefix):]
    if rest.startswith("session-meta/"):
        return f"refs/{rest}"
    ref = f"refs/sessions/{rest}"
    return ref if split_branch_ref(ref) else None


def tracking_refs(repo, remote: str) -> dict[str, str]:
    """{tracking ref: event id} of one remote."""
    return dict(repo.refs.iter_refs(f"{TRACKING_PREFIX}{remote}/"))


def list_all(repo) -> list[tuple[str, str, str]]:
    """(remote, name below the remote, tip) of every tracking ref, sorted."""
    out = []
    for name, tip in repo.refs.iter_refs(TRACKING_PREFIX):
        remote, _, rest = name[len(TRACKING_PREFIX):].partition("/")
        out.append((remote, rest, tip))
    return out


def delete_tracking(repo, remote: str) -> list[str]:
    refs = tracking_refs(repo, remote)
    if refs:
        with repo.transaction(message=f"remote remove {remote}") as tx:
            for name, tip in refs.items():
                tx.set_ref(name, None, expected=tip, message=f"remote remove {remote}")
    return sorted(refs)
