"""Gemini CLI's tools, from gemini-cli's packages/core/src/tools (tool-names.ts and
definitions/base-declarations.ts for names and argument keys; older names and keys kept).

- read_file `file_path` (before Nov 2025: `absolute_path`); read_many_files `include` (older:
  `paths`) lists paths and globs: each entry without glob characters is a file read.
- write_file `file_path` + `content`; replace (the edit tool) `file_path`, `old_string`,
  `new_string` (`allow_multiple`, older `expected_replacements`).
- run_shell_command `command`; glob `pattern`; grep_search (older search_file_content)
  `pattern`; list_directory `dir_path` (older `path`); web_fetch `prompt` (the URLs are in it);
  google_web_search `query`; get_internal_docs `path` (gemini-cli's own docs, not the workspace).
- write_todos replaces the plan: `todos: [{description, status: pending | in_progress |
  completed | cancelled}]`.
- invoke_agent `agent_name` + `prompt` spawns a subagent; the built-in agents are also offered
  as tools of their own name (codebase_investigator, cli_help, generalist), their arguments
  the agent's inputs.
- save_memory `fact` appends to the user's global GEMINI.md, a file its arguments do not name:
  no file effect.

A call's outcome is its record's `status` (success / error / cancelled), which the importer
turns into ToolCallFinished / ToolCallFailed; the default outcome rule reads that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..tools import Effect, _arg, _edit, _status, _write, kind_of, read_of, register_tools

_GLOB = re.compile(r"[*?\[\]{}]")
PATH_KEYS = ("file_path", "absolute_path", "path")


def _read_many(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping):
        return ()
    paths = args.get("include") or args.get("paths")
    if not isinstance(paths, list):
        return ()
    return tuple(Effect("read", p) for p in paths if isinstance(p, str) and p and not _GLOB.search(p))


def _todos(args: Any) -> tuple[Effect, ...]:
    todos = args.get("todos") if isinstance(args, Mapping) else None
    if not isinstance(todos, list):
        return ()
    steps = tuple({"id": str(i), "text": str(t.get("description") or ""),
                   "status": _status(t.get("status"))}
                  for i, t in enumerate(todos, 1) if isinstance(t, Mapping))
    return (Effect("plan", steps=steps, summary=f"{len(steps)} steps"),)


def _invoke_agent(args: Any) -> tuple[Effect, ...]:
    name, prompt = _arg(args, "agent_name"), _arg(args, "prompt")
    return (Effect("spawn", summary=(f"{name}: {prompt}" if name else prompt)[:200]),)


def _named_agent(args: Any) -> tuple[Effect, ...]:
    """A built-in agent called as its own tool: its first string input is the task."""
    if not isinstance(args, Mapping):
        return (Effect("spawn"),)
    text = next((v for v in args.values() if isinstance(v, str) and v), "")
    return (Effect("spawn", summary=text[:200]),)


register_tools("gemini", (
    ("read_file", read_of(*PATH_KEYS)),
    ("read_many_files", _read_many),
    ("write_file", _write(PATH_KEYS, ("content",))),
    ("replace", _edit(PATH_KEYS, "old_string", "new_string")),
    ("run_shell_command", kind_of("exec", "command")),
    ("glob", kind_of("search", "pattern")),
    ("grep_search", kind_of("search", "pattern")),
    ("search_file_content", kind_of("search", "pattern")),
    ("list_directory", kind_of("search", "dir_path", "path")),
    ("web_fetch", kind_of("fetch", "prompt", "url")),
    ("google_web_search", kind_of("fetch", "query")),
    ("get_internal_docs", kind_of("fetch", "path")),
    ("write_todos", _todos),
    ("invoke_agent", _invoke_agent),
    ("codebase_investigator", _named_agent),
    ("cli_help", _named_agent),
    ("generalist", _named_agent),
    ("save_memory", lambda args: ()),
))
