"""`ctx hook claude-code`: one Claude Code hook call, the transcript imported from where the
previous call stopped.

Claude Code gives the hook `{session_id, transcript_path, cwd, hook_event_name, ...}` on
stdin. The transcript's new complete lines (from the byte offset the previous call reached)
go through importers.live, the same mapping as `ctx import`, so the cost is that of the new
lines, whatever the transcript's length. Before reading on, the call checks the transcript
still starts with what was imported (its size, and a hash of the first and of the last 4 KiB
before the offset); a transcript rewritten in place is imported again from its first line
(`ctx import` semantics: changed branches move, their old tips stay in the reflog).

The hooks run async (Claude Code starts each firing as its own background process, in no
order and without de-duplication): captures of one store take turns under
importers.live.capture_lock, each reading from the offset the previous one reached, so any
number of firings in any order import each line once. A subagent transcript whose spawning
call has not reached the parent's transcript yet waits for it (live.capture's `defer`).
A call with nothing new never gets here: fastpath.py answers it from a stat and seen.py's
state file.

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
from ...importers.live import LiveImporter, capture, capture_lock, flush_deferred
from ...repo import Repository
from . import provisional, seen
from .fastpath import FILE_TOOLS, TRANSCRIPT_KEYS, target

#: the hook's own log: at the top of `.ctx`, where no ref or reflog reader looks (it once
#: lived in logs/, where fsck, gc and `reflog expire` read it as a reflog)
LOG = Path("hooks.log")
#: SessionStart's catch-up of the history folder stops after this long (it goes on at the
#: next SessionStart, from where it stopped: finished files are unchanged then)
CATCH_UP_SECONDS = 5.0


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
            with capture_lock(repo):
                _capture_all(live, data, out, ctx_dir)
        finally:
            live.close()
            repo.close()
        for c in _flat(out["captured"] + out.get("caught_up", [])):
            for p in c.get("problems", []):
                log(ctx_dir, f"{c['transcript']}: {p}")
        for line in filter(None, (out.get("snapshot"), out.get("catch_up_note"))):
            log(ctx_dir, line)
        return out
    except Exception as exc:  # noqa: BLE001 - a hook must not fail the agent: logged, exit 0
        if ctx_dir is None:
            ctx_dir = _store_dir(store)
        log(ctx_dir, f"error: {type(exc).__name__}: {exc}\n" + traceback.format_exc())
        return {"error": f"{type(exc).__name__}: {exc}"}


def _capture_all(live: LiveImporter, data: dict, out: dict, ctx_dir: Path) -> None:
    """The hook's work, under capture_lock: the transcripts it names (a subagent's waits for
    its spawning call), SessionEnd's flush of subagents still waiting, the snapshot after a
    file tool, SessionStart's catch-up; the state file of each transcript captured."""
    event = data.get("hook_event_name")
    for key in TRANSCRIPT_KEYS:
        tp = data.get(key)
        if not isinstance(tp, str) or not tp:
            continue
        if Path(tp).expanduser().exists():
            out["captured"].append(capture(live, Path(tp).expanduser(), defer=True))
        else:
            log(ctx_dir, f"{tp}: {key} names no file; nothing imported")
    if event == "SessionEnd":
        for c in list(out["captured"]):
            if c.get("source"):
                out["captured"] += flush_deferred(live, c["source"])
    _record_seen(ctx_dir, out["captured"])
    out["provisional"] = _payload_texts(live.repo, data, out["captured"])
    if out["captured"] and event == "PostToolUse":
        out["snapshot"] = after_file_tool(live.repo, data, out["captured"][0].get("session", ""))
    if event == "SessionStart" and isinstance(data.get("transcript_path"), str):
        out["caught_up"], out["catch_up_note"] = catch_up(
            live, Path(data["transcript_path"]).expanduser().parent, ctx_dir)


