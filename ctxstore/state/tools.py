"""Tool semantics as data: what one harness's tool call does to the working state.

The state fold cannot guess what `Edit`, `apply_patch` or pi's `write` mean from their names, so
each harness's tools are described here once, as a `ToolSpec`: a function from the call's
arguments to `Effect`s (file read, file modified with a change summary, plan replaced, subagent
spawned, search, fetch, command run) and a function that reads the result and says whether the
call succeeded, failed or was denied by the user. The fold (`ctxstore.state.effects`) applies
the effects of a call only when its result says it succeeded, for imported events and for
events written through `ContextManager` alike.

The rules come from each harness's documented tool schemas, not from any one transcript:

- Claude Code: `Read`/`Write`/`Edit`/`MultiEdit` take `file_path`, `NotebookEdit` takes
  `notebook_path`; `TodoWrite` replaces the whole todo list (`todos: [{content, status,
  activeForm}]`); `TaskCreate`/`TaskUpdate` (2.1.x task lists) add one numbered task / change
  one task's status; a refused permission answers with "The user doesn't want to proceed…".
- Codex: `shell` (`command: [argv]`), `exec_command` (`cmd: str`) and `local_shell` run
  commands; `apply_patch` arrives as a custom tool whose input is the patch, or as a shell
  command `["apply_patch", PATCH]` / `bash -lc "apply_patch <<'EOF' … EOF"`; the files are the
  patch's `*** Add File:` / `*** Update File:` / `*** Delete File:` (and `*** Move to:`)
  headers. `update_plan` replaces the plan (`plan: [{step, status}]`). Command outputs carry an
  exit code (`{"metadata": {"exit_code": N}}`, `Exit code: N`, `Process exited with code N`).
- pi: `read`/`write`/`edit` take `path`; `bash` runs `command`; `isError` marks failures.

Harness authors register their own tools with `register_tool` (docs/context.md); a name is
looked up for the session's harness first, then in any harness (the first three harnesses'
descriptions first, then the later ones in `LATER` order, then the rest in the order they were
registered). The later harnesses' tables (state/toolsets/) load on first need: rendering a
call by a name the first three describe (`ctx log`) does not pay for eight more tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..lazyattrs import LazyPattern

#: Effect kinds the state understands.
EFFECT_KINDS = ("read", "modify", "plan", "plan_add", "plan_status", "plan_text", "spawn",
                "search", "fetch", "exec")
#: Call outcomes a result can have.
OK, ERROR, DENIED = "ok", "error", "denied"


@dataclass(frozen=True, slots=True)
class Effect:
    """One thing a tool call does. `path` for file effects, `steps` for a plan
    ({id, text, status} maps), `summary` a short human line (a change summary for "modify")."""

    kind: str
    path: str = ""
    summary: str = ""
    steps: tuple = ()
    op: str = ""  # modify: add | update | delete | move

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("path", "summary", "op"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.steps:
            out["steps"] = [dict(s) for s in self.steps]
        return out


EffectsFn = Callable[[Any], "tuple[Effect, ...]"]
OutcomeFn = Callable[[str, bool], str]


def default_outcome(text: str, is_error: bool) -> str:
    """An error result is a failure, or a denial when the user refused the call."""
    if not is_error:
        return OK
    return DENIED if is_denial(text) else ERROR


_DENIAL = LazyPattern(r"doesn't want to (?:proceed with this tool use|take this action)|"
                     r"tool use was rejected|"
                     r"permission (?:to use \S+ )?(?:was |has been )?denied|user denied",
                     re.IGNORECASE)


def is_denial(text: str) -> bool:
    return bool(_DENIAL.search(text or ""))


@dataclass(frozen=True)
class ToolSpec:
    harness: str
    name: str
    effects: EffectsFn
    outcome: OutcomeFn = default_outcome
    #: True when `outcome` needs the whole result text (not just the event's preview); it is
    #: then also given the call's waiting file effects (`effects=`, as plain maps).
    reads_result: bool = False
    doc: str = field(default="", compare=False)


_REGISTRY: dict[tuple[str, str], ToolSpec] = {}
_BY_NAME: dict[str, list[ToolSpec]] = {}
#: The harnesses described in this module, and those whose tables state/toolsets/ holds.
FIRST = ("claude-code", "codex", "pi")
LATER = ("aider", "cline", "copilot", "cursor", "gemini", "goose", "opencode", "qwen")
_RANK = {h: i for i, h in enumerate((*FIRST, *LATER))}
_later_loaded = False


def _load_later() -> None:
    """Register the later harnesses' tables (once; a toolset imported on its own first only
    registered itself)."""
    global _later_loaded
    if not _later_loaded:
        _later_loaded = True
        from . import toolsets  # noqa: F401


def _put(spec: ToolSpec) -> ToolSpec:
    old = _REGISTRY.get((spec.harness, spec.name))
    _REGISTRY[(spec.harness, spec.name)] = spec
    specs = _BY_NAME.setdefault(spec.name, [])
    if old is not None:
        specs.remove(old)
    specs.append(spec)
    # the look-up order by name does not depend on which table loaded first (stable sort)
    specs.sort(key=lambda s: _RANK.get(s.harness, len(_RANK)))
    return spec


def register_tool(harness: str, name: str, effects: EffectsFn,
                  outcome: OutcomeFn | None = None, *, reads_result: bool = False,
                  doc: str = "") -> ToolSpec:
    """Describe tool NAME of HARNESS (replacing an earlier description of the same pair).

    `effects(args) -> tuple[Effect, ...]` must accept any value (arguments can be a string, a
    list, or damaged); `outcome(result_text, is_error) -> "ok" | "error" | "denied"`.
    """
    _load_later()  # a built-in table loaded later must not replace this description
    return _put(ToolSpec(harness, name, effects, outcome or default_outcome, reads_result, doc))


def unregister_tool(harness: str, name: str) -> None:
    _load_later()
    spec = _REGISTRY.pop((harness, name), None)
    if spec is not None:
        _BY_NAME[name].remove(spec)


def tool_spec(name: str, harness: str = "") -> ToolSpec | None:
    """The description of NAME: HARNESS's own first, else the first harness that has it."""
    if harness and harness not in FIRST:
        _load_later()
    spec = _REGISTRY.get((harness, name)) if harness else None
    if spec is not None:
        return spec
    specs = _BY_NAME.get(name)
    if not (specs and specs[0].harness in FIRST):  # a later table may have it, or come first
        _load_later()
        specs = _BY_NAME.get(name)
    return specs[0] if specs else None


