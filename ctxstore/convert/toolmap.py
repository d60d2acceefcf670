"""Tool calls across harnesses: one canonical kind and argument shape, each harness's names.

A call is read into a canonical kind (`shell`, `read`, `write`, `edit`, `patch`, `grep`,
`glob`, `list`, `todo`, `web_fetch`, `web_search`, `subagent`) with canonical arguments, then
written with the target's own tool name and argument keys. A call with no equivalent in the
target stays a tool call under its original name and arguments ("generic"), so nothing turns
into text.

Names and argument keys come from each harness's own tool definitions (ctxstore/state/tools.py
and state/toolsets/*.py cite them): Claude Code `Bash{command}`, `Read/Write/Edit{file_path,
content, old_string, new_string}`, `TodoWrite{todos:[{content,status,activeForm}]}`; Codex
`shell{command:[argv]}`, `exec_command{cmd}`, `shell_command{command}`, `apply_patch`
(a custom tool whose input is the patch), `update_plan{plan:[{step,status}]}`; pi
`bash{command}`, `read/write/edit{path, content, oldText, newText}`, `grep`, `find`, `ls`;
Gemini CLI `run_shell_command{command}`, `read_file/write_file{file_path}`,
`replace{file_path, old_string, new_string}`, `grep_search`, `glob`, `list_directory{dir_path}`,
`write_todos{todos:[{description,status}]}`, `web_fetch{prompt}`, `google_web_search{query}`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

#: tool name (any harness) -> canonical kind. Names are matched exactly, then lower-cased.
KIND_OF: dict[str, str] = {
    # Claude Code
    "Bash": "shell", "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit",
    "Grep": "grep", "Glob": "glob", "LS": "list", "TodoWrite": "todo", "WebFetch": "web_fetch",
    "WebSearch": "web_search", "Task": "subagent", "Agent": "subagent",
    # Codex
    "shell": "shell", "exec_command": "shell", "shell_command": "shell", "local_shell": "shell",
    "container.exec": "shell", "apply_patch": "patch", "update_plan": "todo",
    # pi (and opencode's lower-case names)
    "bash": "shell", "read": "read", "write": "write", "edit": "edit", "grep": "grep",
    "find": "glob", "glob": "glob", "ls": "list", "todowrite": "todo", "webfetch": "web_fetch",
    "task": "subagent",
    # Gemini CLI and Qwen Code
    "run_shell_command": "shell", "read_file": "read", "write_file": "write", "replace": "edit",
    "grep_search": "grep", "search_file_content": "grep",
    "list_directory": "list", "write_todos": "todo", "todo_write": "todo", "web_fetch": "web_fetch",
    "google_web_search": "web_search", "web_search": "web_search", "invoke_agent": "subagent",
}

_KEYS = {
    "path": ("file_path", "path", "filePath", "absolute_path", "notebook_path", "dir_path"),
    "content": ("content", "file_text"),
    "old": ("old_string", "oldText", "oldString", "old_str"),
    "new": ("new_string", "newText", "newString", "new_str"),
    "pattern": ("pattern", "regex", "glob"),
    "url": ("url",),
    "prompt": ("prompt", "input"),
    "query": ("query",),
    "description": ("description", "agent_name"),
    "cwd": ("workdir", "cwd", "directory"),
    "offset": ("offset",),  # a read's first line and line count: Claude Code, pi and Gemini
    "limit": ("limit",),    # CLI name them alike
}


def _pick(args: Mapping, name: str) -> Any:
    for key in _KEYS[name]:
        if key in args and args[key] not in (None, ""):
            return args[key]
    return None


def command_text(value: Any) -> str:
    """A shell command as one string: argv lists are joined, `bash -lc CMD` gives CMD."""
    if isinstance(value, (list, tuple)):
        argv = [str(a) for a in value]
        if len(argv) == 3 and argv[0] in ("bash", "sh", "zsh", "/bin/bash", "/bin/sh") \
                and argv[1] in ("-lc", "-c"):
            return argv[2]
        return shlex.join(argv)
    return str(value or "")


def _todos(args: Mapping) -> list[dict[str, str]] | None:
    items = args.get("todos") if "todos" in args else args.get("plan")
    if not isinstance(items, (list, tuple)):
        return None
    out = []
    for t in items:
        if isinstance(t, Mapping):
            text = t.get("content") or t.get("step") or t.get("description") or t.get("text") or ""
            out.append({"text": str(text), "status": str(t.get("status") or "pending")})
    return out


def canonical(tool: str, args: Any) -> tuple[str, dict[str, Any]] | None:
    """(kind, canonical args) of a call, or None when it has no canonical form."""
    kind = KIND_OF.get(tool) or KIND_OF.get(tool.lower())
    if kind is None:
        return None
    if kind == "patch":
        text = args if isinstance(args, str) else (args or {}).get("input") or (args or {}).get("patch")
        return (kind, {"patch": text}) if isinstance(text, str) else None
    if not isinstance(args, Mapping):
        return None
    if kind == "shell":
        cmd = args.get("command", args.get("cmd"))
        if cmd in (None, "", []):
            return None
        out = {"command": command_text(cmd)}
        if _pick(args, "cwd"):
            out["cwd"] = str(_pick(args, "cwd"))
        return kind, out
    if kind == "todo":
        todos = _todos(args)
        return (kind, {"todos": todos}) if todos is not None else None
    if kind == "edit" and "edits" in args:
        return None  # multi-edit shapes stay generic: no target takes them all
    fields = {name: _pick(args, name) for name in _KEYS}
    need = {"read": ("path",), "write": ("path", "content"), "edit": ("path", "old", "new"),
            "grep": ("pattern",), "glob": ("pattern",), "list": ("path",), "web_fetch": (),
            "web_search": ("query",), "subagent": ("prompt",)}[kind]
    if any(fields[n] is None for n in need):
        return None
    if kind == "web_fetch" and fields["url"] is None and fields["prompt"] is None:
        return None
    if kind == "read" and tool == "read_file" and isinstance(fields["offset"], int):
        fields["offset"] += 1  # Gemini CLI counts lines from 0; the canonical form from 1
    return kind, {k: v for k, v in fields.items() if v is not None and k != "cwd"}


def _patch_add(path: str, content: str) -> str:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "*** Begin Patch\n*** Add File: " + path + "\n" + "".join(
        "+" + ln + "\n" for ln in lines) + "*** End Patch\n"


def _patch_update(path: str, old: str, new: str) -> str:
    body = "".join("-" + ln + "\n" for ln in old.split("\n")) + \
        "".join("+" + ln + "\n" for ln in new.split("\n"))
    return "*** Begin Patch\n*** Update File: " + path + "\n@@\n" + body + "*** End Patch\n"


Shaper = Callable[[dict[str, Any]], Any]


def _opt(a: dict[str, Any], key: str, as_key: str = "") -> dict[str, Any]:
    """{AS_KEY: a[KEY]} when the canonical args have KEY, else {} (optional arguments)."""
    return {as_key or key: a[key]} if key in a else {}

#: target -> kind -> (tool name, canonical args -> target args). A kind missing here has no
#: equivalent in that target: the call is written generic.
TARGET_TOOLS: dict[str, dict[str, tuple[str, Shaper]]] = {
    "claude-code": {
        "shell": ("Bash", lambda a: {"command": a["command"]}),
        "read": ("Read", lambda a: {"file_path": a["path"], **_opt(a, "offset"), **_opt(a, "limit")}),
        "write": ("Write", lambda a: {"file_path": a["path"], "content": a["content"]}),
        "edit": ("Edit", lambda a: {"file_path": a["path"], "old_string": a["old"],
                                    "new_string": a["new"]}),
        "grep": ("Grep", lambda a: {"pattern": a["pattern"], **_opt(a, "path")}),
        "glob": ("Glob", lambda a: {"pattern": a["pattern"], **_opt(a, "path")}),
        "todo": ("TodoWrite", lambda a: {"todos": [
            {"content": t["text"], "status": _status(t["status"]), "activeForm": t["text"]}
            for t in a["todos"]]}),
        "web_fetch": ("WebFetch", lambda a: {"url": a.get("url", ""), "prompt": a.get("prompt", "")}),
        "web_search": ("WebSearch", lambda a: {"query": a["query"]}),
        "subagent": ("Task", lambda a: {"description": a.get("description", "subagent"),
                                        "prompt": a["prompt"], "subagent_type": "general-purpose"}),
    },
    "codex": {
        "shell": ("shell", lambda a: {"command": ["bash", "-lc", a["command"]],
                                      **_opt(a, "cwd", "workdir")}),
        "write": ("apply_patch", lambda a: _patch_add(a["path"], a["content"])),
        "edit": ("apply_patch", lambda a: _patch_update(a["path"], a["old"], a["new"])),
        "patch": ("apply_patch", lambda a: a["patch"]),
        "todo": ("update_plan", lambda a: {"plan": [
            {"step": t["text"], "status": _status(t["status"])} for t in a["todos"]]}),
    },
    "pi": {
        "shell": ("bash", lambda a: {"command": a["command"]}),
        "read": ("read", lambda a: {"path": a["path"], **_opt(a, "offset"), **_opt(a, "limit")}),
        "write": ("write", lambda a: {"path": a["path"], "content": a["content"]}),
        "edit": ("edit", lambda a: {"path": a["path"], "oldText": a["old"], "newText": a["new"]}),
        "grep": ("grep", lambda a: {"pattern": a["pattern"], **_opt(a, "path")}),
        "glob": ("find", lambda a: {"pattern": a["pattern"], **_opt(a, "path")}),
        "list": ("ls", lambda a: {"path": a["path"]}),
    },
    "gemini": {
        "shell": ("run_shell_command", lambda a: {"command": a["command"]}),
        "read": ("read_file", lambda a: {"file_path": a["path"], **_opt(a, "limit"), **(
            {"offset": a["offset"] - 1} if isinstance(a.get("offset"), int) else {})}),
        "write": ("write_file", lambda a: {"file_path": a["path"], "content": a["content"]}),
        "edit": ("replace", lambda a: {"file_path": a["path"], "old_string": a["old"],
                                       "new_string": a["new"]}),
        "grep": ("grep_search", lambda a: {"pattern": a["pattern"]}),
        "glob": ("glob", lambda a: {"pattern": a["pattern"]}),
        "list": ("list_directory", lambda a: {"dir_path": a["path"]}),
        "todo": ("write_todos", lambda a: {"todos": [
            {"description": t["text"], "status": _status(t["status"])} for t in a["todos"]]}),
        "web_fetch": ("web_fetch", lambda a: {"prompt": " ".join(
            x for x in (a.get("prompt", ""), a.get("url", "")) if x)}),
        "web_search": ("google_web_search", lambda a: {"query": a["query"]}),
    },
}


def _status(status: str) -> str:
    s = status.lower().replace("-", "_").replace(" ", "_")
    return s if s in ("pending", "in_progress", "completed") else (
        "completed" if s in ("done", "complete", "cancelled") else "pending")


def map_call(target: str, tool: str, args: Any) -> tuple[str, Any, bool]:
    """(name, args, mapped) of a call written for TARGET: its own tool when one is the same
    kind (mapped=True; a call already named as the target names it stays as it is), else the
    original name and arguments (mapped=False)."""
    table = TARGET_TOOLS[target]
    if any(name == tool for name, _ in table.values()):
        return tool, args, True
    canon = canonical(tool, args)
    if canon is None or canon[0] not in table:
        return tool, args, False
    name, shape = table[canon[0]]
    return name, shape(canon[1]), True
