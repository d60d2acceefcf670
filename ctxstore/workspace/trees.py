"""Walks over git trees: what a new tree adds to its base, and a tree as a flat file map.

Both walks skip subtrees whose id equals the base's at the same path, so the cost of a
snapshot after one change is the depth of the changed path, not the size of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .gitdb import MODE_TREE, TREE

_DELETED = 2


@dataclass
class Delta:
    """The git objects a tree has that its base (at the same paths) has not, and counts."""

    objects: dict[str, None] = field(default_factory=dict)  # git ids, insertion-ordered set
    added: int = 0
    modified: int = 0
    deleted: int = 0


def _count_files(git: Any, tree_id: str) -> int:
    n = 0
    for e in git[tree_id]:
        n += _count_files(git, str(e.id)) if e.filemode == MODE_TREE else 1
    return n


def delta(git: Any, tree_id: str, base_id: str | None) -> Delta:
    """What TREE adds to BASE (None: everything), with file counts added/modified/deleted."""
    out = Delta()
    _walk(git, tree_id, base_id, out)
    return out


def _walk(git: Any, tree_id: str, base_id: str | None, out: Delta) -> None:
    if tree_id == base_id:
        return
    out.objects[tree_id] = None
    base = {e.name: (str(e.id), e.filemode) for e in git[base_id]} if base_id else {}
    for e in git[tree_id]:
        oid, mode = str(e.id), e.filemode
        old = base.pop(e.name, None)
        if mode == MODE_TREE:
            sub_base = old[0] if old is not None and old[1] == MODE_TREE else None
            if old is not None and old[1] != MODE_TREE:
                out.deleted += 1
            _walk(git, oid, sub_base, out)
            continue
        if old is not None and old[1] == MODE_TREE:
            out.deleted += _count_files(git, old[0])
            old = None
        if old is None:
            out.added += 1
        elif old != (oid, mode):
            out.modified += 1
        if old is None or old[0] != oid:
            out.objects[oid] = None
    for oid, mode in base.values():
        out.deleted += _count_files(git, oid) if mode == MODE_TREE else 1
    return


def flat(git: Any, tree_id: str | None, prefix: str = "") -> dict[str, tuple[str, int]]:
    """{path: (blob id, mode)} of every file and symlink in the tree (None: empty)."""
    out: dict[str, tuple[str, int]] = {}
    if tree_id is None:
        return out
    stack = [(tree_id, prefix)]
    while stack:
        tid, pre = stack.pop()
        for e in git[tid]:
            path = pre + e.name
            if e.filemode == MODE_TREE:
                stack.append((str(e.id), path + "/"))
            else:
                out[path] = (str(e.id), e.filemode)
    return out


def changed(git: Any, old: str | None, new: str | None) -> dict[str, tuple[str, int] | None]:
    """{path: NEW's (blob id, mode), or None where NEW lacks it} for every file that differs
    between trees OLD and NEW (None: the empty tree) — libgit2's tree diff, which skips equal
    subtrees, so the cost follows the changes, not the tree."""
    if old == new:
        return {}
    empty = None
    if old is None or new is None:
        empty = str(git.odb.write(TREE, b""))
    d = git.diff(git[old or empty], git[new or empty])
    out: dict[str, tuple[str, int] | None] = {}
    for delta in d.deltas:
        if delta.status == _DELETED:
            out.setdefault(delta.old_file.path, None)
        else:
            out[delta.new_file.path] = (str(delta.new_file.id), int(delta.new_file.mode))
    return out


def entry(git: Any, tree: str | None, path: str) -> tuple[str, int] | None:
    """(blob id, mode) of the file at PATH in TREE, or None (absent, or a directory)."""
    if tree is None:
        return None
    try:
        e = git[tree][path]
    except KeyError:
        return None
    mode = int(e.filemode)
    return None if mode == MODE_TREE else (str(e.id), mode)


def all_objects(git: Any, tree_id: str) -> list[str]:
    """Every git id reachable from TREE (itself included), each once."""
    return list(delta(git, tree_id, None).objects)


def in_scope(path: str, scope: tuple[str, ...]) -> bool:
    """Is PATH one of SCOPE's paths or below one of them (empty scope: everything)?"""
    if not scope:
        return True
    return any(path == s or path.startswith(s.rstrip("/") + "/") for s in scope)
