"""OpenCode's built-in tools (sst/opencode `packages/opencode/src/tool/*.ts`).

Argument names are the tools' zod/Schema parameters: `read` {filePath, offset, limit}, `write`
{filePath, content}, `edit` {filePath, oldString, newString, replaceAll}, `multiedit` {filePath,
edits: [{filePath, oldString, newString}]}, `patch` and `apply_patch` {patchText} (the
`*** Begin Patch` format with `*** Add/Update/Delete File:` and `*** Move to:` headers, paths
relative to the session's directory), `bash` {command, timeout, workdir, description}, `glob`
{pattern, path}, `grep` {pattern, path, include}, `list` {path, ignore}, `todowrite` {todos:
[{content, status, priority, id}]} (replaces the whole list: the plan), `todoread` {}, `task`
{description, prompt, subagent_type, task_id} (a child session), `webfetch` {url, format},
`websearch` and `codesearch` {query}.

A call's outcome is its part's `state.status` (the importer makes `error` a failed result); a
refused permission fails with "The user rejected permission to use this specific tool call."
(OpenCode's PermissionRejectedError), which counts as denied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tools import (
    DENIED,
    Effect,
    _edit,
    _spawn,
    _todo_plan,
    _write,
    default_outcome,
    kind_of,
    patch_files,
    read_of,
    register_tools,
)

FILE = ("filePath", "file_path", "path")


def _patch(args: Any) -> tuple[Effect, ...]:
    text = args.get("patchText") or args.get("patch") if isinstance(args, Mapping) else args
    return patch_files(text) if isinstance(text, str) else ()


def _none(args: Any) -> tuple[Effect, ...]:
    return ()


def outcome(text: str, is_error: bool) -> str:
    if is_error and "rejected permission" in (text or ""):
        return DENIED
    return default_outcome(text, is_error)


register_tools("opencode", (
    ("read", read_of(*FILE)),
    ("write", _write(FILE, ("content",))),
    ("edit", _edit(FILE, "oldString", "newString")),
    ("multiedit", _edit(FILE, "oldString", "newString")),
    ("patch", _patch),
    ("apply_patch", _patch),
    ("bash", kind_of("exec", "command")),
    ("glob", kind_of("search", "pattern")),
    ("grep", kind_of("search", "pattern")),
    ("list", kind_of("search", "path")),
    ("todowrite", _todo_plan),
    ("todoread", _none),
    ("task", _spawn),
    ("webfetch", kind_of("fetch", "url")),
    ("websearch", kind_of("fetch", "query")),
    ("codesearch", kind_of("fetch", "query")),
), outcome=outcome)
