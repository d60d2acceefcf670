"""Putting files back as a snapshot had them, without losing anything not yet snapshotted.

The restore compares three trees of the root: the target (the snapshot at REV), the current
files (staged now, as a snapshot would) and the newest snapshot of the root taken before. A
file the restore would overwrite or delete that differs from that newest snapshot is
uncommitted work: the restore refuses, naming it, unless forced. A restore records the root
before and after itself as two snapshot events in one transaction, so it can be undone by
restoring the first. docs/format.md "Workspace snapshots", "Restore".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, IOFailure, WorkspaceConflict
from . import gitdb
from .closure import hydrate, snapshot_at, workspace_of
from .snapshot import (
    SNAPSHOT_TYPE,
    capture,
    ctx_dir_of,
    default_root,
    read_workspace,
    remember,
)
from .trees import changed, entry, flat, in_scope

#: How many conflicting files a refusal names before "and N more".
NAMED = 20


@dataclass
class RestorePlan:
    target_event: str
    tree: str
    root: str
    write: list[str] = field(default_factory=list)  # created or replaced
    delete: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    before_event: str | None = None  # the snapshot of the root taken first
    after_event: str | None = None
    applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target_event, "tree": self.tree, "root": self.root,
                "write": self.write, "delete": self.delete, "conflicts": self.conflicts,
                "before": self.before_event, "after": self.after_event,
                "applied": self.applied}


def _root_for(repo, payload: dict, root: str | None) -> str:
    if root:
        return gitdb.normalize_root(root)
    named = payload.get("root")
    if isinstance(named, str) and os.path.isdir(named):
        return gitdb.normalize_root(named)
    return gitdb.normalize_root(default_root(repo))


def _scope(paths: tuple[str, ...], root: str) -> tuple[str, ...]:
    """PATHS as paths relative to ROOT (absolute ones must lie inside it); () is everything."""
    out = []
    for p in paths:
        rel = os.path.relpath(p, root) if os.path.isabs(p) else os.path.normpath(p)
        if rel == ".." or rel.startswith("../"):
            raise InvalidInput(f"{p}: outside the snapshot's directory {root}")
        if rel != ".":
            out.append(rel.strip("/"))
    return tuple(out)


def restore(repo, event_id: str, paths: tuple[str, ...] = (), *, root: str | None = None,
            dry_run: bool = False, force: bool = False, ref: str | None = None,
            label: str = "", command: str | None = None) -> RestorePlan:
    """Restore the snapshot at EVENT_ID (or the newest before it) into its root, limited to
    PATHS (relative to the root) if given."""
    target_event, ev = snapshot_at(repo, event_id)
    wid = workspace_of(ev)
    tree = read_workspace(repo, wid)["tree"]
    root_dir = _root_for(repo, ev.payload, root)
    scope = _scope(paths, root_dir)
    label = label or target_event[:12]
    plan = RestorePlan(target_event, tree, root_dir)
    with gitdb.snapshot_lock(ctx_dir_of(repo)):
        git = hydrate(repo, wid)
        now = capture(repo, root_dir)
        git = now.git
        partial = bool(ev.payload.get("partial"))
        if partial:  # only the files the harness tracked: look each one up
            wanted = {p: e for p, e in flat(git, tree).items() if in_scope(p, scope)}
            for p in ev.payload.get("absent", ()):
                if isinstance(p, str) and p not in wanted and in_scope(p, scope):
                    wanted[p] = None
            moves = {p: e for p, e in wanted.items() if entry(git, now.tree, p) != e}
        else:
            moves = {p: e for p, e in changed(git, now.tree, tree).items() if in_scope(p, scope)}
        target = {p: e for p, e in moves.items() if e is not None}
        plan.write = sorted(target)
        plan.delete = sorted(p for p, e in moves.items() if e is None)
        user = changed(git, now.base_tree, now.tree) if not partial else None
        for path in plan.write + plan.delete:
            mine = entry(git, now.tree, path)
            if (path in user) if user is not None else \
                    mine != entry(git, now.base_tree, path):
                plan.conflicts.append(path)
            elif mine is None and os.path.lexists(os.path.join(root_dir, path)):
                plan.conflicts.append(path)  # an ignored file or a directory in the way
        plan.conflicts.sort()
        if plan.conflicts and not force and not dry_run:
            names = ", ".join(plan.conflicts[:NAMED])
            more = len(plan.conflicts) - NAMED
            raise WorkspaceConflict(
                f"restore would overwrite changes not in any snapshot of {root_dir}: {names}"
                + (f" and {more} more" if more > 0 else "")
                + " (snapshot them first with `ctx snapshot`, restore other paths, or pass "
                  "--force)", files=plan.conflicts)
        if dry_run or not (plan.write or plan.delete):
            return plan
        _apply(git, root_dir, tree, plan)
        after = capture(repo, root_dir)
        with repo.transaction(ref, message=f"restore: {label}",
                              command=command or "api: restore_workspace") as tx:
            plan.before_event = tx.append(SNAPSHOT_TYPE, "system",
                                          now.payload(f"restore: before {label}"))
            plan.after_event = tx.append(SNAPSHOT_TYPE, "system",
                                         after.payload(f"restore: {label}"))
        remember(repo, root_dir, after.workspace)
        plan.applied = True
    return plan


def _apply(git: Any, root: str, tree: str, plan: RestorePlan) -> None:
    """libgit2's checkout of exactly the planned paths (literal paths, not patterns): it
    writes files, modes and symlinks, removes what the snapshot lacks, and records the stat
    data of what it wrote in the root's stat cache, so the snapshot after the restore does
    not re-read the files. GIT's HEAD, refs and the user's repository are not involved:
    `git` is workspace.git with its work tree set to ROOT."""
    import pygit2
    from pygit2.enums import CheckoutStrategy

    strategy = (CheckoutStrategy.FORCE | CheckoutStrategy.REMOVE_UNTRACKED
                | CheckoutStrategy.DISABLE_PATHSPEC_MATCH)
    try:
        git.checkout_tree(git[tree], strategy=strategy, paths=plan.write + plan.delete)
    except pygit2.GitError as exc:
        raise IOFailure(f"restore into {root}: {exc}") from None
    except OSError as exc:
        raise IOFailure(f"restore into {root}: {exc.filename or ''}: {exc.strerror or exc}") \
            from None
    base = Path(root)
    for path in plan.delete:
        if os.path.lexists(base / path):
            raise IOFailure(f"restore into {root}: {path} could not be removed")
        _prune_dirs(base, (base / path).parent)


def _prune_dirs(root: Path, d: Path) -> None:
    while d != root and root in d.parents:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent
