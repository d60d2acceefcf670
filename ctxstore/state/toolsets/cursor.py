"""Cursor's tools, under the names its three stores record.

- The IDE's bubble store (`toolFormerData.name`, params a JSON string): the documented agent
  tools `edit_file` (target_file, code_edit), `search_replace` (file_path, old_string,
  new_string), `delete_file` (target_file), `read_file` (target_file), `run_terminal_cmd`
  (command), `codebase_search` (query), `grep_search` (query), `file_search` (query),
  `list_dir` (relative_workspace_path), `web_search` (search_term), `todo_write` (todos
  [{id, content, status}], merge), and the `_v2`/internal forms of current versions:
  `edit_file_v2` (relativeWorkspacePath), `read_file_v2` (targetFile), `run_terminal_command_v2`
  (command), `glob_file_search` (globPattern), `ripgrep_raw_search` (pattern), `task_v2`
  (description, prompt).
- Agent transcripts and the cursor-agent CLI store (the names the model is given): `Read`
  (path), `Write` (path, contents), `StrReplace` (path, old_string, new_string), `Delete`
  (path), `Shell` (command), `Glob` (glob_pattern), `Grep` (pattern), `LS` (target_directory),
  `SemanticSearch` (query), `TodoWrite` (todos, merge), `Task` (description, prompt),
  `WebSearch` (search_term), `WebFetch` (url), `EditNotebook` (target_notebook).

A todo list with `merge: false` replaces the plan; with `merge: true` its items update the
steps of the same id (their status), as Cursor merges them. Outcome: an error result fails; a
result that is JSON with `rejected: true` was refused by the user; a non-zero `exitCode` (or
"Exit code: N" in the CLI's Shell output) fails the command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..tools import (
    DENIED,
    ERROR,
    OK,
    Effect,
    _arg,
    _edit,
    _spawn,
    _status,
    _todo_plan,
    _write,
    default_outcome,
    kind_of,
    read_of,
    register_tools,
)

_PATH = ("target_file", "targetFile", "relativeWorkspacePath", "relative_workspace_path",
         "path", "file_path", "filePath", "effectiveUri")
_EXIT = re.compile(r"^Exit code:\s*(-?\d+)", re.M)


def _delete(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, *_PATH)
    return (Effect("modify", path, "delete", op="delete"),) if path else ()


def _notebook(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, "target_notebook", "targetNotebook", *_PATH)
    return (Effect("modify", path, "notebook cell edit", op="update"),) if path else ()


def _todos(args: Any) -> tuple[Effect, ...]:
    """todo_write / TodoWrite: the list replaces the plan, or (merge) updates steps by id."""
    if not isinstance(args, Mapping):
        return ()
    if args.get("merge") is True:
        todos = args.get("todos")
        return tuple(Effect("plan_status", path=str(t["id"]), op=_status(t.get("status")))
                     for t in todos if isinstance(t, Mapping) and t.get("id") is not None
                     and isinstance(t.get("status"), str)) if isinstance(todos, list) else ()
    return _todo_plan(args)


def outcome(text: str, is_error: bool, effects: tuple = ()) -> str:
    """An error result fails (or was denied); a JSON result with `rejected: true` was refused;
    a command with a non-zero `exitCode` / `Exit code: N` failed."""
    base = default_outcome(text, is_error)
    if base != OK:
        return base
    s = (text or "").strip()
    if s.startswith("{"):
        try:
            value = json.loads(s)
        except ValueError:
            value = None
        if isinstance(value, Mapping):
            if value.get("rejected") is True:
                return DENIED
            code = value.get("exitCode", value.get("exit_code"))
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                return ERROR
            return OK
    m = _EXIT.search(s)
    if m and int(m.group(1)) != 0:
        return ERROR
    return OK


_SEARCH_KEYS = ("query", "pattern", "globPattern", "glob_pattern", "search_term")
_DIR_KEYS = ("relative_workspace_path", "targetDirectory", "target_directory", "path")

register_tools("cursor", (
    # the IDE's bubble store: documented tools and the _v2 forms current versions record
    ("edit_file", _write(_PATH, ("code_edit", "contents"))),
    ("edit_file_v2", _write(_PATH, ("code_edit", "contents"))),
    ("search_replace", _edit(_PATH, "old_string", "new_string")),
    ("delete_file", _delete),
    ("edit_notebook", _notebook),
    ("read_file", read_of(*_PATH)),
    ("read_file_v2", read_of(*_PATH)),
    ("run_terminal_cmd", kind_of("exec", "command")),
    ("run_terminal_command_v2", kind_of("exec", "command")),
    ("codebase_search", kind_of("search", *_SEARCH_KEYS)),
    ("grep_search", kind_of("search", *_SEARCH_KEYS)),
    ("ripgrep_search", kind_of("search", *_SEARCH_KEYS)),
    ("ripgrep_raw_search", kind_of("search", *_SEARCH_KEYS)),
    ("file_search", kind_of("search", *_SEARCH_KEYS)),
    ("glob_file_search", kind_of("search", *_SEARCH_KEYS)),
    ("list_dir", kind_of("search", *_DIR_KEYS)),
    ("list_dir_v2", kind_of("search", *_DIR_KEYS)),
    ("web_search", kind_of("fetch", "search_term", "searchTerm", "query")),
    ("web_fetch", kind_of("fetch", "url")),
    ("todo_write", _todos),
    ("task", _spawn),
    ("task_v2", _spawn),
    # agent transcripts and the cursor-agent CLI store
    ("Read", read_of(*_PATH)),
    ("Write", _write(_PATH, ("contents", "content"))),
    ("StrReplace", _edit(_PATH, "old_string", "new_string")),
    ("Delete", _delete),
    ("EditNotebook", _notebook),
    ("Shell", kind_of("exec", "command")),
    ("Glob", kind_of("search", *_SEARCH_KEYS)),
    ("Grep", kind_of("search", *_SEARCH_KEYS)),
    ("LS", kind_of("search", *_DIR_KEYS)),
    ("SemanticSearch", kind_of("search", *_SEARCH_KEYS)),
    ("WebSearch", kind_of("fetch", "search_term", "query")),
    ("WebFetch", kind_of("fetch", "url")),
    ("TodoWrite", _todos),
    ("Task", _spawn),
), outcome=outcome, reads_result=True)
