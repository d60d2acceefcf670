"""Qwen Code's tools, from qwen-code's `packages/core/src/tools` (tool-names.ts and each tool's
parameter schema; the Gemini CLI tools it forked plus its own).

- `read_file` takes `file_path` (older releases, as Gemini CLI: `absolute_path`; some fixtures
  write `path`); `read_many_files` takes `paths` (literal paths are reads, globs are searches).
- `write_file` takes `file_path` + `content`; `edit` (legacy name `replace`) takes `file_path`,
  `old_string`, `new_string` (`replace_all`).
- `run_shell_command` runs `command`; `glob`/`grep_search` (legacy `search_file_content`) take
  `pattern`, `list_directory` takes `path`.
- `todo_write` replaces the whole list: `todos: [{id, content, status}]` (status pending |
  in_progress | completed). Newer releases track tasks one at a time instead: `task_create`
  (`title`), `task_update` (`taskId`/`task_id` + `status`).
- `agent` (legacy `task`) spawns a subagent (`description`, `prompt`, `subagent_type`);
  `create_sub_session` starts a sub-session (`prompt`); `exit_plan_mode` carries the `plan`.
- `web_fetch` (`url`), `web_search` (`query`).

Failures are the tool_result records whose `toolCallResult.status` is error/cancelled or whose
functionResponse carries `error`: the importer marks those results `is_error`. A call the user
refused answers `[Operation Cancelled] Reason: User did not allow tool call` (qwen-code's
coreToolScheduler): that is a denial. `save_memory` writes Qwen's own memory file, not the
project: no effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tools import (
    DENIED,
    Effect,
    _edit,
    _plan_text,
    _spawn,
    _status,
    _todo_plan,
    _write,
    default_outcome,
    kind_of,
    read_of,
    register_tools,
)

_PATH = ("file_path", "absolute_path", "path")
_REFUSED = ("User did not allow tool call", "[Operation Cancelled]")


def qwen_outcome(text: str, is_error: bool) -> str:
    if is_error and any(m in (text or "") for m in _REFUSED):
        return DENIED
    return default_outcome(text, is_error)
_GLOB = set("*?[{")


def _read_many(args: Any) -> tuple[Effect, ...]:
    paths = args.get("paths") if isinstance(args, Mapping) else None
    if not isinstance(paths, list):
        return ()
    out = []
    for p in paths:
        if isinstance(p, str) and p:
            out.append(Effect("search", summary=p[:200]) if _GLOB & set(p) else Effect("read", p))
    return tuple(out)


def _task_create(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping):
        return ()
    title = args.get("title") or args.get("subject") or args.get("description")
    return (Effect("plan_add", summary=str(title)),) if isinstance(title, str) and title else ()


def _task_update(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping):
        return ()
    tid = next((args[k] for k in ("taskId", "task_id", "id") if args.get(k) is not None), None)
    status = args.get("status")
    if tid is None or not isinstance(status, str):
        return ()
    return (Effect("plan_status", path=str(tid).lstrip("#"), op=_status(status)),)


register_tools("qwen", (
    ("read_file", read_of(*_PATH)),
    ("read_many_files", _read_many),
    ("write_file", _write(_PATH, ("content",))),
    ("edit", _edit(_PATH, "old_string", "new_string")),
    ("replace", _edit(_PATH, "old_string", "new_string")),
    ("run_shell_command", kind_of("exec", "command")),
    ("glob", kind_of("search", "pattern")),
    ("grep_search", kind_of("search", "pattern")),
    ("search_file_content", kind_of("search", "pattern")),
    ("list_directory", kind_of("search", "path", "dir_path")),
    ("todo_write", _todo_plan),
    ("task_create", _task_create),
    ("task_update", _task_update),
    ("agent", _spawn),
    ("task", _spawn),
    ("create_sub_session", _spawn),
    ("exit_plan_mode", _plan_text),
    ("web_fetch", kind_of("fetch", "url", "prompt")),
    ("web_search", kind_of("fetch", "query")),
), outcome=qwen_outcome)
