"""Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`): the tree half.

Events follow the file order on one line of history; a new line (a branch) starts only at a
real rewind: a typed user prompt whose parent already led to another typed prompt. That rule
ignores the parentUuid forks Claude Code writes for parallel tool calls and hook progress,
and keeps each rewind as `rewind-<uuid8>` with `main` the line that holds the last record.
A `compact_boundary` (parentUuid null) simply continues the line it logically follows.

Subagents become child sessions (kind "subagent") linked to the spawning Task/Agent call:
inline sidechains (1.0.x) grouped by their root, `agent-*.jsonl` files beside the session
(2.0.x) and `<session>/subagents/agent-*.jsonl` + `.meta.json` (2.1.x).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .claude_map import FMT, FileState, content_text, is_prompt, map_record
from .common import MALFORMED, ImportContext, SessionBuilder, good_ts, iter_jsonl, peek_jsonl

KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "attachment", "progress", "file-history-snapshot",
    "queue-operation", "permission-mode", "last-prompt", "mode", "agent-name", "custom-title",
    "ai-title", "frame-link", "pr-link", "started", "result", "relocated", "worktree-state",
    "bridge-session", "atis-latch",
})


def is_agent_file(path: Path) -> bool:
    return path.name.startswith("agent-")


def _head(path: Path) -> dict[str, Any]:
    """Session id, first timestamp, cwd, agent id and first prompt from the file's first lines."""
    out: dict[str, Any] = {"session": "", "ts": "", "cwd": "", "agent": "", "prompt": None}
    for rec in peek_jsonl(path):
        if not out["session"] and isinstance(rec.get("sessionId"), str):
            out["session"] = rec["sessionId"]
        snap = rec.get("snapshot") if isinstance(rec.get("snapshot"), dict) else {}
        ts = good_ts(rec.get("timestamp")) or good_ts(snap.get("timestamp"))
        if not out["ts"] and ts:
            out["ts"] = ts
        if not out["cwd"] and isinstance(rec.get("cwd"), str):
            out["cwd"] = rec["cwd"]
        if not out["agent"] and isinstance(rec.get("agentId"), str):
            out["agent"] = rec["agentId"]
        if out["prompt"] is None and is_prompt(rec):
            out["prompt"] = content_text(rec["message"].get("content"))
    return out


def _title(prompt: str | None) -> str:
    first = (prompt or "").strip().splitlines()
    return first[0][:80] if first else ""


class _Entry:
    __slots__ = ("builder", "parent", "event", "gen", "marked")

    def __init__(self, builder, parent, event, gen):
        self.builder, self.parent, self.event, self.gen = builder, parent, event, gen
        self.marked = False


