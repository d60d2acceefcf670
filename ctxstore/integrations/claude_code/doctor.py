"""`ctx hooks doctor`: does the command each Claude Code settings file names actually run?

A hook that cannot start fails silently: Claude Code runs it in the background and nothing
reaches the user, so a moved venv or a `ctx` missing from a teammate's PATH loses sessions
unnoticed. For every settings file (user, project, local) holding ctx's hooks, the doctor
runs each distinct command the way Claude Code does (through the shell, from the project
directory) with `--version` in place of `hook claude-code`, and says whether it answered as
ctx; it also says when the shared project file names a path of this machine, and which
capture events lack the hook or run it synchronously. The shell's PATH here may differ
from the one Claude Code starts with; the report names the PATH it used.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ...errors import CtxError
from . import settings

PROBE_SECONDS = 30


class HookCommandFails(CtxError):
    """A settings file names a hook command that does not run (the doctor's finding)."""

    exit_code = 1


def probe(command: str, cwd: Path) -> dict[str, Any]:
    """Run `command` with `--version` in place of its `hook claude-code`, as Claude Code
    runs hooks (`sh -c`, from the project directory)."""
    line = command.rstrip()[: -len(settings.MARK)] + "--version"
    try:
        res = subprocess.run(["sh", "-c", line], cwd=cwd if cwd.is_dir() else None,
                             capture_output=True, text=True, timeout=PROBE_SECONDS,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"runs": False, "detail": f"no answer within {PROBE_SECONDS} s"}
    out = res.stdout.strip()
    if res.returncode == 0 and out.startswith("ctx"):
        return {"runs": True, "detail": out}
    err = (res.stderr.strip().splitlines() or [out or f"exit status {res.returncode}"])[-1]
    return {"runs": False, "detail": f"exit {res.returncode}: {err}"}


def _fix(scope: str, project: Path) -> str:
    where = f" --dir {project}" if scope != "user" else ""
    if scope == "project":
        return ("put ctx on the PATH Claude Code starts with (e.g. `pipx install ctxstore`), "
                f"or use this machine's interpreter: `ctx hooks install claude-code --local{where}`"
                " (and `ctx hooks uninstall claude-code` to drop the project entries)")
    return f"install again with a ctx that runs: `ctx hooks install claude-code --{scope}{where}`"


def check(project: Path, env: dict | None = None) -> dict[str, Any]:
    """The doctor's report: {ok, path_used, files: [{scope, path, commands, ...}]}."""
    env = os.environ if env is None else env
    files = []
    for scope in ("user", "project", "local"):
        path = settings.settings_path(scope, project, env)
        found = settings.installed(path)
        if not found:
            continue
        commands = sorted({h["command"] for hooks in found.values() for h in hooks})
        results = []
        for cmd in commands:
            r = {"command": cmd, **probe(cmd, project)}
            if not r["runs"]:
                r["fix"] = _fix(scope, project)
            results.append(r)
        entry: dict[str, Any] = {
            "scope": scope, "path": str(path), "commands": results,
            "missing_events": [e for e in settings.EVENTS if e not in found],
            "synchronous_events": sorted(e for e, hooks in found.items()
                                         if e not in settings.SYNC_EVENTS
                                         and not all(h.get("async") for h in hooks))}
        if scope == "project":
            entry["machine_paths"] = [c for c in commands if _names_a_path(c)]
        files.append(entry)
    ok = all(r["runs"] for f in files for r in f["commands"])
    return {"ok": ok, "installed": bool(files), "files": files, "path_used": env.get("PATH", "")}


def _names_a_path(command: str) -> bool:
    """Whether a command names this machine's files (an absolute path, `~`): not for the file
    a team commits."""
    return any(w.startswith(("/", "~")) or (len(w) > 2 and w[1] == ":")
               for w in command.split())
