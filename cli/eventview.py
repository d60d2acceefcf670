"""How `ctx show` reads: an event as its message (text, thinking, tool calls with their
arguments, result previews, artifact refs), other objects as indented fields.

Multi-line strings print as indented blocks, never as JSON with `\\n` escapes. The copy of the
source line an importer keeps in `payload.source` is provenance, shown only with `-v`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from .render import one_line, short, style, tool_call_summary

#: Lines of a tool result or artifact shown before "… N more lines".
PREVIEW_LINES = 20


def _block(text: str, indent: str, limit: int | None = None) -> Iterator[str]:
    lines = text.splitlines() or [""]
    shown = lines if limit is None else lines[:limit]
    for ln in shown:
        yield f"{indent}{ln}".rstrip()
    if len(shown) < len(lines):
        yield style(f"{indent}… {len(lines) - len(shown)} more line(s)", dim=True)


def field_lines(value: Any, indent: str = "    ") -> Iterator[str]:
    """A map as `key: value` lines; nested maps and lists indent; long text as a block."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and ("\n" in v or len(v) > 100):
                yield f"{indent}{style(str(k), bold=True)}:"
                yield from _block(v, indent + "  ")
            elif isinstance(v, (dict, list)) and v:
                yield f"{indent}{style(str(k), bold=True)}:"
                yield from field_lines(v, indent + "  ")
            else:
                yield f"{indent}{style(str(k), bold=True)}: {_scalar(v)}"
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)) and v:
                first, *rest = list(field_lines(v, indent + "  ")) or [""]
                yield f"{indent}- {first.lstrip()}"
                yield from rest
            elif isinstance(v, str) and "\n" in v:  # a script or patch: its lines stay indented
                first, *rest = list(_block(v, indent + "  ")) or [""]
                yield f"{indent}- {first.lstrip()}"
                yield from rest
            else:
                yield f"{indent}- {_scalar(v)}"
    else:
        yield from _block(_scalar(value), indent)


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, default=str)


def _artifact_ref(ref: str, artifacts: dict[str, dict]) -> str:
    a = artifacts.get(ref)
    if a is None:
        return f"artifact {short(ref)} (missing)"
    what = ", ".join(x for x in (a.get("kind"), f"{a.get('size', 0):,} bytes", a.get("uri")) if x)
    return f"artifact {style(short(ref), fg='yellow')} ({what}): ctx cat {short(ref)}"


def message_lines(msg: dict, artifacts: dict[str, dict], cwd: str = "",
                  skip_call: str | None = None, tool_name: str = "") -> Iterator[str]:
    """A message's blocks in order. `skip_call` leaves out one tool call (shown above it);
    `tool_name` names the tool whose result the message carries."""
    for b in msg.get("blocks", []):
        kind = b.get("type")
        if kind == "text":
            if b.get("text", "").strip():
                yield from _block(b["text"], "    ")
            else:
                yield style("    (empty text)", dim=True)
        elif kind == "thinking":
            yield style("    thinking:", fg="magenta")
            yield from (style(ln, dim=True) for ln in _block(b.get("text", ""), "      "))
        elif kind == "tool_call":
            if b.get("tool_call_id") == skip_call:
                continue
            yield from call_lines(b.get("name", ""), b.get("args"), b.get("tool_call_id", ""), cwd)
        elif kind == "tool_result":
            label = "error" if b.get("is_error") else "result"
            yield style(f"    {tool_name + ' ' if tool_name else ''}{label}", bold=True,
                        fg="red" if b.get("is_error") else "green") + \
                style(f"  ({b.get('tool_call_id', '')})", dim=True)
            yield from _block(b.get("text") or b.get("preview", ""), "      ", PREVIEW_LINES)
            if b.get("output_ref"):
                yield f"      output: {_artifact_ref(b['output_ref'], artifacts)}"
        elif kind == "summary":
            yield style("    summary:", fg="cyan")
            yield from _block(b.get("text", ""), "      ")
        elif kind in ("file_ref", "image"):
            ref = b.get("artifact_ref")
            target = b.get("uri") or b.get("media_type", "")
            yield f"    {kind}: {target}" + (f"  {_artifact_ref(ref, artifacts)}" if ref else "")
        else:
            yield from field_lines(b)