class ClaudeFile:
    def __init__(self, ctx: ImportContext, path: Path) -> None:
        self.ctx = ctx
        self.path = path
        self.name = path.name
        self.index: dict[str, _Entry] = {}
        self.groups: dict[str, SessionBuilder] = {}
        self.builders: list[SessionBuilder] = []

    def run(self) -> None:
        head = _head(self.path)
        source = head["session"] or self.path.stem
        self.fs = FileState(source)
        self.main = self._open_main(head, source)
        self.builders.append(self.main)
        for n, text, rec in iter_jsonl(self.ctx, self.path):
            if rec is MALFORMED:
                self.main.begin(n, rec, text)
                self.main.append(f"{FMT}:malformed", "system", {})
                continue
            self._one(n, text, rec)
        for b in self.builders:
            b.finish()

    def _open_main(self, head: dict, source: str) -> SessionBuilder:
        common = dict(fmt=FMT, file=self.name, source_id=source, ts=head["ts"], cwd=head["cwd"],
                      title=_title(head["prompt"]))
        if not is_agent_file(self.path):
            return SessionBuilder(self.ctx, nonce=source, origin={"format": FMT, "id": source},
                                  **common)
        agent = head["agent"] or self.path.stem[len("agent-"):]
        meta = _meta(self.path)
        parent = self.ctx.find_session(FMT, source)
        spawn = self.ctx.agent_spawns.get((source, agent), "")
        if not spawn and head["prompt"] is not None:
            queue = self.ctx.task_prompts.get((source, head["prompt"]), [])
            spawn = queue.pop(0) if queue else ""
        if not parent:
            self.ctx.warn(self.name, 1, f"subagent of session {source} whose parent transcript "
                                        f"was not imported; imported without a parent link")
        origin = {"format": FMT, "id": source, "agent_id": agent, "layout": _layout(self.path)}
        if meta:
            origin["meta"] = meta
            common["title"] = str(meta.get("description", "")) or common["title"]
        return SessionBuilder(self.ctx, nonce=f"{source}/agent-{agent}", origin=origin,
                              kind="subagent", parent_session=parent, spawn_event=spawn,
                              agent=agent, **common)

    def _one(self, n: int, text: str, rec: dict) -> None:
        t = rec.get("type")
        if t not in KNOWN_TYPES:
            self.ctx.warn(self.name, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) else ""
        b = self.main
        if uuid and rec.get("isSidechain") and not is_agent_file(self.path):
            b = self._sidechain(rec, uuid)
        b.begin(n, rec, text)
        parent = self._position(b, rec, uuid, n) if uuid else None
        map_record(b, self.fs, rec, n)
        if uuid:
            self.index[uuid] = _Entry(b, parent, b.tip, b.tip_gen)
            if is_prompt(rec):
                self._mark(parent)

    def _position(self, b: SessionBuilder, rec: dict, uuid: str, n: int) -> str | None:
        """Fork a new line if this record is a real rewind; returns its (logical) parent."""
        line = b.lines[b.cur]
        if not line[2]:
            line[2] = uuid[:8]
        parent = rec.get("parentUuid")
        if parent is None:
            parent = rec.get("logicalParentUuid")
        if not isinstance(parent, str):
            return None
        ent = self.index.get(parent)
        if ent is None:
            self.ctx.warn(self.name, n, f"dangling parent {parent!r} (no such uuid earlier in "
                                        f"the file); attached after the previous record")
            return None
        if ent.builder is b and ent.marked and is_prompt(rec):
            b.fork(ent.event, ent.gen, uuid[:8])
        return parent

    def _mark(self, parent: str | None) -> None:
        while parent:
            ent = self.index.get(parent)
            if ent is None or ent.marked:
                return
            ent.marked = True
            parent = ent.parent

    def _sidechain(self, rec: dict, uuid: str) -> SessionBuilder:
        parent = rec.get("parentUuid")
        ent = self.index.get(parent) if isinstance(parent, str) else None
        if ent is not None and ent.builder is not self.main:
            return ent.builder
        key = rec.get("agentId") if isinstance(rec.get("agentId"), str) else uuid
        if key in self.groups:
            return self.groups[key]
        src = self.fs.source_id
        spawn = self.ctx.agent_spawns.get((src, key), "")
        msg = rec.get("message")
        if not spawn and rec.get("type") == "user" and isinstance(msg, dict):
            queue = self.ctx.task_prompts.get((src, content_text(msg.get("content"))), [])
            spawn = queue.pop(0) if queue else ""
        if not spawn:
            self.ctx.report.notes.append(f"{self.name}: sidechain {key} has no matching "
                                         f"Task/Agent call; linked to its session only")
        b = SessionBuilder(self.ctx, fmt=FMT, file=self.name, source_id=src,
                           ts=rec.get("timestamp") or self.main.last_ts,
                           nonce=f"{src}/sidechain/{key}", kind="subagent",
                           origin={"format": FMT, "id": src, "agent_id": key, "layout": "inline"},
                           parent_session=self.main.sid, spawn_event=spawn, agent=key,
                           cwd=rec.get("cwd") if isinstance(rec.get("cwd"), str) else "")
        self.groups[key] = b
        self.builders.append(b)
        return b


def _layout(path: Path) -> str:
    return "subagents-dir" if path.parent.name == "subagents" else "beside-session"


def _meta(path: Path) -> dict:
    meta_path = path.with_suffix(".meta.json")
    try:
        value = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def import_file(ctx: ImportContext, path: Path) -> None:
    ClaudeFile(ctx, path).run()
