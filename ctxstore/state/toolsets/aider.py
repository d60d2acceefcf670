"""Aider's edits, as the importer names them (aider has no tool calls: the model writes edit
blocks in its reply and aider applies them; see importers/aider.py and docs/harnesses/aider.md).

- `search_replace` {path, search, replace}: one SEARCH/REPLACE block (aider's `diff`,
  `diff-fenced` and editor formats); an empty SEARCH creates the file.
- `whole_file` {path, content}: a whole-file listing (the `whole` edit format).
- `edit` {path}: an edit aider confirmed (`Applied edit to PATH`) whose block the importer did
  not read from the reply (udiff, patch, a listing without a file name).

A call succeeded when aider printed `Applied edit to PATH` for it; its result is an error
otherwise (the importer writes aider's failure message or "not applied").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tools import Effect, _arg, _lines, _write, register_tools


def _search_replace(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, "path")
    if not path or not isinstance(args, Mapping):
        return ()
    search, replace = args.get("search"), args.get("replace")
    op = "add" if not (search or "").strip() else "update"
    return (Effect("modify", path, f"edit: -{_lines(search)} +{_lines(replace)} lines", op=op),)


def _edit(args: Any) -> tuple[Effect, ...]:
    path = _arg(args, "path")
    return (Effect("modify", path, "edit applied by aider", op="update"),) if path else ()


register_tools("aider", (
    ("search_replace", _search_replace),
    ("whole_file", _write(("path",), ("content",))),
    ("edit", _edit),
))
