"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, or
`rollout-*.jsonl.zst` where Codex compressed one: read through zstd, line for line the same).

Codex lines are `{timestamp, type, payload}` with no ids or parents, so a rollout is one
linear history. Conversation content comes from `response_item`; `event_msg` duplicates it
for the UI and is kept as metadata events (`codex:event_msg`). Tool calls pair by `call_id`
across `function_call`, `custom_tool_call` and `tool_search_call` and their outputs.
A `compacted` line becomes a Compaction over the events since the previous one; its
`replacement_history` stays in the record. The first `session_meta` names the session and its
fork (`forked_from_id`) or subagent (`source.subagent.thread_spawn.parent_thread_id`) link,
or, in a rollout ctxstore converted, the ctxstore session it came from (its `ctxstore` key:
the import is then a fork of that session, see ctxstore.convert.import_link).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..convert import PROVENANCE_KEY, import_link
from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
)

FMT = "codex"
KNOWN_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                         "compacted", "world_state", "inter_agent_communication_metadata",
                         # RolloutItem variants added in 2026 (codex-rs protocol): kept as
                         # bookkeeping (`codex:<type>`); usage still comes from token_count
                         "inter_agent_communication", "retained_context", "token_usage_record",
                         "security_risk_score", "realtime_item", "agent_response_observation"})
CALLS = {"function_call": "arguments", "custom_tool_call": "input", "tool_search_call": "arguments"}
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_CONTEXT_TAGS = ("<environment_context", "<user_instructions", "# AGENTS.md", "<permissions")


def _links(meta: dict) -> dict[str, Any]:
    """Fork and subagent links named by a session_meta payload."""
    out: dict[str, Any] = {}
    if isinstance(meta.get("forked_from_id"), str):
        out["forked_from_id"] = meta["forked_from_id"]
    src = meta.get("source")
    sub = src.get("subagent") if isinstance(src, dict) else None
    if isinstance(sub, dict):
        spawn = sub.get("thread_spawn") if isinstance(sub.get("thread_spawn"), dict) else {}
        out["subagent"] = sub
        if isinstance(spawn.get("parent_thread_id"), str):
            out["parent_thread_id"] = spawn["parent_thread_id"]
    if "parent_thread_id" not in out and isinstance(meta.get("parent_thread_id"), str):
        out["parent_thread_id"] = meta["parent_thread_id"]
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text", "")) if isinstance(content.get("text"), str) else ""
    if isinstance(content, list):
        return "\n".join(_text_of(c) for c in content if isinstance(c, (dict, str)))
    return ""


def open_file(ctx: ImportContext, path: Path) -> Rollout:
    """The session a rollout file starts (from its first lines), ready to be fed its lines
    (`run`, or `feed` a line at a time: `ctx import --follow`)."""
    meta: dict = {}
    first_ts = ""
    title = fallback = ""
    for rec in peek_jsonl(path, limit=400):
        first_ts = first_ts or rec.get("timestamp", "")
        p = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        if rec.get("type") == "session_meta" and not meta:
            meta = p
        elif rec.get("type") == "response_item" and p.get("type") == "message" \
                and p.get("role") == "user":
            title = title_of(prompt_text(_text_of(p.get("content"))))
        elif rec.get("type") == "event_msg" and p.get("type") == "user_message" \
                and not fallback and isinstance(p.get("message"), str):
            fallback = title_of(prompt_text(p["message"]))  # Desktop / VS Code rollouts
        if meta and title:
            break
    title = title or fallback
    stem = path.name[:-len(".jsonl.zst")] if path.name.endswith(".jsonl.zst") else path.stem
    source = next((meta[k] for k in ("id", "session_id") if isinstance(meta.get(k), str)
                   and meta[k]), stem)  # current releases write `session_id`
    links = _links(meta)
    parent_src = links.get("parent_thread_id") or links.get("forked_from_id") or ""
    kind = "subagent" if "subagent" in links else "fork" if "forked_from_id" in links else "main"
    parent = ctx.find_session(FMT, parent_src) if parent_src else ""
    if parent_src and not parent:
        ctx.report.notes.append(f"{path.name}: parent thread {parent_src} not imported; "
                                f"link kept in the session origin only")
    # a rollout ctx resume/export wrote links back to the session it came from
    link = {} if parent_src else import_link(ctx.repo, meta.get(PROVENANCE_KEY))
    b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=source,
                       ts=meta.get("timestamp") or first_ts, nonce=source,
                       origin={"format": FMT, "id": source, **links, **link.pop("origin", {})},
                       kind=link.pop("kind", kind), parent_session=link.pop("parent_session", parent),
                       spawn_event=link.pop("spawn_event", ""), cwd=str(meta.get("cwd") or ""),
                       title=title)
    return Rollout(b)