def call_lines(name: str, args: Any, call_id: str, cwd: str = "") -> Iterator[str]:
    yield style(f"    tool call {tool_call_summary(name, args, cwd, 200)}", fg="blue") + \
        style(f"  ({call_id})", dim=True)
    if isinstance(args, dict) and args:
        yield from field_lines(args, "      ")
    elif args not in (None, "", {}):
        yield from _block(_scalar(args), "      ")


def event_lines(info: dict, names: list[str], verbose: bool, cwd: str = "") -> Iterator[str]:
    """`ctx show EVENT`: a header like `git show`, then what the event says."""
    ev = info["content"]
    payload = dict(ev.get("payload") or {})
    source = payload.pop("source", None)
    dec = style(f" ({', '.join(names)})", fg="cyan") if names else ""
    yield style(f"event {info['id']}", fg="yellow") + dec
    yield f"Type:    {ev['type']}   Actor: {ev['actor']}   Generation: {ev['generation']}"
    yield f"Date:    {ev['ts']}"
    if info.get("session"):
        yield f"Session: {short(info['session'])}"
    if len(ev.get("parents", [])) > 1:
        yield "Merge:   " + " ".join(short(p, 10) for p in ev["parents"])
    yield ""
    msg = info.get("message")
    artifacts = info.get("artifacts", {})
    call_id = None
    if ev["type"] == "ToolCallRequested":
        call_id = payload.get("tool_call_id")
        args = payload.get("args")
        if payload.get("args_truncated"):  # the event keeps a cut copy; the message has them whole
            args = next((b.get("args") for b in (msg or {}).get("blocks", [])
                         if b.get("type") == "tool_call" and b.get("tool_call_id") == call_id), args)
        yield from call_lines(str(payload.get("name", "")), args, call_id or "", cwd)
    if msg is not None:
        name = str(info.get("tool_name") or payload.get("name") or "")
        lines = list(message_lines(msg, artifacts, cwd, skip_call=call_id, tool_name=name))
        if ev["type"] == "ToolCallRequested" and lines:
            yield style(f"    in message {short(msg['id'])} ({msg.get('role')}), with:", dim=True)
        yield from lines
    else:
        rest = {k: v for k, v in payload.items() if ev["type"] != "ToolCallRequested"
                or k not in ("name", "args", "tool_call_id")}
        text = rest.pop("text", None)
        preview = rest.pop("preview", None) if ev["type"].startswith("ToolCall") else None
        if isinstance(text, str) and text:
            yield from _block(text, "    ")
        if isinstance(preview, str):
            yield style("    result:", fg="green")
            yield from _block(preview, "      ", PREVIEW_LINES)
        if rest:
            if text or preview:
                yield ""
            yield from field_lines(rest)
    shown = set()
    for b in (msg or {}).get("blocks", []):
        shown.update(b.get(k) for k in ("output_ref", "artifact_ref") if b.get(k))
    for ref in artifacts:
        if ref not in shown:
            yield f"    {_artifact_ref(ref, artifacts)}"
    causality = {k: v for k, v in (ev.get("causality") or {}).items()}
    if verbose:
        yield ""
        yield style("Causality:", bold=True)
        yield from field_lines(causality or {"(none)": ""})
        if len(ev.get("parents", [])) == 1:
            yield f"    parent: {ev['parents'][0]}"
        if isinstance(source, dict):
            yield style("Source:", bold=True) + \
                f" {source.get('format', '?')} {source.get('file', '?')}:{source.get('line', '?')}"
            line = info.get("source_line")
            if line:
                try:
                    yield from field_lines(json.loads(line), "    ")
                except ValueError:  # a line kept raw because it was not JSON
                    yield from _block(line, "    ")
        elif source is not None:
            yield style("Source:", bold=True)
            yield from field_lines(source)