def is_ambiguous(name: str) -> bool:
    """Whether more than one harness describes a tool of this name (the call's harness then
    decides, read from its message's provenance)."""
    _load_later()
    return len(_BY_NAME.get(name, ())) > 1


def registered_tools() -> list[tuple[str, str]]:
    _load_later()
    return sorted(_REGISTRY)


def call_effects(name: str, args: Any, harness: str = "") -> tuple[Effect, ...]:
    spec = tool_spec(name, harness)
    if spec is None:
        return ()
    try:
        return tuple(spec.effects(args))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError):
        return ()  # damaged arguments describe no effect; the call itself is still recorded


# ---------------------------------------------------------------------------------------------
# building blocks


def _arg(args: Any, *keys: str) -> str:
    if not isinstance(args, Mapping):
        return ""
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


def _lines(text: Any) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0) if isinstance(text, str) else 0


def _edit_summary(old: Any, new: Any) -> str:
    return f"edit: -{_lines(old)} +{_lines(new)} lines"


def read_of(*keys: str) -> EffectsFn:
    def fn(args: Any) -> tuple[Effect, ...]:
        path = _arg(args, *keys)
        return (Effect("read", path),) if path else ()
    return fn


def kind_of(kind: str, *keys: str) -> EffectsFn:
    def fn(args: Any) -> tuple[Effect, ...]:
        return (Effect(kind, summary=_arg(args, *keys)[:200]),)
    return fn


