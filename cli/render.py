"""Rendering helpers shared by commands: JSON, short ids, colors, and the log graph."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import click

from ctxstore.objects import Event


def emit_json(value: Any, sort_keys: bool = False) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=_default,
                          sort_keys=sort_keys))


def _default(o: Any):
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, bytes):
        return o.hex()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def short(obj_id: str | None, n: int = 12) -> str:
    return obj_id[:n] if obj_id else "-"


def style(text: str, **kw) -> str:
    return click.style(text, **kw)


def _num(v) -> str:
    return f"{v:,}" if isinstance(v, int) else "?"


def count(n: int, noun: str, plural: str = "") -> str:
    """`1 object`, `2 objects`, `1,024 events`: a number and its noun, in the right number."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def _compaction_summary(p) -> str:
    """"summarized 193 events: 155,979 → 1,020 tokens"; a harness that did not record the
    size before its compaction leaves that part out rather than printing "?"."""
    n = p.get("summarized_events")
    head = f"summarized {count(n, 'event')}" if isinstance(n, int) else "compaction"
    before, after = p.get("tokens_before"), p.get("tokens_after")
    if isinstance(before, int) and isinstance(after, int):
        return f"{head}: {before:,} → {after:,} tokens"
    if isinstance(after, int):
        return f"{head} into {after:,} tokens"
    return head


#: Argument keys that say what a tool call is about, most telling first.
_COMMAND_KEYS = ("command", "cmd", "script")
_TARGET_KEYS = ("file_path", "path", "filePath", "notebook_path", "file", "url", "pattern",
                "query", "description", "prompt", "subject", "name", "task")


