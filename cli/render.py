"""Rendering helpers shared by commands: JSON, short ids, colors, and the log graph."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

import click

from ctxstore.objects import Event


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=_default))


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


def color_enabled() -> bool:
    return sys.stdout.isatty()


def style(text: str, **kw) -> str:
    return click.style(text, **kw)


def _num(v) -> str:
    return f"{v:,}" if isinstance(v, int) else "?"


def _compaction_summary(p) -> str:
    """"summarized 193 events: 155,979 → 1,020 tokens"; a harness that did not record the
    size before its compaction leaves that part out rather than printing "?"."""
    n = p.get("summarized_events")
    head = f"summarized {_num(n)} events" if isinstance(n, int) else "compaction"
    before, after = p.get("tokens_before"), p.get("tokens_after")
    if isinstance(before, int) and isinstance(after, int):
        return f"{head}: {before:,} → {after:,} tokens"
    if isinstance(after, int):
        return f"{head} into {after:,} tokens"
    return head


def event_summary(ev: Event, width: int = 80) -> str:
    """One line that says what an event was about."""
    p = ev.payload
    if ev.type == "BranchMerged":
        return f"merged branch {p.get('branch', '')} ({p.get('merged_events', '?')} events summarized)"
    if ev.type == "CompactionCompleted":
        return _compaction_summary(p)
    for key in ("text", "title", "goal", "name", "path", "check", "error", "summary", "branch"):
        v = p.get(key)
        if isinstance(v, str) and v:
            text = " ".join(v.split())
            return text if len(text) <= width else text[: width - 1] + "…"
    if "tool_call_id" in p:
        return f"tool call {p['tool_call_id']}"
    patch = p.get("patch")
    if isinstance(patch, dict) and patch:
        return "patch: " + ", ".join(sorted(patch))
    return ""


def graph_lines(events: Iterable[tuple[str, Event]]) -> Iterable[tuple[str, str, Event]]:
    """(graph prefix, id, event) rows like `git log --graph`, in the given topological order.

    Lanes hold the id each column waits for; a merge opens lanes for its other parents and
    lanes waiting for the same event converge when it is drawn.
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
        parents = list(ev.parents)
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
