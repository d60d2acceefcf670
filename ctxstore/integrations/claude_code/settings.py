"""`ctx hooks install/uninstall claude-code`: our entries in Claude Code's settings.json.

Claude Code reads hooks from `~/.claude/settings.json` (user; `$CLAUDE_CONFIG_DIR` when set)
and `<project>/.claude/settings.json` (project), as

    {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command",
                                                           "command": "...", "async": true}]}]}}

and from `<project>/.claude/settings.local.json` (this machine only, not committed). A
project file names no path of this machine (hook_command); doctor.py checks that the
command each file names runs.

Install adds one matcher group per event whose command is ours, leaving every other key,
event, group and hook as it was (installing twice changes nothing); uninstall removes exactly
the hooks whose command is ours, then any group or event that it left empty.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...userfiles import read_json_object, replace_user_file

#: The events the hook imports on: every point where the transcript has grown. They run
#: async (`"async": true`: Claude Code starts the hook in the background and goes on), so
#: the agent never waits for an import; hook.py says why concurrent firings are safe.
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SubagentStop",
          "SessionEnd")
#: Kept synchronous: Claude Code may exit right after SessionEnd, taking background hooks
#: with it, and gives it a short budget (about 1.5 s), within which the last lines and any
#: subagent still waiting for its spawning call are imported.
SYNC_EVENTS = frozenset({"SessionEnd"})
#: Only tool events take a matcher; "*" is every tool.
MATCHERS = {"PostToolUse": "*"}
MARK = "hook claude-code"  # what makes a command ours (see is_ours)
TIMEOUT = 30  # seconds Claude Code waits for a synchronous hook (not enforced on async ones)
#: Where each scope's settings live, under the project (user: see settings_path)
PROJECT_FILES = {"project": "settings.json", "local": "settings.local.json"}


def settings_path(scope: str, project: str | os.PathLike | None = None,
                  env: dict | None = None) -> Path:
    """user: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR); project: the file a team commits,
    <project>/.claude/settings.json; local: this machine's, .claude/settings.local.json."""
    env = os.environ if env is None else env
    if scope == "user":
        base = env.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"
    if scope in PROJECT_FILES:
        return Path(project or os.getcwd()) / ".claude" / PROJECT_FILES[scope]
    raise InvalidInput(f"unknown settings scope {scope!r}: use user, project or local")


def hook_command(store: str | None = None, snapshots: bool = False,
                 scope: str = "user") -> tuple[str, str]:
    """(the command Claude Code runs, a note for the user or "").

    user and local (this machine's files): this interpreter's ctx, so the hook works from
    any PATH (a venv's ctx is rarely on the PATH Claude Code's shell has). project (the file
    a team commits): no path of this machine — `ctx` from PATH, or `python3 -m ctxstore.cli`
    when this machine has no `ctx` on PATH (said in the note), and no --store. With
    `snapshots`, the command sets CTX_HOOK_SNAPSHOTS=1 (workspace snapshots after
    file-writing tools)."""
    note = ""
    refuse_shared_pin(scope, bool(store))
    if scope == "project":
        cmd = ["ctx"]
        if shutil.which("ctx") is None:
            cmd = ["python3", "-m", "ctxstore.cli"]
            note = ("`ctx` is not on this PATH, so the project settings run `python3 -m "
                    "ctxstore.cli`, which needs ctxstore importable by python3 on every "
                    "machine; put ctx on PATH and install again, or use --local for this "
                    "machine only (`ctx hooks doctor` checks)")
    else:
        cmd = [sys.executable, "-m", "ctxstore.cli"]
        if store:
            cmd += ["--store", os.path.abspath(store)]
    env = "CTX_HOOK_SNAPSHOTS=1 " if snapshots else ""
    return env + " ".join(shlex.quote(c) for c in cmd) + " " + MARK, note


def refuse_shared_pin(scope: str, pin: bool) -> None:
    if pin and scope == "project":
        raise InvalidInput("a project settings file is shared: it cannot name this machine's "
                           "store path (--pin-store is for --local and --user; the hook finds "
                           "the store from the session's directory)")


def hook_entry(event: str, command: str, snapshots: bool = False) -> dict[str, Any]:
    """Our hook as Claude Code reads it. With snapshots, PostToolUse stays synchronous: the
    snapshot is of the files as that tool left them, before the next tool runs."""
    hook: dict[str, Any] = {"type": "command", "command": command, "timeout": TIMEOUT}
    if event not in SYNC_EVENTS and not (snapshots and event == "PostToolUse"):
        hook["async"] = True
    return hook


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and \
        hook["command"].rstrip().endswith(MARK) and "ctx" in hook["command"]


def _read(path: Path) -> dict:
    value = read_json_object(path)
    hooks = value.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: \"hooks\" is not an object; left as it is")
    return value


def _write(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with replace_user_file(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def install(path: Path, command: str, snapshots: bool = False) -> dict[str, Any]:
    """Merge our hook into every event of EVENTS; returns {path, added: [events]}. An entry
    of ours that differs (another command, an older synchronous one) is replaced."""
    value = _read(path)
    hooks = value.setdefault("hooks", {})
    added = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} is not a list; left as it is")
        want = hook_entry(event, command, snapshots)
        mine = list(ours(groups))
        if mine == [want]:
            continue
        if mine:  # ours with another interpreter, store or mode: replace it
            _remove(groups)
        group: dict[str, Any] = {"hooks": [want]}
        if event in MATCHERS:
            group = {"matcher": MATCHERS[event], **group}
        groups.append(group)
        added.append(event)
    if added:
        _write(path, value)
    return {"path": str(path), "added": added, "command": command}


def ours(groups: Any) -> Iterator[dict]:
    """Our hook entries among an event's matcher groups."""
    for g in groups if isinstance(groups, list) else ():
        if isinstance(g, dict) and isinstance(g.get("hooks"), list):
            yield from (h for h in g["hooks"] if is_ours(h))


def installed(path: Path) -> dict[str, list[dict]]:
    """event -> our hook entries in the settings file at `path` ({} if none or no file)."""
    hooks = _read(path).get("hooks") or {}
    return {event: found for event, groups in hooks.items() if (found := list(ours(groups)))}


def _remove(groups: list) -> int:
    removed = 0
    for g in list(groups):
        if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
            continue
        keep = [h for h in g["hooks"] if not is_ours(h)]
        removed += len(g["hooks"]) - len(keep)
        if keep:
            g["hooks"] = keep
        elif len(keep) != len(g["hooks"]):
            groups.remove(g)
    return removed


def uninstall(path: Path) -> dict[str, Any]:
    """Remove our hooks (and only them); returns {path, removed: [events]}."""
    value = _read(path)
    hooks = value.get("hooks")
    removed = []
    if isinstance(hooks, dict):
        for event, groups in list(hooks.items()):
            if isinstance(groups, list) and _remove(groups):
                removed.append(event)
                if not groups:
                    del hooks[event]
        if not hooks:
            del value["hooks"]
    if removed:
        _write(path, value)
    return {"path": str(path), "removed": removed}
