"""`ctx hooks install/uninstall claude-code`: our entries in Claude Code's settings.json.

Claude Code reads hooks from `~/.claude/settings.json` (user; `$CLAUDE_CONFIG_DIR` when set)
and `<project>/.claude/settings.json` (project), as

    {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command",
                                                           "command": "...", "timeout": 30}]}]}}

Install adds one matcher group per event whose command is ours, leaving every other key,
event, group and hook as it was (installing twice changes nothing); uninstall removes exactly
the hooks whose command is ours, then any group or event that it left empty.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...userfiles import open_input, replace_user_file

#: The events the hook imports on: every point where the transcript has grown.
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SubagentStop")
#: Only tool events take a matcher; "*" is every tool.
MATCHERS = {"PostToolUse": "*"}
MARK = "hook claude-code"  # what makes a command ours (see is_ours)
TIMEOUT = 30  # seconds Claude Code waits; the hook's work is far below (docs/claude-code.md)


def settings_path(scope: str, project: str | os.PathLike | None = None,
                  env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    if scope == "user":
        base = env.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"
    if scope == "project":
        return Path(project or os.getcwd()) / ".claude" / "settings.json"
    raise InvalidInput(f"unknown settings scope {scope!r}: use user or project")


def hook_command(store: str | None = None, snapshots: bool = False) -> str:
    """The command Claude Code runs: this interpreter's ctx, so the hook works from any
    PATH (a venv's ctx is rarely on the PATH Claude Code's shell has). With `snapshots`,
    the command sets CTX_HOOK_SNAPSHOTS=1 (workspace snapshots after file-writing tools)."""
    cmd = [sys.executable, "-m", "ctxstore.cli"]
    if store:
        cmd += ["--store", os.path.abspath(store)]
    env = "CTX_HOOK_SNAPSHOTS=1 " if snapshots else ""
    return env + " ".join(shlex.quote(c) for c in cmd) + " " + MARK


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and \
        hook["command"].rstrip().endswith(MARK) and "ctx" in hook["command"]


def _read(path: Path) -> dict:
    if not path.exists():
        return {}
    with open_input(path, "r", encoding="utf-8") as fh:
        text = fh.read()
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); left as it is") \
            from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}:1: a JSON object was expected; left as it is")
    hooks = value.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: \"hooks\" is not an object; left as it is")
    return value


def _write(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with replace_user_file(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def install(path: Path, command: str) -> dict[str, Any]:
    """Merge our hook into every event of EVENTS; returns {path, added: [events]}."""
    value = _read(path)
    hooks = value.setdefault("hooks", {})
    added = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} is not a list; left as it is")
        mine = [h for g in groups if isinstance(g, dict) for h in g.get("hooks") or []
                if is_ours(h)]
        if any(h.get("command") == command for h in mine):
            continue
        if mine:  # ours with another interpreter or store: replace it
            _remove(groups)
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command,
                                            "timeout": TIMEOUT}]}
        if event in MATCHERS:
            group = {"matcher": MATCHERS[event], **group}
        groups.append(group)
        added.append(event)
    if added:
        _write(path, value)
    return {"path": str(path), "added": added, "command": command}


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
