"""Cline's tools (cline src/shared/tools.ts `ClineDefaultTool`, parameters from
src/core/assistant-message `toolParamNames` and the tool handlers), and Roo Code's.

Every Cline tool may carry `task_progress`, the focus chain: a markdown checklist
(`- [ ] step`, `- [x] done`) that replaces the task's plan; `focus_chain` (and the importer's
`task_progress` ui messages) carries only that. Roo Code's `update_todo_list` takes the same
checklist as `todos`.

Results: Cline answers a failed call with "The tool execution failed with the following
error", a refused one with "The user denied this operation." (a denial), and other errors
(`Tool [x] was not executed…`, `Missing value for required parameter…`, clineignore blocks)
in text; a native `tool_result` may carry `is_error`. The importer marks those results as
errors; the default rule then tells a denial from a failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..tools import (
    Effect,
    EffectsFn,
    _arg,
    _edit,
    _write,
    kind_of,
    patch_files,
    read_of,
    register_tools,
)

_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX~-])\]\s*(.+?)\s*$")


def checklist(text: Any) -> tuple[Effect, ...]:
    """The plan a focus-chain checklist states (`- [ ] a`, `- [x] b`); () when it has none."""
    if not isinstance(text, str):
        return ()
    steps = []
    for line in text.splitlines():
        m = _CHECK.match(line)
        if m:
            mark = m.group(1)
            status = "completed" if mark in "xX" else "in_progress" if mark in "~-" else "pending"
            steps.append({"id": str(len(steps) + 1), "text": m.group(2), "status": status})
    return (Effect("plan", steps=tuple(steps), summary=f"{len(steps)} steps"),) if steps else ()


def _with_progress(fn: EffectsFn) -> EffectsFn:
    """FN's effects plus the plan its `task_progress` states."""
    def effects(args: Any) -> tuple[Effect, ...]:
        plan = checklist(args.get("task_progress")) if isinstance(args, Mapping) else ()
        return tuple(fn(args)) + plan
    return effects


def _none(_args: Any) -> tuple[Effect, ...]:
    return ()


def _replace_in_file(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, "path", "absolutePath")
    if not path:
        return ()
    diff = args.get("diff") if isinstance(args, Mapping) else None
    blocks = diff.count("------- SEARCH") + diff.count("<<<<<<< SEARCH") if isinstance(diff, str) else 0
    return (Effect("modify", path, f"replace_in_file: {blocks or 1} block(s)", op="update"),)


def _apply_patch(args: Any) -> tuple[Effect, ...]:
    text = args.get("input") if isinstance(args, Mapping) else args
    return patch_files(text) if isinstance(text, str) else ()


def _delete(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, "path")
    return (Effect("modify", path, "deleted", op="delete"),) if path else ()


def _todo_list(args: Any) -> tuple[Effect, ...]:
    return checklist(args.get("todos")) if isinstance(args, Mapping) else ()


_TABLE: tuple[tuple[str, EffectsFn], ...] = (
    ("read_file", read_of("path", "absolutePath")),
    ("write_to_file", _write(("path", "absolutePath"), ("content",))),
    ("replace_in_file", _replace_in_file),
    ("apply_patch", _apply_patch),
    ("delete_file", _delete),
    ("execute_command", kind_of("exec", "command")),
    ("search_files", kind_of("search", "regex")),
    ("list_files", kind_of("search", "path")),
    ("list_code_definition_names", kind_of("search", "path")),
    ("browser_action", kind_of("fetch", "url", "action")),
    ("web_fetch", kind_of("fetch", "url")),
    ("web_search", kind_of("fetch", "query")),
    ("use_mcp_tool", kind_of("exec", "tool_name")),
    ("access_mcp_resource", kind_of("fetch", "uri")),
    ("load_mcp_documentation", _none),
    ("ask_followup_question", _none),
    ("attempt_completion", _none),
    ("plan_mode_respond", _none),
    ("act_mode_respond", _none),
    ("new_task", lambda a: (Effect("spawn", summary=_arg(a, "context")[:200]),)),
    ("use_subagents", lambda a: (Effect("spawn", summary=_arg(a, "prompt_1", "prompt")[:200]),)),
    ("focus_chain", _none),
    ("condense", _none),
    ("summarize_task", _none),
    ("report_bug", _none),
    ("new_rule", _write(("path",), ("content",))),
    ("use_skill", _none),
    # Roo Code
    ("apply_diff", _edit(("path",), "search", "replace")),
    ("insert_content", _edit(("path",), "line", "content")),
    ("search_and_replace", _edit(("path",), "search", "replace")),
    ("edit_file", _edit(("file_path", "path"), "old_string", "new_string")),
    ("search_replace", _edit(("file_path", "path"), "old_string", "new_string")),
    ("codebase_search", kind_of("search", "query")),
    ("update_todo_list", _todo_list),
    ("switch_mode", _none),
    ("fetch_instructions", _none),
    ("run_slash_command", kind_of("exec", "command")),
    ("generate_image", _write(("path",), ("prompt",))),
)

register_tools("cline", tuple((name, _with_progress(fn)) for name, fn in _TABLE))
