"""Workspace snapshots: the user's files as git trees in `.ctx/workspace.git`, linked from
snapshot events so they travel and stay alive like any other object (docs/format.md
"Workspace snapshots"). pygit2 is imported only when a snapshot is taken or read."""

from __future__ import annotations

from ..lazyattrs import lazy_attributes

_LAZY = {
    "take_snapshot": ".snapshot", "SnapshotResult": ".snapshot", "SNAPSHOT_TYPE": ".snapshot",
    "default_root": ".snapshot", "read_workspace": ".stored",
    "git_objects": ".closure", "hydrate": ".closure", "snapshot_at": ".closure",
    "is_snapshot": ".closure", "workspace_of": ".closure", "listed_objects": ".closure",
    "read_git_object": ".closure",
    "restore": ".restore", "RestorePlan": ".restore",
    "diff_files": ".filediff", "FilesDiff": ".filediff",
    "auto_snapshot_enabled": ".auto", "after_tool_result": ".auto",
    "before_compaction": ".auto", "snapshot_for_hook": ".auto",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)
__all__ = sorted(_LAZY)
