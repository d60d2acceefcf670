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
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IOFailure, WorkspaceConflict
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
from .trees import flat, in_scope

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


def restore(repo, event_id: str, paths: tuple[str, ...] = (), *, root: str | None = None,
            dry_run: bool = False, force: bool = False, ref: str | None = None,
            label: str = "", command: str | None = None) -> RestorePlan:
    """Restore the snapshot at EVENT_ID (or the newest before it) into its root, limited to
    PATHS (relative to the root) if given."""
    target_event, ev = snapshot_at(repo, event_id)
    wid = workspace_of(ev)
    tree = read_workspace(repo, wid)["tree"]
    root_dir = _root_for(repo, ev.payload, root)
    scope = tuple(p.strip("/") for p in paths if p.strip("/"))
    label = label or target_event[:12]
    plan = RestorePlan(target_event, tree, root_dir)
    with gitdb.snapshot_lock(ctx_dir_of(repo)):
        git = hydrate(repo, wid)
        now = capture(repo, root_dir)
        git = now.git
        target, current = flat(git, tree), flat(git, now.tree)
        baseline = flat(git, now.base_tree)
        partial = bool(ev.payload.get("partial"))
        for path, entry in target.items():
            if in_scope(path, scope) and current.get(path) != entry:
                plan.write.append(path)
        gone = ev.payload.get("absent", ()) if partial else current
        for path in gone:
            if isinstance(path, str) and path in current and path not in target \
                    and in_scope(path, scope):
                plan.delete.append(path)
        plan.write.sort()
        plan.delete.sort()
        for path in plan.write + plan.delete:
            if current.get(path) != baseline.get(path):
                plan.conflicts.append(path)
            elif path not in current and os.path.lexists(os.path.join(root_dir, path)):
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
        _apply(git, root_dir, target, plan)
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


def _apply(git: Any, root: str, target: dict[str, tuple[str, int]], plan: RestorePlan) -> None:
    base = Path(root)
    umask = os.umask(0)
    os.umask(umask)
    try:
        for path in sorted(plan.delete, reverse=True):
            (base / path).unlink(missing_ok=True)
            _prune_dirs(base, (base / path).parent)
        ready: set[Path] = set()  # directories already known to be real directories
        for path in plan.write:
            oid, mode = target[path]
            _write(base, base / path, git[oid].data, mode, umask, ready)
    except OSError as exc:
        raise IOFailure(f"restore into {root}: {exc.filename or ''}: {exc.strerror or exc}") \
            from None


def _prune_dirs(root: Path, d: Path) -> None:
    while d != root and root in d.parents:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent


def _clear_way(root: Path, path: Path) -> None:
    """Remove what stands where a file goes inside ROOT: a file or symlink where a directory
    must be on the way, or a directory (the plan's checks made sure nobody's work is in it)
    at the path itself."""
    for parent in reversed(path.parents):
        if root in parent.parents and (parent.is_symlink() or
                                       (parent.exists() and not parent.is_dir())):
            parent.unlink()
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)


def _write(root: Path, path: Path, data: bytes, mode: int, umask: int,
           ready: set[Path]) -> None:
    if path.parent in ready:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
    else:
        _clear_way(root, path)
        path.parent.mkdir(parents=True, exist_ok=True)
        ready.add(path.parent)
    tmp = path.parent / f".ctx-restore-{os.getpid()}-{path.name}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    if mode == gitdb.MODE_LINK:
        os.symlink(os.fsdecode(data), tmp)
    else:
        perm = (0o777 if mode == gitdb.MODE_EXEC else 0o666) & ~umask
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perm)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.chmod(tmp, perm)
    os.replace(tmp, path)
