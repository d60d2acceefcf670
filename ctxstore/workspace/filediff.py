"""File changes between two snapshots (`ctx diff --files A B`): git's own tree diff with
rename detection, on trees brought into workspace.git from the store if needed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .closure import hydrate, snapshot_at, workspace_of
from .snapshot import read_workspace

#: pygit2 delta status characters as git prints them (--name-status).
_STATUS = {1: "A", 2: "D", 3: "M", 4: "R", 5: "C", 8: "T"}


@dataclass(frozen=True)
class FileChange:
    status: str  # A added, D deleted, M modified, R renamed, T type or mode changed
    path: str
    old_path: str = ""
    additions: int = 0
    deletions: int = 0
    binary: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "path": self.path,
                               "additions": self.additions, "deletions": self.deletions,
                               "binary": self.binary}
        if self.old_path:
            out["old_path"] = self.old_path
        return out


@dataclass(frozen=True)
class FilesDiff:
    a_event: str
    b_event: str
    a_tree: str
    b_tree: str
    changes: tuple[FileChange, ...]
    patch: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"a": {"snapshot": self.a_event, "tree": self.a_tree},
                "b": {"snapshot": self.b_event, "tree": self.b_tree},
                "changes": [c.to_dict() for c in self.changes]}


def diff_files(repo, a_event: str, b_event: str, *, patch: bool = False) -> FilesDiff:
    """The file changes from the newest snapshot at A to the newest snapshot at B."""
    a_snap, a_ev = snapshot_at(repo, a_event)
    b_snap, b_ev = snapshot_at(repo, b_event)
    a_ws, b_ws = workspace_of(a_ev), workspace_of(b_ev)
    git = hydrate(repo, a_ws)
    hydrate(repo, b_ws, git)
    a_tree, b_tree = read_workspace(repo, a_ws)["tree"], read_workspace(repo, b_ws)["tree"]
    d = git.diff(git[a_tree], git[b_tree])
    d.find_similar()
    changes = []
    for p in d:
        delta = p.delta
        status = _STATUS.get(delta.status, "M")
        binary = bool(delta.is_binary)
        _, adds, dels = p.line_stats
        changes.append(FileChange(status, delta.new_file.path if status != "D" else
                                  delta.old_file.path,
                                  delta.old_file.path if status in ("R", "C") else "",
                                  adds, dels, binary))
    return FilesDiff(a_snap, b_snap, a_tree, b_tree, tuple(changes), d.patch or "" if patch else "")