def _write(path_keys: tuple[str, ...], content_keys: tuple[str, ...]) -> EffectsFn:
    def fn(args: Any) -> tuple[Effect, ...]:
        path = _arg(args, *path_keys)
        if not path:
            return ()
        content = args.get(content_keys[0]) if isinstance(args, Mapping) else None
        for k in content_keys[1:]:
            if content is None and isinstance(args, Mapping):
                content = args.get(k)
        return (Effect("modify", path, f"write: {_lines(content)} lines", op="write"),)
    return fn


def _edit(path_keys: tuple[str, ...], old_key: str, new_key: str) -> EffectsFn:
    def fn(args: Any) -> tuple[Effect, ...]:
        path = _arg(args, *path_keys)
        if not path:
            return ()
        edits = args.get("edits")
        if isinstance(edits, list) and edits:  # MultiEdit, pi's multi-edit form
            old = sum(_lines(e.get(old_key)) for e in edits if isinstance(e, Mapping))
            new = sum(_lines(e.get(new_key)) for e in edits if isinstance(e, Mapping))
            return (Effect("modify", path, f"{len(edits)} edits: -{old} +{new} lines", op="update"),)
        return (Effect("modify", path, _edit_summary(args.get(old_key), args.get(new_key)),
                       op="update"),)
    return fn


_PLAN_STATUS = {"completed": "completed", "complete": "completed", "done": "completed",
                "in_progress": "in_progress", "in-progress": "in_progress", "active": "in_progress",
                "pending": "pending", "todo": "pending", "cancelled": "cancelled",
                "canceled": "cancelled", "deleted": "deleted"}


def _status(v: Any) -> str:
    s = v if isinstance(v, str) else ""
    return _PLAN_STATUS.get(s.lower(), s or "pending")


def _todo_plan(args: Any) -> tuple[Effect, ...]:
    todos = args.get("todos") if isinstance(args, Mapping) else None
    if not isinstance(todos, list):
        return ()
    steps = []
    for i, t in enumerate(todos, 1):
        if isinstance(t, Mapping):
            text = t.get("content") or t.get("text") or t.get("activeForm") or ""
            steps.append({"id": str(t.get("id") or i), "text": str(text),
                          "status": _status(t.get("status"))})
    return (Effect("plan", steps=tuple(steps), summary=f"{len(steps)} steps"),)


def _update_plan(args: Any) -> tuple[Effect, ...]:
    plan = args.get("plan") if isinstance(args, Mapping) else None
    if not isinstance(plan, list):
        return ()
    steps = []
    for i, s in enumerate(plan, 1):
        if isinstance(s, Mapping):
            steps.append({"id": str(i), "text": str(s.get("step") or s.get("text") or ""),
                          "status": _status(s.get("status"))})
        elif isinstance(s, str):
            steps.append({"id": str(i), "text": s, "status": "pending"})
    summary = _arg(args, "explanation")[:200] or f"{len(steps)} steps"
    return (Effect("plan", steps=tuple(steps), summary=summary),)


def _task_create(args: Any) -> tuple[Effect, ...]:
    subject = _arg(args, "subject", "description", "activeForm")
    return (Effect("plan_add", summary=subject),) if subject else ()


def _task_update(args: Any) -> tuple[Effect, ...]:
    if not isinstance(args, Mapping):
        return ()
    tid = args.get("taskId") or args.get("id")
    status = args.get("status")
    if tid is None or not isinstance(status, str):
        return ()
    return (Effect("plan_status", path=str(tid).lstrip("#"), op=_status(status)),)


