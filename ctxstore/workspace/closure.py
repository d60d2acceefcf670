"""Which git objects a snapshot needs, and bringing them into workspace.git from the store.

A snapshot's content travels as ordinary objects (the `workspace` object's chain of bases and
content ids are links), so packs, gc, fsck and remotes need no special case. What does need
this module: a reader that wants the tree in workspace.git (restore, diff --files) after the
snapshot arrived from elsewhere, and a remote that stores the snapshot as git objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..chunking import read_content
from ..errors import CorruptObject, InvalidInput
from ..objects.links import is_id
from . import gitdb
from .stored import ctx_dir_of, read_workspace


def workspace_of(event: Any) -> str | None:
    """The workspace object a snapshot event names (payload.workspace), or None."""
    wid = event.payload.get("workspace") if hasattr(event, "payload") else None
    return wid if is_id(wid) else None


def is_snapshot(event: Any) -> bool:
    return workspace_of(event) is not None


def chain(repo, wid: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The workspace object and its bases, newest first."""
    seen: set[str] = set()
    while wid and wid not in seen:
        seen.add(wid)
        value = read_workspace(repo, wid)
        yield wid, value
        base = value.get("base")
        wid = base if is_id(base) else None


def listed_objects(repo, wid: str) -> dict[str, str]:
    """{git id: content id} of every git object the chain lists (a superset of the tree's)."""
    out: dict[str, str] = {}
    for _, value in chain(repo, wid):
        for item in value.get("objects", ()):
            if isinstance(item, list) and len(item) == 2:
                out.setdefault(item[0], item[1])
    return out


def git_objects(repo, event_ids: Iterable[str]) -> dict[str, str]:
    """{git id: content id} of every git object the snapshot events among EVENT_IDS need —
    the one walk a transport that stores snapshots as git objects calls. Events that are not
    snapshots are ignored."""
    out: dict[str, str] = {}
    done: set[str] = set()
    for eid in event_ids:
        wid = workspace_of(repo.graph.event(eid))
        if wid and wid not in done:
            done.add(wid)
            for oid, content in listed_objects(repo, wid).items():
                out.setdefault(oid, content)
    return out


def read_git_object(repo, oid: str, content: str) -> tuple[int, bytes]:
    """The git object OID from its content in the store, checked against its git id."""
    raw = read_content(repo.objects, content)
    if gitdb.git_id(raw) != oid:
        raise CorruptObject(f"content {content[:12]} does not hash to git object {oid[:12]}")
    try:
        return gitdb.parse_loose(raw)
    except ValueError as exc:
        raise CorruptObject(f"content {content[:12]} of git object {oid[:12]}: {exc}") from None


def hydrate(repo, wid: str, git: Any | None = None) -> Any:
    """Make the tree of workspace WID readable in workspace.git, writing whatever is missing
    from the store (the root tree last, so a present root tree means a present closure).
    Returns the pygit2 repository."""
    git = git if git is not None else gitdb.open_gitdb(ctx_dir_of(repo))
    tree = read_workspace(repo, wid)["tree"]
    odb = git.odb
    if tree in odb:
        return git
    listed = listed_objects(repo, wid)
    if tree not in listed:
        raise CorruptObject(f"workspace {wid[:12]} does not list its own tree {tree[:12]}")
    for oid, content in listed.items():
        if oid != tree and oid not in odb:
            kind, data = read_git_object(repo, oid, content)
            odb.write(kind, data)
    kind, data = read_git_object(repo, tree, listed[tree])
    odb.write(kind, data)
    return git


def snapshot_at(repo, event_id: str) -> tuple[str, Any]:
    """The snapshot event at EVENT_ID: itself if it is one, else the newest on its
    first-parent chain. InvalidInput when there is none."""
    for eid, ev in repo.graph.first_parents(event_id):
        if is_snapshot(ev):
            return eid, ev
    raise InvalidInput(f"no workspace snapshot at or before {event_id[:12]} "
                       f"(take one with `ctx snapshot`)")