def import_file(ctx: ImportContext, path: Path) -> None:
    rollout = open_file(ctx, path)
    rollout.run(path)
    rollout.b.finish()


class Rollout:
    def __init__(self, b: SessionBuilder) -> None:
        self.b = b
        self.calls: dict[str, tuple[str, str]] = {}
        self.model = ""
        self.ghosts = None  # GhostCommits, on the first ghost_snapshot
        #: the prompt text of this turn and which record said it first ("item" for a
        #: response_item user message, "event" for an event_msg user_message): Codex CLI writes
        #: both, Codex Desktop and the IDE extensions only the event_msg (see `user_message`)
        self.prompt: tuple[str, str] | None = None

    def run(self, path: Path) -> None:
        for n, text, rec in iter_jsonl(self.b.ctx, path):
            self.feed(n, text, rec)

    def feed(self, n: int, text: str, rec: Any) -> None:
        b = self.b
        b.begin(n, rec, text)
        if rec is MALFORMED:
            b.append(f"{FMT}:malformed", "system", {})
            return
        t = rec.get("type")
        p = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        ts = b.ts(rec.get("timestamp"))
        if t == "response_item":
            self.item(p, n, ts)
        elif t == "compacted":
            self.compacted(p, ts)
        else:
            if t not in KNOWN_TYPES:
                b.ctx.warn(b.file, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
            payload = {"subtype": p["type"]} if isinstance(p.get("type"), str) else {}
            if t == "turn_context" and isinstance(p.get("model"), str):
                payload["model"] = self.model = p["model"]
            elif t == "event_msg":
                if p.get("type") == "user_message" and self.user_message(p, ts):
                    return
                self.annotate(p, payload)
            b.append(f"{FMT}:{t if isinstance(t, str) and t else 'unknown'}", "system",
                     payload, ts=ts)

    def user_message(self, p: dict, ts: str) -> bool:
        """An event_msg user_message is the turn's prompt when no response_item user message
        said it (Codex Desktop and the VS Code extension write only this record); when the CLI
        wrote both, in either order, the prompt is counted once. Returns True when it appended
        the prompt."""
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        if not text.strip() or text.lstrip().startswith(_CONTEXT_TAGS):
            return False
        if self.prompt == (text.strip(), "item"):
            self.prompt = None  # the response_item said it already
            return False
        b = self.b
        blocks: list = [TextBlock(text)]
        for img in p.get("images") or []:
            if isinstance(img, str):
                blocks.append(ImageBlock(uri=img))
        mid = b.message("user", blocks, meta={"kind": "user_message"})
        b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)
        self.prompt = (text.strip(), "event")
        return True

    def annotate(self, p: dict, payload: dict) -> None:
        """What stats and titles need from an event_msg: the running token total (with the
        model of the turn it closes) and the thread name."""
        kind = p.get("type")
        info = p.get("info") if isinstance(p.get("info"), dict) else {}
        if kind == "token_count" and isinstance(info.get("total_token_usage"), dict):
            payload["usage_total"] = info["total_token_usage"]
            if self.model:
                payload["model"] = self.model
        elif kind == "thread_name_updated" and isinstance(p.get("thread_name"), str):
            payload["title"] = preview(p["thread_name"])

    def item(self, p: dict, n: int, ts: str) -> None:
        b = self.b
        kind = p.get("type")
        if kind == "message":
            self.message(p, ts)
        elif kind == "reasoning":
            summary = "\n".join(_text_of(s) for s in p.get("summary") or [] if isinstance(s, dict))
            mid = b.message("assistant", [ThinkingBlock(summary)], meta={"kind": "reasoning"})
            b.append("ModelResponseReceived", "model", {"kind": "reasoning"}, {"message_id": mid}, ts)
        elif kind in CALLS and isinstance(p.get("call_id"), str):
            self.call(p, kind, ts)
        elif kind in OUTPUTS and isinstance(p.get("call_id"), str):
            self.output(p, n, ts)
        elif kind == "ghost_snapshot":  # a commit Codex made in the user's repository
            if self.ghosts is None:
                from ..workspace.imported import GhostCommits

                self.ghosts = GhostCommits(b, b.cwd)
            b.append(f"{FMT}:response_item", "system",
                     {"subtype": kind, **self.ghosts.payload(p)}, ts=ts)
        else:
            b.append(f"{FMT}:response_item", "system",
                     {"subtype": kind} if isinstance(kind, str) else {}, ts=ts)

    def message(self, p: dict, ts: str) -> None:
        b = self.b
        role = p.get("role") if isinstance(p.get("role"), str) else ""
        blocks: list = []
        for c in p.get("content") if isinstance(p.get("content"), list) else []:
            if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text"):
                blocks.append(TextBlock(str(c.get("text", ""))))
            elif isinstance(c, dict) and c.get("type") == "input_image":
                blocks.append(ImageBlock(uri=str(c.get("image_url") or "")))
        text = "\n".join(x.text for x in blocks if isinstance(x, TextBlock))
        meta = {"id": p["id"]} if isinstance(p.get("id"), str) else {}
        if role == "assistant":
            mid = b.message("assistant", blocks, meta=meta)
            b.append("ModelResponseReceived", "model", {"text": preview(text)}, {"message_id": mid}, ts)
        elif role == "user" and not text.lstrip().startswith(_CONTEXT_TAGS):
            if self.prompt is not None and self.prompt == (text.strip(), "event"):
                self.prompt = None  # the event_msg before it was this turn's prompt already
                b.append(f"{FMT}:response_item", "system",
                         {"subtype": "message", "role": "user", "prompt_recorded": True}, ts=ts)
                return
            mid = b.message("user", blocks, meta=meta)
            b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)
            self.prompt = (text.strip(), "item")
        else:
            msg_role = role if role in ("system", "developer", "user") else "custom"
            mid = b.message(msg_role, blocks, meta=meta)
            b.append("MessageAdded", "system" if msg_role != "user" else "user",
                     {"role": msg_role, "text": preview(text)}, {"message_id": mid}, ts)

    def call(self, p: dict, kind: str, ts: str) -> None:
        b = self.b
        tcid, name = p["call_id"], str(p.get("name") or kind)
        args: Any = p.get(CALLS[kind])
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        if args is None:
            args = {}
        mid = b.message("assistant", [ToolCallBlock(tcid, name, args)], meta={"kind": kind})
        b.append("ModelResponseReceived", "model", {"kind": kind}, {"message_id": mid}, ts)
        eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                       {"tool_call_id": tcid, "message_id": mid}, ts)
        self.calls[tcid] = (eid, name)

    def output(self, p: dict, n: int, ts: str) -> None:
        b = self.b
        tcid = p["call_id"]
        call = self.calls.get(tcid)
        if call is None:
            b.ctx.warn(b.file, n, f"tool result without its call (call_id {tcid!r})")
            b.append(f"{FMT}:response_item", "tool", {"subtype": p.get("type")}, ts=ts)
            return
        requested, name = call
        out = p.get("output")
        text = out if isinstance(out, str) else _text_of(out) if out is not None else ""
        b.tool_result(tcid, name, requested, text, False, ts)

    def compacted(self, p: dict, ts: str) -> None:
        b = self.b
        summary = p.get("message") if isinstance(p.get("message"), str) else ""
        mid = b.message("summary", [TextBlock(summary)], meta={"kind": "compacted"})
        extra = {k: p[k] for k in ("window_id", "window_number", "previous_window_id",
                                   "first_window_id") if isinstance(p.get(k), (str, int))}
        extra["replacement_items"] = len(p.get("replacement_history") or [])
        b.compaction(summary, b.tip, ts, extra=extra, message_id=mid)
