"""Reading history: log, show, diff, reflog, status."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import RefNotFound
from ..objects import Event, StoredObject, thaw
from ..refs import HEAD, check_ref_name, split_branch_ref
from ..repo import Repository
from ..repo.revparse import reflog_ref_name, resolve_event, resolve_object


def event_dict(eid: str, ev: Event) -> dict[str, Any]:
    d = ev.to_dict()
    d["id"] = eid
    return d


def log(repo: Repository, rev: str | None = None, n: int | None = None,
        all_branches: bool = False, first_parent: bool = False) -> list[tuple[str, Event]]:
    """Events newest first from REV (default HEAD), or from every branch of HEAD's session."""
    if all_branches:
        cur = repo.current()
        if cur.session:
            tips = list(repo.branches(cur.session).values())
        else:
            tips = [t for _, t in repo.refs.iter_refs("refs/sessions/")]
        if cur.tip:
            tips.append(cur.tip)
    else:
        tips = [resolve_event(repo, rev or HEAD)]
    return list(repo.graph.walk(tips, limit=n, first_parent=first_parent))


def show(repo: Repository, rev: str) -> dict[str, Any]:
    """Any object by revision or id: its type, id and decoded content."""
    obj_id = resolve_object(repo, rev)
    type_name, _ = repo.store.get_raw(obj_id)
    obj = repo.store.get(obj_id)
    if isinstance(obj, StoredObject):
        content: Any = obj.to_dict()
    elif isinstance(obj, bytes):
        try:
            content = obj.decode("utf-8")
        except UnicodeDecodeError:
            content = {"binary": len(obj)}
    else:
        content = thaw(obj)
    return {"id": obj_id, "type": type_name, "content": content}


@dataclass(frozen=True)
class DiffResult:
    a: str
    b: str
    base: str | None
    only_a: list[tuple[str, Event]]
    only_b: list[tuple[str, Event]]

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "merge_base": self.base,
                "only_a": [event_dict(i, e) for i, e in self.only_a],
                "only_b": [event_dict(i, e) for i, e in self.only_b]}


def diff(repo: Repository, a: str, b: str) -> DiffResult:
    ia, ib = resolve_event(repo, a), resolve_event(repo, b)
    d = repo.graph.diff(ia, ib)
    ev = repo.graph.event
    return DiffResult(ia, ib, d.base, [(i, ev(i)) for i in d.only_a],
                      [(i, ev(i)) for i in d.only_b])


def reflog(repo: Repository, ref: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(full ref name, entries newest first with their @{N} index).

    REF is resolved like a revision's ref (a deleted branch still names its reflog); a name
    that is neither a ref nor has a reflog is RefNotFound, an invalid one InvalidRefName."""
    if ref is None:
        name = HEAD
    else:
        found = reflog_ref_name(repo, ref)
        if found is None:
            check_ref_name(ref)
            raise RefNotFound(f"no ref or reflog named {ref!r}")
        name = found
    entries = repo.refs.reflog(name)
    out = []
    for i, e in enumerate(reversed(entries)):
        d = e.to_dict()
        d["index"] = i
        out.append(d)
    return name, out


def status(repo: Repository) -> dict[str, Any]:
    cur = repo.current()
    info: dict[str, Any] = {"store": str(repo.path) if repo.path else None,
                            "session": cur.session, "branch": cur.branch, "head": cur.tip,
                            "detached": cur.ref is None}
    if cur.session:
        sess = repo.session(cur.session)
        info["title"] = sess.title
        info["branches"] = sorted(repo.branches(cur.session))
    if cur.tip:
        ev = repo.graph.event(cur.tip)
        info["events"] = ev.generation
        info["last_event"] = {"type": ev.type, "ts": ev.ts}
    if cur.ref and split_branch_ref(cur.ref) is None:
        info["ref"] = cur.ref
    return info