def one_line(text: str, width: int) -> str:
    """Whitespace collapsed to single spaces, cut to `width` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def _command_text(value: Any) -> str:
    """A shell command given as a string or an argv list (`["bash", "-lc", "pytest -x"]`)."""
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value]
        if len(parts) >= 3 and parts[1] in ("-c", "-lc") and "sh" in parts[0]:
            return parts[2]
        return " ".join(parts)
    return str(value)


def tool_call_summary(name: str, args: Any, cwd: str = "", width: int = 80) -> str:
    """`Bash: pytest -x`, `Edit src/parser.py`, `Grep TODO in src`: a tool call as one line.

    The files a call reads or changes come from the tool semantics registry
    (`ctxstore.state.tools`, which knows each harness's tools and Codex patches), relative to
    the session's cwd; a command is shown after a colon (the first line of a script); a
    search as what it looks for and where; otherwise a path, URL or description, else the
    argument names with the size of list values."""
    from ctxstore.state.tools import call_effects  # start-up: only when a call is shown

    name = name or "?"
    if not isinstance(args, dict) and hasattr(args, "items"):
        args = dict(args.items())
    if not isinstance(args, dict):
        return one_line(f"{name} {args}" if args not in (None, "") else name, width)
    effects = call_effects(name, args)
    files = [_relative(e.path, cwd) for e in effects if e.kind in ("read", "modify") and e.path]
    if files:
        patch = "*** Begin Patch" in json.dumps(args, default=str)  # a Codex apply_patch
        return one_line(f"{name}: apply_patch {' '.join(files)}" if patch else
                        f"{name} {' '.join(files)}", width)
    for key in _COMMAND_KEYS:
        if args.get(key) not in (None, "", [], ()):
            cmd = _command_text(args[key]).strip()
            first, _, rest = cmd.partition("\n")
            return one_line(f"{name}: {first}" + (" …" if rest.strip() else ""), width)
    where = next((args[k] for k in ("path", "file_path") if isinstance(args.get(k), str) and args[k]), "")
    for key in ("pattern", "query"):  # a search: what it looks for, then where
        v = args.get(key)
        if isinstance(v, str) and v.strip():
            return one_line(f"{name} {v}" + (f" in {_relative(where, cwd)}" if where else ""), width)
    for key in _TARGET_KEYS:
        v = args.get(key)
        if isinstance(v, str) and v.strip():
            return one_line(f"{name} {_relative(v, cwd)}", width)
    parts = []
    for k, v in args.items():
        if isinstance(v, (list, tuple)):
            parts.append(f"{k}: {len(v)} item{'s' if len(v) != 1 else ''}")
        elif isinstance(v, (str, int, float, bool)) and len(str(v)) <= 40:
            parts.append(f"{k}={v}")
        else:
            parts.append(k)
    return one_line(f"{name} ({', '.join(parts)})" if parts else name, width)


_OUTPUT_JSON = re.compile(r'^\{"output":"((?:[^"\\]|\\.)*)')


def _unwrap_output(preview: str) -> str:
    """A Codex result (`{"output": "...", "metadata": {...}}`, maybe cut short) as its output
    text, with a non-zero exit code after it; other previews unchanged."""
    if not preview.startswith('{"output":'):
        return preview
    try:
        doc = json.loads(preview)
    except ValueError:
        m = _OUTPUT_JSON.match(preview)
        try:
            return json.loads(f'"{m.group(1)}"') if m else preview
        except ValueError:  # cut inside an escape
            return preview
    if not isinstance(doc, dict) or not isinstance(doc.get("output"), str):
        return preview
    code = (doc.get("metadata") or {}).get("exit_code") if isinstance(doc.get("metadata"), dict) else None
    return doc["output"] + (f"\n(exit {code})" if code not in (None, 0) else "") \
        if doc["output"].strip() else f"(no output{f', exit {code}' if code not in (None, 0) else ''})"


def _snapshot_summary(p, width: int) -> str:
    """A workspace snapshot: why, where, how many files and what changed."""
    if "workspace" not in p:
        return one_line(f"files not recorded: {p.get('workspace_missing', '')}", width)
    what = "partial snapshot" if p.get("partial") else "snapshot"
    counts = "".join(f" {sign}{p[k]}" for sign, k in (("+", "added"), ("~", "modified"),
                                                       ("-", "deleted")) if p.get(k))
    reason = p.get("reason")
    return one_line(f"{what} of {p.get('root', '?')}: {p.get('files', '?')} files{counts}"
                    + (f" ({reason})" if reason and reason != "snapshot" else ""), width)


def event_summary(ev: Event, width: int = 80, cwd: str = "",
                  tool_names: dict[str, str] | None = None) -> str:
    """One line that says what an event was about, from its payload alone (no object reads).
    `tool_names` maps call ids to tool names for results that do not repeat the name."""
    p = ev.payload
    if ev.type == "BranchMerged":
        n = p.get("merged_events")
        done = f"{count(n, 'event')} summarized" if isinstance(n, int) else "? events summarized"
        return f"merged branch {p.get('branch', '')} ({done})"
    if ev.type == "CompactionCompleted":
        return _compaction_summary(p)
    if "workspace" in p or "workspace_missing" in p:
        return _snapshot_summary(p, width)
    if ev.type == "ToolCallRequested":
        return tool_call_summary(str(p.get("name", "")), p.get("args"), cwd, width)
    if ev.type in ("MemoryWritten", "ctx:memory-forgotten", "ctx:memory-used"):
        what = {"MemoryWritten": str(p.get("action", "write")), "ctx:memory-forgotten": "forget",
                "ctx:memory-used": "used"}[ev.type]
        ids = p.get("memory_ids") or [p.get("memory_id", "")]
        return one_line(f"memory {what} {' '.join(str(i)[:12] for i in ids)}"
                        + (f" (supersedes {str(p['supersedes'])[:12]})" if p.get("supersedes") else ""),
                        width)
    name = p.get("name") or (tool_names or {}).get(str(p.get("tool_call_id")), "")
    if ev.type == "ToolCallFinished":
        preview = _unwrap_output(str(p.get("preview") or ""))
        first = next((ln for ln in preview.splitlines() if ln.strip()), "(empty)")
        return one_line(f"{name or 'result'} → {first}", width)
    if ev.type == "ToolCallFailed":
        return one_line(f"{name or 'tool'} failed: {p.get('error', '')}", width)
    for key in ("text", "title", "goal", "name", "path", "command", "check", "error", "summary",
                "branch"):
        v = p.get(key)
        if isinstance(v, str) and v:
            if key == "text" and "<command-name>" in v:  # (import only when there is markup)
                from ctxstore.state.prompts import slash_command
                v = slash_command(v)
            return one_line(v, width)
    if "tool_call_id" in p:
        return f"tool call {p['tool_call_id']}"
    patch = p.get("patch")
    if isinstance(patch, dict) and patch:
        return "patch: " + ", ".join(sorted(patch))
    return ""


def message_summary(msg: Any, width: int = 80, cwd: str = "") -> str:
    """A message as one line: its text, else its tool calls, else `(thinking) ...`."""
    texts = [b.text for b in msg.blocks if b.KIND == "text" and b.text.strip()]
    if texts:
        return one_line(" ".join(texts), width)
    calls = [tool_call_summary(b.name, b.args, cwd, width) for b in msg.blocks
             if b.KIND == "tool_call"]
    if calls:
        return one_line("; ".join(calls), width)
    for b in msg.blocks:
        if b.KIND in ("thinking", "summary") and b.text.strip():
            return one_line(f"({b.KIND}) {b.text}", width)
    return ""


def graph_lines(events: Iterable[tuple[str, Event]],
                parents_of: dict[str, tuple[str, ...]] | None = None
                ) -> Iterable[tuple[str, str, Event]]:
    """(graph prefix, id, event) rows like `git log --graph`, in the given topological order.

    Lanes hold the id each column waits for; a merge opens lanes for its other parents and
    lanes waiting for the same event converge when it is drawn. `parents_of` replaces events'
    own parents (a filtered log draws each event's nearest shown ancestors).
    """
    lanes: list[str | None] = []
    for eid, ev in events:
        if eid not in lanes:
            if None in lanes:
                lanes[lanes.index(None)] = eid
            else:
                lanes.append(eid)
        col = lanes.index(eid)
        dups = [i for i, lane in enumerate(lanes) if lane == eid and i != col]
        if dups:  # several branches converge on this event: draw `|/` first
            yield _connector(lanes, col, dups, "/"), "", ev
            for i in dups:
                lanes[i] = None
            while lanes and lanes[-1] is None:
                lanes.pop()
        row = "".join("*" if i == col else ("|" if lane else " ") for i, lane in enumerate(lanes))
        yield _pad(row), eid, ev
        parents = list(parents_of.get(eid, ev.parents) if parents_of is not None else ev.parents)
        lanes[col] = parents[0] if parents else None
        opened = []
        for p in parents[1:]:
            if p not in lanes:
                lanes.append(p)
                opened.append(len(lanes) - 1)
        if opened:
            yield _connector(lanes, col, opened, "\\"), "", ev
        while lanes and lanes[-1] is None:
            lanes.pop()


def _connector(lanes: list[str | None], col: int, moving: list[int], char: str) -> str:
    """A `|/` or `|\\` line: lanes in `moving` bend toward (or away from) column `col`."""
    cells = [" "] * (2 * len(lanes))
    for i, lane in enumerate(lanes):
        if i in moving:
            cells[2 * i - 1] = char
        elif lane or i == col:
            cells[2 * i] = "|"
    return "".join(cells).rstrip()


def _pad(row: str) -> str:
    return " ".join(row)