def _payload_texts(repo: Repository, data: dict, captured: list[dict]) -> list[str]:
    """provisional.py: reconcile live-pending branches with the lines just imported, then
    keep what the payload carries that the transcript does not hold yet. Returns the ids of
    the provisional events written."""
    for c in _flat(captured):
        if c.get("lines") and c.get("session"):
            provisional.reconcile(repo, c["session"], Path(c["transcript"]))
    where = target(data)
    mine = [c for c in captured if where and c["transcript"] == str(Path(where).expanduser()
                                                                      .resolve())]
    if not mine or mine[0].get("deferred") or not provisional.carried(data):
        return []
    return provisional.keep(repo, mine[0]["session"], Path(mine[0]["transcript"]), data)


def _record_seen(ctx_dir: Path, captured: list[dict]) -> None:
    """The fast path's state file of each transcript captured (not of one still waiting)."""
    for c in _flat(captured):
        if not c.get("deferred"):
            seen.record(str(ctx_dir), c["transcript"], c["seen"])


def _flat(captured: list[dict]) -> list[dict]:
    """Each capture and the subagent captures it brought (capture's "subagents")."""
    return [x for c in captured for x in (c, *_flat(c.get("subagents", [])))]


def catch_up(live: LiveImporter, folder: Path, ctx_dir: Path,
             budget: float = CATCH_UP_SECONDS) -> tuple[list[dict], str]:
    """SessionStart: import what the Claude Code history folder of this project (the one
    holding the session's transcript, `~/.claude/projects/<project>/`) gained while no hook
    ran, before Claude Code's cleanup (30 days by default) deletes it. Only a folder inside
    a `projects` folder is swept (a transcript elsewhere is no history folder). Files whose
    stat is what the hook last saw cost a stat; the others are captured from the offset
    they reached (new lines only). Oldest first (nearest to the cleanup), sessions before
    their subagents (as `ctx import` links them); stops after `budget` seconds and says
    so — the next SessionStart goes on from there."""
    if folder.parent.name != "projects" or not folder.is_dir():
        return [], ""
    inside = folder.resolve()
    files = [f for f in (*folder.glob("*.jsonl"), *folder.glob("*/subagents/agent-*.jsonl"))
             if _stays_in(f, inside)]
    stamped = [(f, _mtime(f)) for f in files if not seen.unchanged(str(ctx_dir), str(f.resolve()))]
    todo = [f for f, m in sorted(((f, m) for f, m in stamped if m is not None),
                                 key=lambda fm: (fm[0].name.startswith("agent-"), fm[1],
                                                 str(fm[0])))]
    deadline = time.monotonic() + budget
    done: list[dict] = []
    for f in todo:  # one file at least per SessionStart, however small the budget
        # no waiting for a spawning call here: every session of the folder was captured
        # before its subagents, as `ctx import` of the folder does it
        done.append(capture(live, f))
        _record_seen(ctx_dir, done[-1:])
        if time.monotonic() > deadline and len(done) < len(todo):
            return done, (f"catch-up of {folder}: stopped after {budget:g} s with "
                          f"{len(todo) - len(done)} of {len(todo)} files left; the next "
                          f"SessionStart goes on")
    return done, ""


def _stays_in(path: Path, folder: Path) -> bool:
    """A file the sweep may read: not a link, and under FOLDER once resolved (a linked
    subagents folder leads elsewhere). The folder is named by the hook's payload: a link in
    it is never followed out."""
    try:
        return not path.is_symlink() and path.resolve().is_relative_to(folder)
    except OSError:
        return False


def _mtime(path: Path) -> int | None:
    """None for a file Claude Code's cleanup removed since the folder was listed."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def _store_dir(store: str | None) -> Path | None:
    """Where to log when the hook input named no usable store: --store, CTX_DIR or the cwd's."""
    try:
        repo = Repository.discover(store)
    except CtxError:
        return None
    repo.close()
    return repo.path
