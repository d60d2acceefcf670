"""Automatic snapshots: after tool calls that may write files, and before each compaction.

Turned on per session (`config={"auto_snapshot": True}` when the session is created) or for
the whole store (`"auto_snapshot": true` in `.ctx/config.json`; the session's setting wins).
Which calls may write files is the tool registry's knowledge (ctxstore.state.tools): a call
whose effects include modifying a file or running a command is followed by a snapshot; a call
the registry does not know is too (it might write); reads, searches and plan updates are not.
An automatic snapshot records nothing when the tree equals the root's newest snapshot, so the
cost of a call that changed nothing is one pass over the stat cache.
"""

from __future__ import annotations

import os
from typing import Any

from ..state.tools import call_effects, tool_spec
from .snapshot import SnapshotResult, default_root, take_snapshot

#: Effect kinds after which the files may have changed.
WRITING_EFFECTS = frozenset({"modify", "exec"})
#: How far back from the tip a result looks for its call.
CALL_LOOKBACK = 500


def auto_snapshot_enabled(repo, session_id: str) -> bool:
    if repo.path is None:
        return False
    value = repo.session(session_id).config.get("auto_snapshot")
    if value is None:
        value = repo.config.get("auto_snapshot", False)
    return bool(value)


def session_root(repo, session_id: str) -> str:
    """The directory automatic snapshots record: the session's repo root or working directory
    when it exists here and lies inside the project (the directory holding `.ctx`), else the
    project: a session that came from elsewhere never makes ctx read a directory outside it
    (docs/workspace.md "Containment")."""
    from .contain import is_within

    session = repo.session(session_id)
    project = default_root(repo)
    for candidate in (session.repo_root, session.cwd):
        if candidate and os.path.isdir(candidate) and is_within(project, candidate):
            return candidate
    return project


def may_write(name: str, args: Any, harness: str = "") -> bool:
    """Might this call have written files, by the tool registry?"""
    if tool_spec(name, harness) is None:
        return True
    return any(e.kind in WRITING_EFFECTS for e in call_effects(name, args, harness))


def _find_call(cm, tool_call_id: str) -> tuple[str, Any]:
    for n, (_, ev) in enumerate(cm.repo.graph.first_parents(cm.tip)):
        if n >= CALL_LOOKBACK:
            break
        if ev.type == "ToolCallRequested" and ev.payload.get("tool_call_id") == tool_call_id:
            return str(ev.payload.get("name", "")), ev.payload.get("args", {})
    return "", None


def after_tool_result(cm, tool_call_id: str, name: str = "") -> SnapshotResult | None:
    """The snapshot a finished call calls for, if the session takes them and the call may
    have written files; None otherwise."""
    if not auto_snapshot_enabled(cm.repo, cm.session):
        return None
    found, args = _find_call(cm, tool_call_id)
    name = found or name
    if name and not may_write(name, args if args is not None else {}):
        return None
    return take_snapshot(cm.repo, session_root(cm.repo, cm.session), ref=cm.ref,
                         reason=f"after {name or 'tool call'} {tool_call_id}".strip(),
                         only_if_changed=True, command="api: auto snapshot")


def before_compaction(cm) -> SnapshotResult | None:
    if not auto_snapshot_enabled(cm.repo, cm.session):
        return None
    return take_snapshot(cm.repo, session_root(cm.repo, cm.session), ref=cm.ref,
                         reason="before compaction", only_if_changed=True,
                         command="api: auto snapshot")


#: The branch of a live-captured session that holds the hook's snapshots.
HOOK_BRANCH = "workspace"


def snapshot_for_hook(repo, root, *, session: str) -> str:
    """The Claude Code hook's snapshot after a file-writing tool: ROOT onto the session's
    `workspace` branch. Returns one line for the hook log ("" when the tree is unchanged).

    Why a branch of its own: main of a live-captured session is exactly what `ctx import`
    would write for the transcript (the live importer re-imports a session whose tips moved
    under it), so the snapshot cannot be appended there. Each snapshot's first parent is the
    previous snapshot (`workspace~N` is N snapshots back, so `ctx restore workspace~1` works
    and the branch only moves forward) and its second parent main's tip when it was taken
    (which point of the conversation the files belong to)."""
    from ..refs import branch_ref
    from . import gitdb
    from .snapshot import SNAPSHOT_TYPE, capture, ctx_dir_of, remember

    if not session:
        return ""
    root = gitdb.normalize_root(root)
    main_ref, ws_ref = branch_ref(session, "main"), branch_ref(session, HOOK_BRANCH)
    with gitdb.snapshot_lock(ctx_dir_of(repo)):
        cap = capture(repo, root)
        if cap.unchanged:
            return ""
        with repo.transaction(ws_ref, message="snapshot: after a file-writing tool",
                              command="ctx hook claude-code") as tx:
            main_tip = tx.read(main_ref)
            prev = tx.read(ws_ref)
            payload = cap.payload("after a file-writing tool")
            if prev is None:
                if main_tip is None:
                    return ""  # nothing captured yet to attach the files to
                eid = tx.event(SNAPSHOT_TYPE, "system", payload, (main_tip,), session=session)
                tx.create_ref(ws_ref, eid)
            else:
                extra = () if main_tip is None or main_tip in \
                    repo.graph.event(prev).parents else (main_tip,)
                eid = tx.append(SNAPSHOT_TYPE, "system", payload, extra_parents=extra,
                                ref=ws_ref)
        remember(repo, root, cap.workspace)
    return (f"snapshot {eid[:12]} of {root} on {HOOK_BRANCH}: "
            f"+{cap.added} ~{cap.modified} -{cap.deleted} ({cap.files} files)")