_LIST_ITEM = LazyPattern(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?(.+?)\s*$")


def _plan_text(args: Any) -> tuple[Effect, ...]:
    """ExitPlanMode: a markdown plan; its list items become steps only if no plan exists."""
    text = _arg(args, "plan")
    items = [m.group(1) for m in map(_LIST_ITEM.match, text.splitlines()) if m]
    steps = tuple({"id": str(i), "text": t, "status": "pending"} for i, t in enumerate(items, 1))
    return (Effect("plan_text", steps=steps, summary=text.strip().splitlines()[0][:200] if text.strip() else ""),)


def _spawn(args: Any) -> tuple[Effect, ...]:
    return (Effect("spawn", summary=_arg(args, "description", "message", "prompt", "task",
                                         "agent_type")[:200]),)


# -- apply_patch (Codex) ----------------------------------------------------------------------

_PATCH_HEADER = LazyPattern(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$",
                           re.MULTILINE)
_OPS = {"Add": "add", "Update": "update", "Delete": "delete"}


def patch_files(patch: str) -> tuple[Effect, ...]:
    """One "modify" effect per file a Codex patch touches, with +/- line counts."""
    out: list[list] = []  # [path, op, added, removed]
    for line in patch.splitlines():
        m = _PATCH_HEADER.match(line)
        if m:
            if m.group(3) and out:  # "*** Move to:" renames the file just named
                out[-1][0], out[-1][1] = m.group(3), "move"
            elif m.group(2):
                out.append([m.group(2), _OPS[m.group(1)], 0, 0])
            continue
        if out and line.startswith("+") and not line.startswith("+++"):
            out[-1][2] += 1
        elif out and line.startswith("-") and not line.startswith("---"):
            out[-1][3] += 1
    return tuple(Effect("modify", p, f"{op}: +{a} -{r} lines", op=op) for p, op, a, r in out)


_HEREDOC = LazyPattern(r"(?:^|[\s;&|(])apply_patch\b")


def _patch_in_command(cmd: Any) -> str:
    """The patch text of a command that runs apply_patch, or ""."""
    if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
        if cmd[0] in ("apply_patch", "applypatch") and len(cmd) > 1:
            return cmd[1]
        cmd = cmd[-1] if cmd[0] in ("bash", "sh", "zsh") or cmd[0].endswith("sh") else " ".join(cmd)
    if isinstance(cmd, str) and "*** Begin Patch" in cmd and _HEREDOC.search(cmd):
        return cmd[cmd.index("*** Begin Patch"):]
    return ""


def _shell(*keys: str) -> EffectsFn:
    def fn(args: Any) -> tuple[Effect, ...]:
        cmd = args.get(keys[0]) if isinstance(args, Mapping) else args
        for k in keys[1:]:
            if cmd is None and isinstance(args, Mapping):
                cmd = args.get(k)
        patch = _patch_in_command(cmd)
        if patch:
            return patch_files(patch)
        text = " ".join(cmd) if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd) else cmd
        return (Effect("exec", summary=text[:200] if isinstance(text, str) else ""),)
    return fn


def _apply_patch_tool(args: Any) -> tuple[Effect, ...]:
    if isinstance(args, Mapping):
        args = args.get("input") or args.get("patch") or ""
    return patch_files(args) if isinstance(args, str) else ()


_EXIT = LazyPattern(r"(?:^|\n)(?:Exit code:|Process exited with code|Command exited with code)\s*(-?\d+)")


def _unwrap(text: str) -> tuple[str, int | None]:
    """(output text, exit code from structured metadata) of a Codex tool output: the JSON form
    `{"output": ..., "metadata": {"exit_code": N}}` or plain text."""
    s = (text or "").strip()
    if s.startswith("{"):
        try:
            value = json.loads(s)
        except ValueError:
            value = None
        if isinstance(value, Mapping):
            meta = value.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, Mapping) else None
            if isinstance(code, int) and not isinstance(code, bool):
                return s, code
            if isinstance(value.get("output"), str):
                return value["output"].strip(), None
    return s, None


