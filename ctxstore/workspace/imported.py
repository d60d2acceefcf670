"""Harness snapshots mapped onto workspace snapshots at import, where their content exists.

- Claude Code writes `file-history-snapshot` records: `snapshot.trackedFileBackups` maps each
  file Claude edited to `{backupFileName, version, backupTime}`; the backup (the file as it
  was before that turn) is `~/.claude/file-history/<session id>/<backupFileName>` (under
  `$CLAUDE_CONFIG_DIR` when set), read only from inside that folder; a null backupFileName
  means the file did not exist yet.
  Only edited files are tracked, so the snapshot is *partial*: restore touches only them.
- Codex writes `ghost_snapshot` response items: `ghost_commit.id` names a commit Codex made,
  unreferenced, in the user's git repository (the session's cwd), whose tree is the working
  tree at that point.

The git objects are built or copied here without workspace.git (an import may run against an
in-memory overlay): readers bring them into workspace.git when they need them. Where the
content is not on this machine the event says so (`workspace_missing`) and the import report
carries a note: never silent. docs/format.md "Workspace snapshots".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..chunking import put_artifact_content
from . import contain, gitdb
from .trees import delta

_MODE_TEXT = {gitdb.MODE_FILE: b"100644", gitdb.MODE_EXEC: b"100755",
              gitdb.MODE_LINK: b"120000", gitdb.MODE_TREE: b"40000"}


def _put_workspace(repo, tree: str, loose: dict[str, bytes], files: int,
                   base: str | None = None, depth: int = 1) -> str:
    objects = []
    for oid in sorted(loose):
        content, _ = put_artifact_content(repo, loose[oid])
        objects.append([oid, content])
    return repo.objects.put("workspace", {"tree": tree, "base": base, "depth": depth,
                                        "files": files, "objects": objects})


def tree_of_files(files: dict[str, tuple[bytes, int]]) -> tuple[str, dict[str, bytes]]:
    """Git objects for FILES ({relative path: (bytes, mode)}): (root tree id, {id: loose})."""
    loose: dict[str, bytes] = {}
    root: dict[str, Any] = {}
    for path, (data, mode) in files.items():
        node = root
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        raw = gitdb.loose_bytes(gitdb.BLOB, data)
        oid = gitdb.git_id(raw)
        loose[oid] = raw
        node[parts[-1]] = (oid, mode)

    def write(node: dict[str, Any]) -> str:
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append((name + "/", name, write(value), gitdb.MODE_TREE))
            else:
                entries.append((name, name, value[0], value[1]))
        body = b"".join(_MODE_TEXT[mode] + b" " + name.encode("utf-8") + b"\0" + bytes.fromhex(oid)
                        for _, name, oid, mode in sorted(entries, key=lambda e: e[0].encode()))
        raw = gitdb.loose_bytes(gitdb.TREE, body)
        oid = gitdb.git_id(raw)
        loose[oid] = raw
        return oid

    return write(root), loose


def _note(b, text: str) -> None:
    notes = b.ctx.report.notes
    if text not in notes:
        notes.append(text)


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) if env else Path.home() / ".claude"


def claude_file_history(b, rec: dict, session_id: str, cwd: str) -> dict[str, Any]:
    """Payload keys for a Claude Code file-history-snapshot record (empty: nothing tracked).

    A backup is read only from inside the harness's own folder for the session
    (`file-history/<session id>/`), never through a symlink (contain.read_inside): a
    `backupFileName` that is absolute or has a `..` (or a session id that does) is a warning
    naming the line, and nothing is read (docs/workspace.md "Containment")."""
    snap = rec.get("snapshot") if isinstance(rec.get("snapshot"), dict) else {}
    tracked = snap.get("trackedFileBackups")
    if not isinstance(tracked, dict) or not tracked:
        return {}
    line = getattr(b, "_source", {}).get("line", 0)
    history = claude_config_dir() / "file-history"
    where = history / str(session_id)
    files: dict[str, tuple[bytes, int]] = {}
    absent: list[str] = []
    missing: list[str] = []
    outside: list[str] = []
    refused: list[str] = []
    for path, info in sorted(tracked.items()):
        rel = _relative(path, cwd)
        if rel is None or contain.name_problem(rel) is not None:
            outside.append(path)
            continue
        name = info.get("backupFileName") if isinstance(info, dict) else None
        if name is None:
            absent.append(rel)
            continue
        problem = contain.name_problem(str(name)) or \
            contain.name_problem(str(session_id)) or \
            ("a path, not a file name" if "/" in str(session_id) else None)
        if problem is not None:
            b.ctx.warn(b.file, line, f"file-history-snapshot: backupFileName {name!r} of {path} "
                                     f"is not a file inside {where} ({problem}): nothing read")
            refused.append(rel)
            continue
        try:
            files[rel] = (contain.read_inside(where, str(name)), gitdb.MODE_FILE)
        except (OSError, contain.BadPath):
            missing.append(rel)
    if outside:
        _note(b, f"{b.file}: file-history snapshots name files outside the session's cwd "
                 f"{cwd or '(unknown)'} ({outside[0]}, ...): left out of the workspace snapshot")
    if refused:
        return {"workspace_missing": f"backup names refused (not inside {where}): "
                                     f"{', '.join(refused)}"}
    if missing:
        _note(b, f"{b.file}: Claude Code file backups not found under {where} (e.g. {missing[0]}):"
                 f" those file-history snapshots are recorded without content "
                 f"(payload.workspace_missing)")
        return {"workspace_missing": f"backups not found under {where}: {', '.join(missing)}"}
    if not files and not absent:
        return {"workspace_missing": "no tracked file inside the session's cwd"}
    tree, loose = tree_of_files(files)
    wid = _put_workspace(b.repo, tree, loose, len(files))
    return {"workspace": wid, "tree": tree, "root": cwd, "partial": True, "absent": absent,
            "files": len(files)}


def _relative(path: str, cwd: str) -> str | None:
    p = Path(path)
    if not p.is_absolute():
        rel = os.path.normpath(path)
    elif cwd and (p == Path(cwd) or Path(cwd) in p.parents):
        rel = str(p.relative_to(cwd))
    else:
        return None
    return None if rel.startswith("..") or rel in (".", "") else rel.replace(os.sep, "/")


class GhostCommits:
    """Codex ghost commits of one session, chained (each snapshot's base is the previous one),
    read from the git repository at the session's cwd."""

    def __init__(self, b, cwd: str) -> None:
        self.b = b
        self.cwd = cwd
        self.git: Any = None
        self.opened = False
        self.base: tuple[str, str, int, int] | None = None  # (workspace, tree, depth, files)

    def _open(self) -> Any:
        if not self.opened:
            self.opened = True
            import pygit2

            try:
                path = pygit2.discover_repository(self.cwd) if self.cwd else None
                self.git = pygit2.Repository(path) if path else None
            except pygit2.GitError:
                self.git = None
        return self.git

    def payload(self, item: dict) -> dict[str, Any]:
        ghost = item.get("ghost_commit") if isinstance(item.get("ghost_commit"), dict) else {}
        commit_id = ghost.get("id")
        if not isinstance(commit_id, str) or len(commit_id) != 40:
            return {"workspace_missing": "the record names no commit id"}
        git = self._open()
        if git is None:
            _note(self.b, f"{self.b.file}: no git repository at the session's cwd "
                          f"{self.cwd or '(unknown)'}: ghost snapshots recorded without content "
                          f"(payload.workspace_missing)")
            return {"workspace_missing": f"no git repository at {self.cwd or '(unknown cwd)'}"}
        try:
            commit = git[commit_id]
            tree = str(commit.tree_id)
        except (KeyError, ValueError, AttributeError):
            _note(self.b, f"{self.b.file}: ghost commit {commit_id[:12]} (and maybe more) is not "
                          f"in {git.path}: recorded without content (payload.workspace_missing)")
            return {"workspace_missing": f"commit {commit_id} not in {git.path}"}
        base = self.base if self.base and self.base[2] < 64 else None
        d = delta(git, tree, base[1] if base else None)
        loose = {}
        for oid in d.objects:
            kind, data = git.odb.read(oid)
            loose[oid] = gitdb.loose_bytes(kind, data)
        files = (base[3] if base else 0) + d.added - d.deleted
        depth = base[2] + 1 if base else 1
        wid = _put_workspace(self.b.repo, tree, loose, files, base[0] if base else None, depth)
        self.base = (wid, tree, depth, files)
        root = str(Path(git.workdir).resolve()) if git.workdir else self.cwd
        return {"workspace": wid, "tree": tree, "root": root, "files": files,
                "added": d.added, "modified": d.modified, "deleted": d.deleted,
                "ghost_commit": commit_id}
