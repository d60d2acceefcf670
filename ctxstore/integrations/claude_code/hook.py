"""`ctx hook claude-code`: one Claude Code hook call, the transcript imported from where the
previous call stopped.

Claude Code gives the hook `{session_id, transcript_path, cwd, hook_event_name, ...}` on
stdin. The transcript's new complete lines (from the byte offset the previous call reached)
go through importers.live, the same mapping as `ctx import`, so the cost is that of the new
lines, whatever the transcript's length. Before reading on, the call checks the transcript
still starts with what was imported (its size, and a hash of the first and of the last 4 KiB
before the offset); a transcript rewritten in place is imported again from its first line
(`ctx import` semantics: changed branches move, their old tips stay in the reflog).

A hook must never block or fail the agent: `run_hook` never raises; a problem is one line in
`.ctx/hooks.log` (with its traceback) and the exit status is 0 all the same.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

from ...errors import CtxError
from ...importers.live import LiveImporter, capture
from ...repo import Repository

#: the hook's own log: at the top of `.ctx`, where no ref or reflog reader looks (it once
#: lived in logs/, where fsck, gc and `reflog expire` read it as a reflog)
LOG = Path("hooks.log")
#: tools after which the workspace may have changed (the snapshot hook point)
FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})


def after_file_tool(repo: Repository, data: dict, session: str) -> str:
    """The workspace-snapshot hook point: after a tool that may write files, if the store's
    config asks for it (`"hook_snapshots": true` in .ctx/config.json, or CTX_HOOK_SNAPSHOTS=1
    in Claude Code's environment), snapshot the project (the hook input's cwd) onto the
    session's `workspace` branch (ctxstore.workspace.snapshot_for_hook says why there).
    Returns the line to log ("" for nothing)."""
    asked = repo.config.get("hook_snapshots") is True or \
        os.environ.get("CTX_HOOK_SNAPSHOTS", "") in ("1", "true", "yes")
    if data.get("tool_name") not in FILE_TOOLS or not asked:
        return ""
    from ...workspace import snapshot_for_hook

    return snapshot_for_hook(repo, Path(data.get("cwd") or "."), session=session)


def log(ctx_dir: Path | None, line: str) -> None:
    """Append one line to .ctx/hooks.log (stderr when there is no store)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if ctx_dir is None:
        os.write(2, f"ctx hook: {line}\n".encode())
        return
    (ctx_dir / LOG).parent.mkdir(parents=True, exist_ok=True)
    with open(ctx_dir / LOG, "a", encoding="utf-8") as fh:
        fh.write(f"{stamp} {line}\n")


def run_hook(raw: str, store: str | None = None) -> dict[str, Any]:
    """One hook call from its stdin text. Never raises (see the module docstring)."""
    ctx_dir = None
    try:
        data = json.loads(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            raise ValueError("hook input is not a JSON object")
        repo = Repository.discover(store, cwd=data.get("cwd") or None)
        ctx_dir = repo.path
        out: dict[str, Any] = {"event": data.get("hook_event_name", ""), "captured": []}
        live = LiveImporter(repo)
        try:
            for key in ("transcript_path", "agent_transcript_path"):
                tp = data.get(key)
                if not isinstance(tp, str) or not tp:
                    continue
                if Path(tp).expanduser().exists():
                    out["captured"].append(capture(live, Path(tp).expanduser()))
                else:
                    log(ctx_dir, f"{tp}: {key} names no file; nothing imported")
            if out["captured"] and data.get("hook_event_name") == "PostToolUse":
                out["snapshot"] = after_file_tool(repo, data,
                                                  out["captured"][0].get("session", ""))
        finally:
            live.close()
            repo.close()
        for c in out["captured"]:
            for p in c.get("problems", []):
                log(ctx_dir, f"{c['transcript']}: {p}")
        if out.get("snapshot"):
            log(ctx_dir, out["snapshot"])
        return out
    except Exception as exc:  # noqa: BLE001 - a hook must not fail the agent: logged, exit 0
        if ctx_dir is None:
            ctx_dir = _store_dir(store)
        log(ctx_dir, f"error: {type(exc).__name__}: {exc}\n" + traceback.format_exc())
        return {"error": f"{type(exc).__name__}: {exc}"}


def _store_dir(store: str | None) -> Path | None:
    """Where to log when the hook input named no usable store: --store, CTX_DIR or the cwd's."""
    try:
        repo = Repository.discover(store)
    except CtxError:
        return None
    repo.close()
    return repo.path
