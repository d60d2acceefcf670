"""Putting files back as a snapshot had them, without losing anything not yet snapshotted.

The restore compares three trees of the root: the target (the snapshot at REV), the current
files (staged now, as a snapshot would) and the newest snapshot of the root taken before. A
file the restore would overwrite or delete that differs from that newest snapshot is
uncommitted work: the restore refuses, naming it, unless forced. Before it touches a file the
restore records the root as it is (a snapshot event, committed and durable); then it replaces
each file whole, never through a symlink and only under the project (contain.py); then it
records the root as it left it. A restore is undone by restoring the first event — which
`ctx undo` does (porcelain/oplog.py): it puts the files back without recording anything,
since the first event already names them, then moves the branch back to it.
docs/format.md "Workspace snapshots", "Restore"; docs/workspace.md "Containment"."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from ..errors import CtxError, InvalidInput, IOFailure, WorkspaceConflict
from . import contain, gitdb
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
    """Where a restore writes: ROOT if the user named one, else the project (the directory
    holding `.ctx`) — or the snapshot's own `payload.root` only when that lies inside the
    project (a hook snapshot of a subdirectory). A root that came with the data and leaves
    the project is never used (docs/workspace.md "Containment")."""
    if root:
        return gitdb.normalize_root(root)
    project = gitdb.normalize_root(default_root(repo))
    named = payload.get("root")
    if isinstance(named, str) and os.path.isabs(named) and os.path.isdir(named) \
            and contain.is_within(project, named):
        return gitdb.normalize_root(named)
    return project


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
            label: str = "", command: str | None = None,
            recorded_as: str | None = None) -> RestorePlan:
    """Restore the snapshot at EVENT_ID (or the newest before it) into the project (or ROOT),
    limited to PATHS (relative to the root) if given.

    `recorded_as`: the snapshot event that already names the files as they are (an undo of a
    restore: the snapshot that restore left). Then nothing is recorded — no before and after
    events, no transaction — and only the files move."""
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
            for p in wanted:  # names from the data: refused before anything is written
                contain.check_name(p, f"snapshot {target_event[:12]}")
            moves = {p: e for p, e in wanted.items() if entry(git, now.tree, p) != e}
        else:
            moves = {p: e for p, e in changed(git, now.tree, tree).items() if in_scope(p, scope)}
        for path in moves:  # names from the data: refused before anything is written
            contain.check_name(path, f"snapshot {target_event[:12]}")
        target = {p: e for p, e in moves.items() if e is not None}
        plan.write = sorted(target)
        plan.delete = sorted(p for p, e in moves.items() if e is None)
        going = set(plan.delete)
        for path in plan.write + plan.delete:
            _check_way(root_dir, path, going)
        user = changed(git, now.base_tree, now.tree) if not partial else None
        for path in plan.write + plan.delete:
            mine = entry(git, now.tree, path)
            if (path in user) if user is not None else \
                    mine != entry(git, now.base_tree, path):
                plan.conflicts.append(path)
            elif mine is None and _lexists(root_dir, path) and \
                    not _snapshotted_dir(git, now.tree, root_dir, path, going):
                plan.conflicts.append(path)  # an ignored file or a directory in the way
        plan.conflicts.sort()
        if plan.conflicts and not force and not dry_run:
            raise conflict(plan, "restore", "restore other paths, or pass --force")
        if dry_run or not (plan.write or plan.delete):
            return plan
        # 1. the root as it is, durably named by an event, before any file is touched
        if recorded_as is None:
            with repo.transaction(ref, message=f"restore: before {label}",
                                  command=command or "api: restore_workspace") as tx:
                plan.before_event = tx.append(SNAPSHOT_TYPE, "system",
                                              now.payload(f"restore: before {label}"))
            remember(repo, root_dir, now.workspace)
        else:
            plan.before_event = recorded_as
        # 2. the files, each replaced whole (as it was, or as the target has it)
        failure = _apply(git, root_dir, target, plan)
        if recorded_as is not None:
            if failure is not None:
                raise failure
            if not scope and not partial:  # the files are the target's tree now
                remember(repo, root_dir, wid)
            plan.applied = True
            return plan
        # 3. the root as the restore left it
        reason = f"restore: {label}" if failure is None else f"restore (incomplete): {label}"
        try:
            after = capture(repo, root_dir)
            with repo.transaction(ref, message=reason,
                                  command=command or "api: restore_workspace") as tx:
                plan.after_event = tx.append(SNAPSHOT_TYPE, "system", after.payload(reason))
            remember(repo, root_dir, after.workspace)
        except CtxError as exc:
            if failure is None:
                raise
            failure.message += f"; the files as left could not be snapshotted: {exc}"
            failure.args = (failure.message,)
        if failure is not None:
            raise failure
        plan.applied = True
    return plan


def conflict(plan: RestorePlan, what: str, other: str) -> WorkspaceConflict:
    """The refusal of a restore (or of an undo of one) that would overwrite PLAN's conflicts."""
    more = len(plan.conflicts) - NAMED
    return WorkspaceConflict(
        f"{what} would overwrite changes not in any snapshot of {plan.root}: "
        f"{', '.join(plan.conflicts[:NAMED])}" + (f" and {more} more" if more > 0 else "")
        + f" (snapshot them first with `ctx snapshot`, {other})", files=plan.conflicts)