def exit_code(text: str) -> int | None:
    """The exit code a Codex command output reports (structured metadata, `Exit code: N`,
    `Process exited with code N`), or None."""
    s, code = _unwrap(text)
    if code is not None:
        return code
    m = _EXIT.search(s)
    return int(m.group(1)) if m else None


def command_outcome(text: str, is_error: bool, effects: tuple = ()) -> str:
    """A command failed if its result is an error or reports a non-zero exit code. A patch
    (the call has file effects) without an exit code must report "Success." (apply_patch)."""
    base = default_outcome(text, is_error)
    if base != OK:
        return base
    code = exit_code(text)
    if code is not None:
        return OK if code == 0 else ERROR
    if any(e.get("kind") == "modify" for e in effects if isinstance(e, Mapping)):
        return OK if _unwrap(text)[0].startswith("Success.") else ERROR
    return OK


# ---------------------------------------------------------------------------------------------
# the built-in descriptions


def _register_all(harness: str, table: Iterable[tuple[str, EffectsFn]],
                  outcome: OutcomeFn | None = None, reads_result: bool = False) -> None:
    for name, fn in table:
        _put(ToolSpec(harness, name, fn, outcome or default_outcome, reads_result))


_register_all("claude-code", (
    ("Read", read_of("file_path", "path")),
    ("Write", _write(("file_path", "path"), ("content",))),
    ("Edit", _edit(("file_path", "path"), "old_string", "new_string")),
    ("MultiEdit", _edit(("file_path", "path"), "old_string", "new_string")),
    ("NotebookEdit", lambda a: (Effect("modify", _arg(a, "notebook_path", "file_path"),
                                       f"notebook {_arg(a, 'edit_mode') or 'replace'} cell",
                                       op="update"),) if _arg(a, "notebook_path", "file_path") else ()),
    ("Bash", kind_of("exec", "command")),
    ("BashOutput", kind_of("exec", "bash_id")),
    ("Grep", kind_of("search", "pattern")),
    ("Glob", kind_of("search", "pattern")),
    ("LS", kind_of("search", "path")),
    ("TodoWrite", _todo_plan),
    ("TaskCreate", _task_create),
    ("TaskUpdate", _task_update),
    ("Task", _spawn),
    ("Agent", _spawn),
    ("WebFetch", kind_of("fetch", "url")),
    ("WebSearch", kind_of("fetch", "query")),
    ("ExitPlanMode", _plan_text),
))

_register_all("codex", (
    ("shell", _shell("command", "cmd")),
    ("container.exec", _shell("command", "cmd")),
    ("local_shell", _shell("command", "cmd")),
    ("exec_command", _shell("cmd", "command")),
    ("shell_command", _shell("command", "cmd")),
    ("write_stdin", kind_of("exec", "chars")),
    ("apply_patch", _apply_patch_tool),
), outcome=command_outcome, reads_result=True)

_register_all("codex", (
    ("update_plan", _update_plan),
    ("view_image", read_of("path")),
    ("read_file", read_of("file_path", "path")),
    ("list_dir", kind_of("search", "dir_path", "path")),
    ("grep_files", kind_of("search", "pattern")),
    ("spawn_agent", _spawn),
    ("wait_agent", kind_of("exec", "id")),
    ("web_search", kind_of("fetch", "query")),
))

_register_all("pi", (
    ("read", read_of("path", "file_path")),
    ("write", _write(("path", "file_path"), ("content",))),
    ("edit", _edit(("path", "file_path"), "oldText", "newText")),
    ("bash", kind_of("exec", "command")),
    ("grep", kind_of("search", "pattern")),
    ("find", kind_of("search", "pattern")),
    ("ls", kind_of("search", "path")),
))


def register_tools(harness: str, table: Iterable[tuple[str, EffectsFn]],
                   outcome: OutcomeFn | None = None, reads_result: bool = False) -> None:
    """Describe a harness's tools at once (the toolsets package uses it for each harness)."""
    _register_all(harness, table, outcome, reads_result)
