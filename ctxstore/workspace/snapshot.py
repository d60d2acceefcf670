"""Taking a workspace snapshot: stage the root, store what changed, append the event.

A snapshot is captured (files staged into workspace.git, new git objects copied into the
object store as content of a `workspace` object) and then recorded (a snapshot event appended
through the repository transaction) — two steps, so a restore can record the tree before and
after itself in one transaction. docs/format.md "Workspace snapshots" is the specification.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..chunking import ChunkParams, put_large
from ..errors import CorruptObject, ObjectNotFound
from . import gitdb
from .stored import ctx_dir_of, read_workspace  # also for this module's importers
from .trees import delta

SNAPSHOT_TYPE = "WorkspaceSnapshot"
#: A chain of workspace objects is restarted (base None) once the base is this deep.
MAX_DEPTH = 64


def default_root(repo) -> str:
    """The directory a snapshot records when none is named: the one holding `.ctx`."""
    return str(ctx_dir_of(repo).resolve().parent)


def _hint_path(ctx_dir: Path, root: str) -> Path:
    return gitdb.gitdir_of(ctx_dir) / "ctx-roots" / gitdb.root_key(root)


def newest_of_root(repo, root: str) -> tuple[str | None, dict[str, Any] | None]:
    """(id, value) of the workspace object of the newest snapshot of ROOT taken here, if still
    in the store (the hint is derived: a missing or stale one only means no base)."""
    path = _hint_path(ctx_dir_of(repo), root)
    try:
        wid = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None, None
    try:
        return wid, read_workspace(repo, wid)
    except (ObjectNotFound, CorruptObject):
        return None, None


def remember(repo, root: str, wid: str) -> None:
    path = _hint_path(ctx_dir_of(repo), root)
    path.parent.mkdir(exist_ok=True)
    gitdb.replace_derived(path, (wid + "\n").encode("ascii"))


@dataclass
class Capture:
    """A staged tree, stored as a workspace object, not yet named by any event."""

    root: str
    tree: str
    workspace: str
    base: str | None
    base_tree: str | None
    files: int
    added: int
    modified: int
    deleted: int
    git: Any = None

    @property
    def unchanged(self) -> bool:
        return self.tree == self.base_tree

    def payload(self, reason: str) -> dict[str, Any]:
        return {"workspace": self.workspace, "tree": self.tree, "root": self.root,
                "reason": reason, "files": self.files, "added": self.added,
                "modified": self.modified, "deleted": self.deleted}


def store_tree(repo, git: Any, tree: str, base: str | None,
               base_value: dict[str, Any] | None) -> tuple[str, Any, int]:
    """Put the workspace object for TREE over BASE (a workspace id and its value, or None)
    with every git object the base's chain lacks; returns (workspace id, delta, files)."""
    if base_value is not None and int(base_value.get("depth", 1)) >= MAX_DEPTH:
        base, base_value = None, None
    d = delta(git, tree, base_value["tree"] if base_value else None)
    odb = git.odb
    params = ChunkParams.from_config(repo.config)  # large files are chunked like artifacts
    objects = []
    for oid in d.objects:
        kind, data = odb.read(oid)
        objects.append([oid, put_large(repo.objects, gitdb.loose_bytes(kind, data), params)])
    objects.sort()
    files = (int(base_value.get("files", 0)) if base_value else 0) + d.added - d.deleted
    value = {"tree": tree, "base": base, "depth": int(base_value["depth"]) + 1 if base_value else 1,
             "files": files, "objects": objects}
    return repo.objects.put("workspace", value), d, files


def capture(repo, root: str) -> Capture:
    """Stage ROOT and store its tree. The caller holds gitdb.snapshot_lock."""
    ctx_dir = ctx_dir_of(repo)
    git, tree = gitdb.stage(ctx_dir, root)
    base, base_value = newest_of_root(repo, root)
    base_tree = base_value["tree"] if base_value else None
    if base_tree is not None and base_tree not in git.odb:
        from .closure import hydrate  # the delta walk reads the base tree from workspace.git

        hydrate(repo, base, git)
    if base_value is not None and tree == base_tree:
        return Capture(root, tree, base, None, base_tree, int(base_value.get("files", 0)),
                       0, 0, 0, git)
    wid, d, files = store_tree(repo, git, tree, base, base_value)
    return Capture(root, tree, wid, base, base_tree, files, d.added, d.modified, d.deleted, git)


@dataclass(frozen=True)
class SnapshotResult:
    event: str | None  # None: nothing recorded (unchanged and only_if_changed)
    workspace: str
    tree: str
    root: str
    files: int
    added: int
    modified: int
    deleted: int
    base_event: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "workspace": self.workspace, "tree": self.tree,
                "root": self.root, "files": self.files, "added": self.added,
                "modified": self.modified, "deleted": self.deleted}


def take_snapshot(repo, root: str | None = None, *, ref: str | None = None,
                  reason: str = "snapshot", only_if_changed: bool = False,
                  command: str | None = None) -> SnapshotResult:
    """Snapshot ROOT (default: the directory holding `.ctx`) onto branch REF (default:
    HEAD's). With only_if_changed, a tree equal to the root's newest snapshot records nothing."""
    root = gitdb.normalize_root(root or default_root(repo))
    with gitdb.snapshot_lock(ctx_dir_of(repo)):
        cap = capture(repo, root)
        if only_if_changed and cap.unchanged:
            return SnapshotResult(None, cap.workspace, cap.tree, root, cap.files, 0, 0, 0)
        with repo.transaction(ref, message=f"snapshot: {reason}",
                              command=command or "api: snapshot_workspace") as tx:
            eid = tx.append(SNAPSHOT_TYPE, "system", cap.payload(reason))
        remember(repo, root, cap.workspace)
    return SnapshotResult(eid, cap.workspace, cap.tree, root, cap.files, cap.added,
                          cap.modified, cap.deleted)