def _check_way(root: str, path: str, going: set[str]) -> None:
    """BadPath if a directory on the way to PATH is a symlink that the restore does not
    itself remove first (a symlink in GOING is deleted before anything is written)."""
    try:
        contain.check_parents(root, path)
    except contain.BadPath:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in going:
                return
            if os.path.islink(os.path.join(root, prefix)):
                break
        raise


def _snapshotted_dir(git: Any, tree: str, root: str, path: str, going: set[str]) -> bool:
    """Is PATH a directory the current snapshot holds whole and the restore empties (a file of
    the target that is a directory now: every file in it snapshotted and in GOING, the planned
    deletes — nothing is lost)?"""
    try:
        e = git[tree][path]
    except KeyError:
        return False
    if e.filemode != gitdb.MODE_TREE:
        return False
    held = set(flat(git, str(e.id)))
    if any(f"{path}/{p}" not in going for p in held):
        return False
    base = os.path.join(root, path)
    for dirpath, dirnames, filenames in os.walk(base):  # symlinks are not followed
        here = os.path.relpath(dirpath, base)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            if os.path.normpath(os.path.join(here, name)) not in held:
                return False
    return True


def _lexists(root: str, path: str) -> bool:
    head, name = contain.split(path)
    try:
        with contain.Dir(root, head) as d:
            return d.lstat(name) is not None
    except (OSError, contain.BadPath):
        return False


def _apply(git: Any, root: str, target: dict[str, tuple[str, int]],
           plan: RestorePlan) -> IOFailure | None:
    """Delete, then write, each planned path under ROOT without following a symlink
    (contain.Dir); each file is written to a temporary name beside it, fsync'd and renamed over
    the old one, so it is always either as it was or as the target has it. Stops at the first
    failure and returns an IOFailure saying which files are which (None: all done)."""
    done: list[str] = []
    todo = [(p, None) for p in plan.delete] + [(p, target[p]) for p in plan.write]
    for n, (path, want) in enumerate(todo):
        try:
            if want is None:
                _delete(root, path)
            else:
                _write(root, path, git[want[0]].data, want[1])
        except (OSError, contain.BadPath) as exc:
            why = exc.message if isinstance(exc, contain.BadPath) else \
                (exc.strerror or str(exc))
            rest = [p for p, _ in todo[n + 1:]]
            return IOFailure(
                f"restore into {root} stopped at {path}: {why}; "
                f"as the target has them: {_names(done)}; "
                f"as they were: {_names([path] + rest)}; "
                f"the files before the restore are snapshot {plan.before_event[:12]} "
                f"(`ctx restore {plan.before_event[:12]} --force` puts them back)",
                files=[path] + rest, written=done, before=plan.before_event)
        done.append(path)
    return None


def _names(paths: list[str]) -> str:
    if not paths:
        return "none"
    more = len(paths) - NAMED
    return ", ".join(paths[:NAMED]) + (f" and {more} more" if more > 0 else "")


def _delete(root: str, path: str) -> None:
    head, name = contain.split(path)
    try:
        with contain.Dir(root, head) as d:
            st = d.lstat(name)
            if st is None:
                return
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a directory is in the way", path)
            os.unlink(name, dir_fd=d.fd)
    except (FileNotFoundError, NotADirectoryError):
        return  # a parent is gone or is a file: the path is not there
    parts = head.split("/") if head else []
    while parts:  # remove the directories the delete emptied
        name = parts.pop()
        try:
            with contain.Dir(root, "/".join(parts)) as d:
                os.rmdir(name, dir_fd=d.fd)
        except OSError:
            return


def _write(root: str, path: str, data: bytes, mode: int) -> None:
    head, name = contain.split(path)
    with contain.Dir(root, head, create=True) as d:
        tmp = f".ctx-restore-{os.getpid()}-{_seq()}.tmp"
        try:
            if mode == gitdb.MODE_LINK:
                os.symlink(os.fsdecode(data), tmp, dir_fd=d.fd)
            else:
                perm = 0o777 if mode == gitdb.MODE_EXEC else 0o666
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | getattr(os, "O_CLOEXEC", 0), perm, dir_fd=d.fd)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                finally:
                    os.close(fd)
            st = d.lstat(name)
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a directory is in the way", path)
            os.rename(tmp, name, src_dir_fd=d.fd, dst_dir_fd=d.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=d.fd)
            except OSError:
                pass
            raise


_counter = [0]


def _seq() -> int:
    _counter[0] += 1
    return _counter[0]
