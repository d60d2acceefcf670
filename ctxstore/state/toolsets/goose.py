"""Goose's tools, from block/goose: a tool request names `<extension>__<tool>` (the extension
manager prefixes every extension's tools with its name).

- The developer extension of goose-mcp (Goose 1.0–1.2x): `developer__text_editor` with
  `command` view | write | str_replace | insert | undo_edit, `path`, `file_text` (write),
  `old_str`/`new_str` (str_replace), `new_str` + `insert_line` (insert); `developer__shell`
  runs `command`; `developer__image_processor` reads `path`.
- The developer platform extension of current Goose (crates/goose/src/agents/
  platform_extensions/developer): `write` (`path`, `content`), `edit` (`path`, `before`,
  `after`), `shell` (`command`), `tree` (`path`); described with and without the
  `developer__` prefix.
- The todo platform extension: `todo_write` replaces the whole TODO text (`content`, a markdown
  checklist; `todo__todo_write`, older `todo__write`). Its `- [ ]`/`- [x]` items are the plan.
- Subagents: `summon__delegate`, `dynamic_task__create_task`, `subagent__execute_task`.

A call the user declined is answered with Goose's DECLINED_RESPONSE ("The user has declined to
run this tool. …", agents/tool_execution.rs) as a *successful* result; the importer marks it
failed and the outcome here says denied, so its file effects never apply.

When Goose drives another agent (its claude-code/ACP providers) the calls carry that agent's
tool names (`Bash`, `Write`, …): those fall back to that harness's description (tools.py looks a
name up for the call's harness first, then in any harness).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..tools import (
    DENIED,
    Effect,
    _edit,
    _lines,
    _spawn,
    _write,
    default_outcome,
    kind_of,
    read_of,
    register_tools,
)

#: the text Goose answers a declined call with (a success result, not an error)
DECLINED = "The user has declined to run this tool"


def goose_outcome(text: str, is_error: bool) -> str:
    if DECLINED in (text or ""):
        return DENIED
    return default_outcome(text, is_error)


_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX~-]?)\]\s+(.+?)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+?)\s*$")


def _text_editor(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping):
        return ()
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return ()
    cmd = args.get("command")
    if cmd == "view":
        return (Effect("read", path),)
    if cmd == "write":
        return (Effect("modify", path, f"write: {_lines(args.get('file_text'))} lines", op="write"),)
    if cmd == "str_replace":
        return (Effect("modify", path, f"edit: -{_lines(args.get('old_str'))} "
                                       f"+{_lines(args.get('new_str'))} lines", op="update"),)
    if cmd == "insert":
        return (Effect("modify", path, f"insert: +{_lines(args.get('new_str'))} lines", op="update"),)
    if cmd == "undo_edit":
        return (Effect("modify", path, "undo last edit", op="update"),)
    return ()


def checklist_steps(text: Any) -> list[dict]:
    """Plan steps of a Goose TODO text: its checkbox items (`- [ ] a`, `- [x] b`), or its list
    items when it has no checkbox."""
    if not isinstance(text, str):
        return []
    lines = text.splitlines()
    steps = []
    for line in lines:
        m = _CHECK.match(line)
        if m:
            mark = m.group(1)
            status = "completed" if mark in "xX" and mark else \
                "in_progress" if mark in ("~", "-") and mark else "pending"
            steps.append({"id": str(len(steps) + 1), "text": m.group(2), "status": status})
    if not steps:
        for line in lines:
            m = _ITEM.match(line)
            if m:
                steps.append({"id": str(len(steps) + 1), "text": m.group(1), "status": "pending"})
    return steps


def _todo(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping) or not isinstance(args.get("content"), str):
        return ()
    steps = checklist_steps(args["content"])
    return (Effect("plan", steps=tuple(steps), summary=f"{len(steps)} steps"),)


def _delegate(args: Any) -> tuple[Effect, ...]:
    if isinstance(args, Mapping) and isinstance(args.get("instructions"), str):
        return (Effect("spawn", summary=args["instructions"][:200]),)
    return _spawn(args)


_WRITE = _write(("path",), ("content",))
_EDIT = _edit(("path",), "before", "after")

register_tools("goose", (
    ("developer__text_editor", _text_editor),
    ("text_editor", _text_editor),
    ("developer__shell", kind_of("exec", "command")),
    ("shell", kind_of("exec", "command")),
    ("developer__write", _WRITE),
    ("write", _WRITE),
    ("developer__edit", _EDIT),
    ("edit", _EDIT),
    ("developer__tree", kind_of("search", "path")),
    ("tree", kind_of("search", "path")),
    ("developer__image_processor", read_of("path")),
    ("todo__todo_write", _todo),
    ("todo__write", _todo),
    ("todo_write", _todo),
    ("summon__delegate", _delegate),
    ("dynamic_task__create_task", _delegate),
    ("subagent__execute_task", _delegate),
), outcome=goose_outcome)
