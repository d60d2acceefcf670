"""The operation log for the CLI: list, show, undo, restore (ctxstore/repo/operations.py)."""

from __future__ import annotations

from typing import Any

from ..refs import split_branch_ref
from ..repo import Repository, operations

#: How workspace/restore.py names the two snapshots of a restore (their payload.reason).
RESTORE_BEFORE = "restore: before "
RESTORE_AFTER = ("restore: ", "restore (incomplete): ")


def change_dicts(changes) -> list[dict[str, Any]]:
    return [{"ref": ref, "old": old, "new": new} for ref, old, new in changes]


def op_dict(lo: operations.LoggedOperation) -> dict[str, Any]:
    d = lo.op.to_dict()
    return {"id": lo.id, "parents": d["parents"], "time": d["time"], "user": d["user"],
            "host": d["host"], "command": d["command"], "description": d["description"],
            "changes": change_dicts(lo.op.changes)}


def op_log(repo: Repository, limit: int | None = None) -> dict[str, Any]:
    """Newest first; `truncated`: the id of the newest operation gc already removed, if any."""
    ops = []
    for i, lo in enumerate(operations.walk(repo)):
        if limit is not None and i >= limit:
            break
        ops.append(op_dict(lo))
    truncated = None
    if limit is None or len(ops) < limit:
        truncated = operations.truncated_at(repo)
    return {"head": operations.op_head(repo), "operations": ops, "removed_by_gc": truncated}


def op_show(repo: Repository, text: str) -> dict[str, Any]:
    return op_dict(operations.resolve(repo, text))


def undo(repo: Repository) -> dict[str, Any]:
    """Revert the newest operation. When it moved a branch across a `ctx restore` (the
    restore itself, or an undo of one), the files follow, as `jj undo` takes the working copy
    back: checked first with restore's own refusal of work no snapshot holds, put back after
    the refs moved (workspace/restore.py)."""
    newest = next(operations.walk(repo), None)
    step = _restore_step(repo, newest) if newest is not None else None
    if step is not None:
        _files_back(repo, *step, dry_run=True)
    new, undone = operations.undo(repo, command=repo.command)
    out = {"operation": new, "undone": op_dict(undone),
           "changes": [{"ref": r, "old": n, "new": o} for r, o, n in reversed(undone.op.changes)]}
    if step is not None:
        plan = _files_back(repo, *step)
        out["files"] = {"root": plan.root, "write": plan.write, "delete": plan.delete,
                        "snapshot": step[2]}
    return out


def _restore_step(repo: Repository, lo: operations.LoggedOperation) -> tuple[str, str, str] | None:
    """(root, snapshot the files are at, snapshot they go back to) when undoing LO moves a
    branch between the two snapshot events one restore recorded (before and after itself),
    in either direction; None otherwise."""
    for name, old, new in lo.op.changes:
        if old is None or new is None or split_branch_ref(name) is None:
            continue
        for after, before in ((new, old), (old, new)):
            root = _restore_pair(repo, after, before)
            if root is not None:
                return root, new, old
    return None


def _restore_pair(repo: Repository, after: str, before: str) -> str | None:
    """The root when AFTER is the snapshot a restore recorded after itself and BEFORE, its
    parent, the one it recorded first."""
    from ..workspace.snapshot import SNAPSHOT_TYPE

    a, b = repo.graph.event(after), repo.graph.event(before)
    if a.type != SNAPSHOT_TYPE or b.type != SNAPSHOT_TYPE or tuple(a.parents[:1]) != (before,):
        return None
    reason, first = a.payload.get("reason"), b.payload.get("reason")
    root = a.payload.get("root")
    if not (isinstance(reason, str) and isinstance(first, str) and isinstance(root, str)):
        return None
    if first.startswith(RESTORE_BEFORE) and reason.startswith(RESTORE_AFTER) \
            and not reason.startswith(RESTORE_BEFORE) and b.payload.get("root") == root:
        return root
    return None


def _files_back(repo: Repository, root: str, current: str, target: str, *, dry_run: bool = False):
    """Put the files of ROOT from snapshot CURRENT back to snapshot TARGET, recording nothing;
    WorkspaceConflict (nothing changed) when a file to replace holds work no snapshot has."""
    from ..errors import InvalidInput
    from ..workspace.contain import is_within
    from ..workspace.restore import conflict, restore
    from ..workspace.snapshot import default_root

    project = default_root(repo)
    if not is_within(project, root):  # the root comes from an event: never outside
        raise InvalidInput(f"the restore being undone wrote into {root}, outside the project "
                           f"{project}: undo moves no files there (`ctx restore "
                           f"{target[:12]} --root DIR` does)")
    plan = restore(repo, target, root=root, dry_run=dry_run, recorded_as=current,
                   label=f"undo of a restore ({target[:12]})")
    if dry_run and plan.conflicts:
        raise conflict(plan, "undo", "then `ctx undo` again; nothing was undone")
    return plan


def restore(repo: Repository, text: str) -> dict[str, Any]:
    target = operations.resolve(repo, text)
    new, diff = operations.restore(repo, target.id, command=repo.command)
    return {"operation": new, "restored_to": target.id,
            "changes": [{"ref": r, "old": now, "new": value}
                        for r, (now, value) in diff.items()]}


__all__ = ["op_dict", "op_log", "op_show", "restore", "undo"]
