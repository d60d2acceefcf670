"""`ctx mcp install CLIENT`: our server entry in each client's MCP configuration, merged.

    client       --project (shared, in the repo)    --user (this machine only)
    claude-code  <dir>/.mcp.json                     ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json)
    gemini       <dir>/.gemini/settings.json         ~/.gemini/settings.json
    codex        <dir>/.codex/config.toml            ~/.codex/config.toml ($CODEX_HOME/config.toml)

Claude Code and Gemini CLI keep servers in a JSON object `mcpServers` (`{"command", "args"}`,
Claude Code also `"type": "stdio"`); Codex in a TOML table `[mcp_servers.<name>]` with
`command` and `args` (Codex reads a project's `.codex/config.toml` only once the project is
trusted). Only the `ctxstore` entry is ours: every other key of the file is kept as it was,
and installing twice changes nothing.

Portability: a project file is shared through version control, so it names no path of this
machine — the command is `ctx` from the PATH, and the store is found from the directory the
client starts the server in, as `ctx` finds it anywhere. A user file may name this
interpreter and, with `pin_store`, this store by absolute path (a client's PATH often lacks a
virtualenv's `ctx`).

TOML without a new dependency: Python reads TOML (tomllib) but does not write it, and a
round-tripping writer (tomlkit) would be a dependency for one table. So the table is written
as text — replacing the `[mcp_servers.ctxstore]` section (and its sub-tables) or appending one —
and the result is parsed again: unless it holds exactly our entry plus everything the file
held before, nothing is written and the error says to edit the file by hand.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...userfiles import open_input, read_json_object, replace_user_file

SERVER = "ctxstore"
CLIENTS = ("claude-code", "codex", "gemini")


def config_path(client: str, scope: str, project: str | os.PathLike | None = None,
                env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    home = Path.home()
    if scope == "project":
        base = Path(project or os.getcwd())
        return {"claude-code": base / ".mcp.json", "gemini": base / ".gemini" / "settings.json",
                "codex": base / ".codex" / "config.toml"}[_client(client)]
    if scope != "user":
        raise InvalidInput(f"unknown scope {scope!r}: use project or user")
    if client == "claude-code":
        base = env.get("CLAUDE_CONFIG_DIR")
        return Path(base).expanduser() / ".claude.json" if base else home / ".claude.json"
    if client == "codex":
        base = env.get("CODEX_HOME")
        return (Path(base).expanduser() if base else home / ".codex") / "config.toml"
    _client(client)
    return home / ".gemini" / "settings.json"


def _client(client: str) -> str:
    if client not in CLIENTS:
        raise InvalidInput(f"unknown MCP client {client!r}: use one of {', '.join(CLIENTS)}")
    return client


def server_command(scope: str, *, store: str | None = None, allow_writes: bool = False
                   ) -> tuple[str, list[str]]:
    """(command, args) that starts `ctx mcp`: `ctx` from the PATH in a project file; this
    interpreter (and STORE, absolute) in a user file."""
    args = ["mcp"]
    if scope == "project":
        if store:
            raise InvalidInput("a project file is shared: it cannot name this machine's store "
                               "path (--pin-store is for --user; the server finds the store "
                               "from the project directory)")
        command = "ctx"
    else:
        command, args = sys.executable, ["-m", "ctxstore.cli", *args]
        if store:
            args += ["--store", os.path.abspath(store)]
    if allow_writes:
        args.append("--allow-writes")
    return command, args


def entry(client: str, command: str, args: list[str]) -> dict[str, Any]:
    if client == "claude-code":
        return {"type": "stdio", "command": command, "args": args}
    return {"command": command, "args": list(args)}


def install(client: str, path: Path, command: str, args: list[str], *,
            dry_run: bool = False) -> dict[str, Any]:
    """Merge our entry into PATH; returns {client, path, server, entry, action, written}."""
    new = entry(_client(client), command, args)
    old, written = _apply(client, path, new, dry_run)
    action = "unchanged" if old == new else ("updated" if old is not None else "added")
    note = "" if os.path.isabs(command) or shutil.which(command) else (
        f"`{command}` is not on this PATH: the client finds it only if its PATH has it")
    return {"client": client, "path": str(path), "server": SERVER, "entry": new,
            "action": action, "written": written, "dry_run": dry_run,
            "command_line": shlex.join([command, *args]), "note": note}


def uninstall(client: str, path: Path, *, dry_run: bool = False) -> dict[str, Any]:
    """Remove our entry (only it) from PATH; returns {client, path, server, removed, written}."""
    old, written = _apply(_client(client), path, None, dry_run)
    return {"client": client, "path": str(path), "server": SERVER, "removed": old,
            "action": "removed" if old is not None else "unchanged", "written": written,
            "dry_run": dry_run}


def _apply(client: str, path: Path, new: dict[str, Any] | None, dry_run: bool
           ) -> tuple[Any, bool]:
    """Set our entry to NEW (None: remove it); (the old entry or None, whether PATH was
    written)."""
    if client == "codex":
        old, text = _codex_merge(path, new)
    else:
        value = read_json_object(path)
        servers = value.get("mcpServers", {})
        if not isinstance(servers, dict):
            raise InvalidInput(f"{path}: \"mcpServers\" is not an object; left as it is")
        old = servers.pop(SERVER, None)
        if new is not None:
            value["mcpServers"] = {**servers, SERVER: new}
        elif "mcpServers" in value and not servers:
            del value["mcpServers"]
        text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    written = old != new and not dry_run
    if written:
        path.parent.mkdir(parents=True, exist_ok=True)
        with replace_user_file(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return old, written


def _read_text(path: Path) -> str:
    if not path.exists():
        return ""
    with open_input(path, "r", encoding="utf-8") as fh:
        return fh.read()




# -- Codex's TOML ------------------------------------------------------------------------------

_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*([^\]]*?)[ \t]*\]\]?[ \t]*(?:#.*)?$")
_OURS = re.compile(r"mcp_servers[ \t]*\.[ \t]*(?:ctxstore|\"ctxstore\"|'ctxstore')(?:[ \t]*\..*)?$")


def _parse_toml(text: str, path: Path) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: not valid TOML ({exc}); left as it is") from None


def _toml_value(v: Any) -> str:
    if isinstance(v, str):  # a TOML basic string: JSON's escapes are TOML's, except that
        # TOML has no surrogate pairs (so non-ASCII stays literal) and escapes DEL too
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r} here")


def _codex_merge(path: Path, new: dict[str, Any] | None) -> tuple[Any, str]:
    """(our old entry or None, the file's new text with our table set to NEW, or removed)."""
    text = _read_text(path)
    before = _parse_toml(text, path)
    servers = before.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path}: mcp_servers is not a table; left as it is")
    old = servers.get(SERVER)
    table = "" if new is None else f"[mcp_servers.{SERVER}]\n" + "".join(
        f"{k} = {_toml_value(v)}\n" for k, v in new.items())
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        m = _HEADER.match(line.rstrip("\r\n"))
        if not m:
            continue
        ours = bool(_OURS.match(m.group(1)))
        if start is None and ours:
            start = i
        elif start is not None and end is None and not ours:
            end = i
    if start is None and old is not None:
        raise _by_hand(path, new)
    if start is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        out = text + sep + table if table else text
    else:
        end = len(lines) if end is None else end
        rest = "".join(lines[end:])
        out = "".join(lines[:start]) + table + ("\n" + rest if rest and table else rest)
    others = {k: v for k, v in servers.items() if k != SERVER}
    expect = {**before, "mcp_servers": others if new is None else {**others, SERVER: new}}
    after = _parse_toml(out, path)
    if after != expect and not (new is None and not others and after == {
            k: v for k, v in expect.items() if k != "mcp_servers"}):
        raise _by_hand(path, new)
    return old, out


def _by_hand(path: Path, new: dict[str, Any] | None) -> InvalidInput:
    what = "remove it by hand" if new is None else "set it by hand to " + "; ".join(
        f"{k} = {_toml_value(v)}" for k, v in new.items())
    return InvalidInput(f"{path}: [mcp_servers.{SERVER}] is written in a form ctx does not "
                        f"rewrite (inline or dotted keys); left as it is: {what}")
