"""GitHub Copilot CLI's tools (format `copilot`).

Names and argument keys as Copilot CLI's built-in tools take them (the Copilot SDK's recorded
conversations in test/snapshots, and the CLI's own system prompt): `view` (`path`,
`view_range`; also a folder listing), `create` (`path`, `file_text`), `edit` / `str_replace`
(`path`, `old_str`, `new_str`), the older `str_replace_editor` (`command`: view | create |
str_replace | insert | undo_edit), `apply_patch` (a Codex-style patch, for GPT models), `bash` /
`powershell` (`command`, `description`, `mode`) with `read_bash` / `write_bash` / `stop_bash`
(and the powershell equivalents) on a running shell, `glob` / `grep` (`pattern`, `path`),
`web_fetch` (`url`), `task` (`description`, `prompt`, `agent_type`) starting a sub-agent,
`update_todo` (`todos`: a markdown checklist that replaces the list) and, since 1.0, `sql`
(`query`) on the session database whose `todos` table is the plan: `INSERT INTO todos (id,
title, ...) VALUES (...)` adds steps, `UPDATE todos SET status = ... WHERE id = ...` moves one,
`DELETE FROM todos WHERE id = ...` drops one. `report_intent`, `ask_user`, `skill`,
`read_agent` and the like change no working state. A failed call says `success: false`.
`abort` and `session.shutdown` end the running turn: calls still open never get a result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..calls import register_interruption
from ..tools import (
    Effect,
    _apply_patch_tool,
    _arg,
    _edit,
    _spawn,
    _status,
    _write,
    kind_of,
    read_of,
    register_tools,
)

register_interruption("copilot:abort")
register_interruption("copilot:session.shutdown")

_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*\[([ xX~\-/>])\]\s*(.+?)\s*$")
_CHECK_STATUS = {" ": "pending", "x": "completed", "X": "completed", "~": "in_progress",
                 "-": "in_progress", "/": "in_progress", ">": "in_progress"}


def checklist_steps(text: str) -> tuple[dict, ...]:
    """The steps of a markdown checklist (`- [ ] step`, `- [x] done`, `- [~] doing`)."""
    steps = []
    for line in text.splitlines():
        m = _CHECK.match(line)
        if m:
            steps.append({"id": str(len(steps) + 1), "text": m.group(2),
                          "status": _CHECK_STATUS.get(m.group(1), "pending")})
    return tuple(steps)


def _update_todo(args: Any) -> tuple[Effect, ...]:
    todos = args.get("todos") if isinstance(args, Mapping) else args
    if isinstance(todos, str):
        steps = checklist_steps(todos)
    elif isinstance(todos, list):
        steps = tuple({"id": str(t.get("id") or i), "text": str(t.get("content") or t.get("title")
                                                                or t.get("text") or ""),
                       "status": _status(t.get("status"))}
                      for i, t in enumerate(todos, 1) if isinstance(t, Mapping))
    else:
        return ()
    return (Effect("plan", steps=steps, summary=f"{len(steps)} steps"),)


# -- the sql tool's todos table ---------------------------------------------------------------

_LITERAL = r"'(?:[^']|'')*'|-?\d+(?:\.\d+)?|NULL|TRUE|FALSE"
_INSERT = re.compile(r"INSERT\s+(?:OR\s+\w+\s+)?INTO\s+[\"`]?todos[\"`]?\s*\(([^)]*)\)\s*VALUES\s*",
                     re.IGNORECASE)
_TUPLE = re.compile(r"\(\s*((?:" + _LITERAL + r")(?:\s*,\s*(?:" + _LITERAL + r"))*)\s*\)\s*,?\s*",
                    re.IGNORECASE)
_VALUE = re.compile(_LITERAL, re.IGNORECASE)
_UPDATE = re.compile(r"UPDATE\s+[\"`]?todos[\"`]?\s+SET\s+(.*?)\s+WHERE\s+(.*?)\s*(?:;|$)",
                     re.IGNORECASE | re.DOTALL)
_DELETE = re.compile(r"DELETE\s+FROM\s+[\"`]?todos[\"`]?\s+WHERE\s+(.*?)\s*(?:;|$)",
                     re.IGNORECASE | re.DOTALL)
_SET_STATUS = re.compile(r"(?:^|,)\s*status\s*=\s*'((?:[^']|'')*)'", re.IGNORECASE)
_WHERE_ID = re.compile(r"^\s*id\s*(?:=\s*('(?:[^']|'')*')|IN\s*\(\s*((?:'(?:[^']|'')*'\s*,?\s*)+)\))\s*$",
                       re.IGNORECASE)


def _unquote(v: str) -> str:
    return v[1:-1].replace("''", "'") if v.startswith("'") else v


def _where_ids(where: str) -> list[str]:
    m = _WHERE_ID.match(where)
    if not m:
        return []
    if m.group(1):
        return [_unquote(m.group(1))]
    return [_unquote(v) for v in re.findall(r"'(?:[^']|'')*'", m.group(2))]


def _sql_status(v: str) -> str:
    return "completed" if v.lower() == "done" else _status(v)


def sql_todo_effects(query: str) -> tuple[Effect, ...]:
    """The plan effects of SQL statements on the `todos` table, in order."""
    out: list[Effect] = []
    for stmt in query.split(";"):
        s = stmt.strip()
        m = _INSERT.match(s)
        if m:
            cols = [c.strip().strip("\"`").lower() for c in m.group(1).split(",")]
            rest = s[m.end():]
            for t in _TUPLE.finditer(rest):
                row = dict(zip(cols, (_unquote(v) for v in _VALUE.findall(t.group(1))), strict=False))
                title = row.get("title") or row.get("description") or row.get("id") or ""
                out.append(Effect("plan_add", path=row.get("id", ""), summary=title))
                if row.get("status") and row["status"].lower() != "pending" and row.get("id"):
                    out.append(Effect("plan_status", path=row["id"], op=_sql_status(row["status"])))
            continue
        m = _UPDATE.match(s)
        if m:
            st = _SET_STATUS.search(m.group(1))
            if st:
                for tid in _where_ids(m.group(2)):
                    out.append(Effect("plan_status", path=tid,
                                      op=_sql_status(st.group(1).replace("''", "'"))))
            continue
        m = _DELETE.match(s)
        if m:
            for tid in _where_ids(m.group(1)):
                out.append(Effect("plan_status", path=tid, op="deleted"))
    return tuple(out)


def _sql(args: Any) -> tuple[Effect, ...]:
    query = _arg(args, "query", "sql")
    plan = sql_todo_effects(query) if query and re.search(r"\btodos\b", query, re.I) else ()
    return plan or (Effect("exec", summary=(_arg(args, "description") or query)[:200]),)


def _str_replace_editor(args: Any) -> tuple[Effect, ...]:
    cmd = _arg(args, "command")
    if cmd == "view":
        return read_of("path")(args)
    if cmd == "create":
        return _write(("path",), ("file_text",))(args)
    if cmd in ("str_replace", "insert", "undo_edit"):
        path = _arg(args, "path")
        if not path:
            return ()
        if cmd == "insert":
            return (Effect("modify", path, "insert", op="update"),)
        if cmd == "undo_edit":
            return (Effect("modify", path, "undo edit", op="update"),)
        return _edit(("path",), "old_str", "new_str")(args)
    return ()


def _none(args: Any) -> tuple[Effect, ...]:
    return ()


_SHELL = kind_of("exec", "command")

register_tools("copilot", (
    ("view", read_of("path")),
    ("show_file", read_of("path")),
    ("read_file", read_of("path", "file_path")),
    ("create", _write(("path",), ("file_text", "content"))),
    ("edit", _edit(("path",), "old_str", "new_str")),
    ("str_replace", _edit(("path",), "old_str", "new_str")),
    ("str_replace_editor", _str_replace_editor),
    ("apply_patch", _apply_patch_tool),
    ("bash", _SHELL),
    ("powershell", _SHELL),
    ("read_bash", kind_of("exec", "shellId")),
    ("write_bash", kind_of("exec", "input")),
    ("stop_bash", kind_of("exec", "shellId")),
    ("list_bash", _none),
    ("read_powershell", kind_of("exec", "shellId")),
    ("write_powershell", kind_of("exec", "input")),
    ("stop_powershell", kind_of("exec", "shellId")),
    ("list_powershell", _none),
    ("glob", kind_of("search", "pattern")),
    ("grep", kind_of("search", "pattern")),
    ("rg", kind_of("search", "pattern")),
    ("web_fetch", kind_of("fetch", "url")),
    ("web_search", kind_of("fetch", "query")),
    ("fetch_copilot_cli_documentation", _none),
    ("task", _spawn),
    ("read_agent", _none),
    ("write_agent", _none),
    ("list_agents", _none),
    ("update_todo", _update_todo),
    ("sql", _sql),
    ("report_intent", _none),
    ("ask_user", _none),
    ("skill", _none),
    ("store_memory", _none),
    ("task_complete", _none),
    ("exit_plan_mode", _none),
))
