"""The operation log for the CLI: list, show, undo, restore (ctxstore/repo/operations.py)."""

from __future__ import annotations

from typing import Any

from ..repo import Repository, operations


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
    new, undone = operations.undo(repo, command=repo.command)
    return {"operation": new, "undone": op_dict(undone),
            "changes": [{"ref": r, "old": n, "new": o} for r, o, n in reversed(undone.op.changes)]}


def restore(repo: Repository, text: str) -> dict[str, Any]:
    target = operations.resolve(repo, text)
    new, diff = operations.restore(repo, target.id, command=repo.command)
    return {"operation": new, "restored_to": target.id,
            "changes": [{"ref": r, "old": now, "new": value}
                        for r, (now, value) in diff.items()]}


__all__ = ["op_dict", "op_log", "op_show", "restore", "undo"]