def object_lines(info: dict, verbose: bool) -> Iterator[str]:
    """`ctx show ID` for an object that is not an event."""
    kind = info["type"]
    content = info["content"]
    yield style(f"{kind} {info['id']}", fg="yellow")
    yield ""
    if kind == "message" and isinstance(content, dict):
        yield f"    role: {content.get('role')}"
        yield from message_lines(content, info.get("artifacts", {}))
    elif kind == "artifact" and isinstance(content, dict):
        yield from field_lines(content)
        preview = info.get("preview")
        yield ""
        if preview is None:
            yield style("    (binary content)", dim=True)
        else:
            yield from _block("\n".join(preview.splitlines()[:PREVIEW_LINES]), "    ")
        yield style(f"    … {content.get('size', 0):,} bytes in all: ctx cat {short(info['id'])}",
                    dim=True)
    elif kind == "blob" and isinstance(content, str):
        yield from _block(content, "    ", None if verbose else 200)
    else:
        yield from field_lines(content if isinstance(content, (dict, list)) else {"value": content})


_HEX_ID = re.compile(r"\b[0-9a-f]{64}\b")


def _item(v: Any, width: int = 100) -> str:
    """A state item (a fact, an error, a file entry, ...) as a short readable phrase:
    `what: text [ids]`, ids shortened to 12 digits."""
    if isinstance(v, dict):
        head = next((str(v[k]) for k in ("name", "kind", "path", "check", "role")
                     if isinstance(v.get(k), str) and v[k]), "")
        text = next((str(v[k]) for k in ("error", "text", "content", "message", "summary",
                                          "result", "status", "uri")
                     if isinstance(v.get(k), str) and v[k]), "")
        ids = [f"{k.removesuffix('_id')} {x[:12]}" for k, x in v.items()
               if isinstance(x, str) and _HEX_ID.fullmatch(x)]
        if not head and not text:
            text = ", ".join(f"{k}={_scalar(x)}" for k, x in v.items()
                             if not isinstance(x, (list, dict)) and not _HEX_ID.fullmatch(str(x)))
        phrase = f"{head}: {one_line(text, width)}" if head and text else (head or one_line(text, width))
        return phrase + (f"  [{', '.join(ids)}]" if ids else "")
    return one_line(_HEX_ID.sub(lambda m: m.group(0)[:12], _scalar(v)), width)


def state_diff_lines(sdiff: dict, stat: bool = False) -> Iterator[str]:
    """`ctx diff`'s state section: one line per changed field or item, ids shortened."""
    for section, change in sdiff.items():
        if section in ("goal", "plan"):
            if stat:
                yield f"  {section}: {len(change)} field(s) changed"
                continue
            for fld, ba in change.items():
                yield (f"  {section}.{fld}: " + style(_item(ba.get("before"), 60), fg="red")
                       + " → " + style(_item(ba.get("after"), 60), fg="green"))
        elif section in ("constraints", "files"):
            for key, lst in change.items():
                yield from _list_lines(f"{section}.{key}", lst, stat)
        else:
            yield from _list_lines(section, change, stat)


def _list_lines(label: str, change: dict, stat: bool) -> Iterator[str]:
    added, removed = change.get("added", []), change.get("removed", [])
    if stat:
        parts = [p for p in (f"+{len(added)}" if added else "", f"-{len(removed)}" if removed else "")
                 if p] or ["reordered"]
        yield f"  {label}: {' '.join(parts)}"
        return
    for v in removed:
        yield style(f"  {label}: - {_item(v)}", fg="red")
    for v in added:
        yield style(f"  {label}: + {_item(v)}", fg="green")
    if change.get("reordered"):
        yield f"  {label}: same items, reordered"
