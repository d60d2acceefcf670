"""Claude Code records -> ctxstore events (the mapping half; claude_code.py does the tree).

One record becomes one or more events; the first names the record. Tool results pair with
their call by `tool_use_id` through a per-file table, never through `parentUuid`. An API
response split over several `assistant` lines (same `message.id`) gives one
ModelResponseReceived per line with `response_id` and `part`, each with the usage its line
carries (the newest counts), so the lines keep their own places in the tree while the response
stays identifiable.
"""

from __future__ import annotations

from typing import Any

from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from .common import SessionBuilder, preview, tool_requested_payload
from .idtable import CallTable, IdCounts

FMT = "claude-code"
SPAWN_TOOLS = frozenset({"Task", "Agent"})


class FileState:
    """Per-file tables the mapping needs: tool calls a result may answer and response part
    counters. Every call id and response id of a file stays in them until the file is done,
    so they are flat id tables (idtable.py), not dicts of strings; the live importer puts its
    persistent maps in their place."""

    def __init__(self, source_id: str, lines: int = 0) -> None:
        """`lines`: about how many lines the file has (a call every ~3 lines, a response every
        ~6 size the tables from the start)."""
        self.source_id = source_id
        self.calls: Any = CallTable(expect=lines // 4)  # tool_use_id -> (requested event, name)
        self.parts: Any = IdCounts(expect=lines // 8)  # message.id -> lines seen


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def is_prompt(rec: dict) -> bool:
    """A user-typed prompt: a `user` line with text, not a tool result, meta note or summary."""
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return False
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        return any(isinstance(b, dict) and b.get("type") != "tool_result" for b in content)
    return False


def map_record(b: SessionBuilder, fs: FileState, rec: dict, line: int) -> None:
    t = rec.get("type")
    ts = b.ts(rec.get("timestamp"))
    if t == "user" and isinstance(rec.get("message"), dict):
        _user(b, fs, rec, line, ts)
    elif t == "assistant" and isinstance(rec.get("message"), dict):
        _assistant(b, fs, rec, ts)
    elif t == "system" and rec.get("subtype") == "compact_boundary":
        meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
        b.pending_boundary = b.append("CompactionStarted", "system",
                                      {"trigger": meta.get("trigger", ""),
                                       "pre_tokens": meta.get("preTokens", 0)}, ts=ts)
        b.pending_meta = meta
    else:
        payload: dict[str, Any] = {}
        for key in ("subtype", "level", "operation"):
            if isinstance(rec.get(key), str):
                payload[key] = rec[key]
        if t == "summary" and isinstance(rec.get("summary"), str):
            payload["text"] = preview(rec["summary"])
        for key in ("customTitle", "aiTitle"):  # custom-title / ai-title records
            if isinstance(rec.get(key), str):
                payload["title"] = preview(rec[key])
        if t == "file-history-snapshot":  # the files Claude backed up, if still on disk
            from ..workspace.imported import claude_file_history

            payload.update(claude_file_history(b, rec, b.source_id, b.cwd))
        b.append(f"{FMT}:{t if isinstance(t, str) and t else 'unknown'}", "system", payload, ts=ts)


def _user(b: SessionBuilder, fs: FileState, rec: dict, line: int, ts: str) -> None:
    content = rec["message"].get("content")
    blocks = content if isinstance(content, list) else []
    results = [x for x in blocks if isinstance(x, dict) and x.get("type") == "tool_result"]
    wrote = False
    if isinstance(content, str) or len(results) < len(blocks):
        wrote = _user_text(b, rec, content, ts)
    for res in results:
        wrote = _tool_result(b, fs, rec, res, line, ts) or wrote
    if not wrote:
        b.append(f"{FMT}:user", "user", {}, ts=ts)


def _user_text(b: SessionBuilder, rec: dict, content: Any, ts: str) -> bool:
    parts: list = []
    if isinstance(content, str):
        parts.append(TextBlock(content))
    else:
        for blk in content:
            if not isinstance(blk, dict):
                continue
            if blk.get("type") == "text":
                parts.append(TextBlock(str(blk.get("text", ""))))
            elif blk.get("type") == "image":
                src = blk.get("source") if isinstance(blk.get("source"), dict) else {}
                parts.append(ImageBlock(media_type=str(src.get("media_type", "")),
                                        uri=str(src.get("url", ""))))
    if not parts:
        return False
    text = "\n".join(p.text for p in parts if isinstance(p, TextBlock))
    if rec.get("isCompactSummary"):
        mid = b.message("summary", parts, meta={"uuid": rec.get("uuid", "")})
        meta = b.pending_meta or {}
        upto = b.pending_boundary or b.tip
        b.compaction(text, upto, ts, tokens_before=meta.get("preTokens", 0) or 0,
                     extra={"trigger": meta.get("trigger", "")} if meta.get("trigger") else None,
                     message_id=mid)
        b.pending_boundary = ""
        b.pending_meta = {}
        return True
    role_meta = {"uuid": rec.get("uuid", "")}
    mid = b.message("user", parts, meta=role_meta)
    if rec.get("isMeta"):
        b.append("MessageAdded", "user", {"role": "user", "text": preview(text), "meta": True},
                 {"message_id": mid}, ts)
    else:
        b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)
    return True


def _tool_result(b: SessionBuilder, fs: FileState, rec: dict, res: dict, line: int,
                 ts: str) -> bool:
    # newer Claude Code also names the call on the record (sourceToolUseID)
    tcid = str(res.get("tool_use_id") or rec.get("sourceToolUseID") or "")
    call = fs.calls.get(tcid) if tcid else None
    if call is None:
        b.ctx.warn(b.file, line, f"tool result without its call (tool_use_id {tcid!r})")
        return False
    requested, name = call
    out = res.get("content")
    text = out if isinstance(out, str) else content_text(out)
    b.tool_result(tcid, name, requested, text, bool(res.get("is_error")), ts,
                  meta={"uuid": rec.get("uuid", "")})
    tur = rec.get("toolUseResult")
    if name in SPAWN_TOOLS and isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
        b.ctx.agent_spawns[(fs.source_id, tur["agentId"])] = requested
    return True


def _assistant(b: SessionBuilder, fs: FileState, rec: dict, ts: str) -> None:
    msg = rec["message"]
    content = msg.get("content")
    blocks: list = []
    calls: list[dict] = []
    for blk in content if isinstance(content, list) else []:
        if not isinstance(blk, dict):
            continue
        kind = blk.get("type")
        if kind == "text":
            blocks.append(TextBlock(str(blk.get("text", ""))))
        elif kind == "thinking":
            blocks.append(ThinkingBlock(str(blk.get("thinking", "")), str(blk.get("signature", ""))))
        elif kind == "redacted_thinking":
            blocks.append(ThinkingBlock("", str(blk.get("data", ""))))
        elif kind == "tool_use":
            blocks.append(ToolCallBlock(str(blk.get("id", "")), str(blk.get("name", "")),
                                        blk.get("input", {})))
            calls.append(blk)
    if isinstance(content, str):
        blocks.append(TextBlock(content))
    rid = msg.get("id") if isinstance(msg.get("id"), str) else ""
    part = fs.parts.get(rid, 0) if rid else 0
    if rid:
        fs.parts[rid] = part + 1
    meta = {k: v for k, v in (("response_id", rid), ("request_id", rec.get("requestId")),
                              ("model", msg.get("model")), ("uuid", rec.get("uuid")))
            if isinstance(v, str) and v}
    mid = b.message("assistant", blocks, meta=meta)
    payload: dict[str, Any] = {"text": preview("\n".join(x.text for x in blocks
                                                          if isinstance(x, TextBlock)))}
    if isinstance(msg.get("model"), str):
        payload["model"] = msg["model"]
    if rid:
        payload["response_id"], payload["part"] = rid, part
    if isinstance(msg.get("usage"), dict):
        # every line of a split response repeats its usage, the newest line's being final:
        # stats count one usage per response_id, the newest (trace.py)
        payload["usage"] = msg["usage"]
    if isinstance(rec.get("costUSD"), (int, float)):
        payload["cost_usd"] = rec["costUSD"]
    b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
    for blk in calls:
        tcid = str(blk.get("id", ""))
        name = str(blk.get("name", ""))
        args = blk.get("input", {})
        eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                       {"tool_call_id": tcid, "message_id": mid}, ts)
        if tcid:  # a call without an id cannot be answered: nothing may pair with it
            fs.calls[tcid] = (eid, name)
        prompt = args.get("prompt") if isinstance(args, dict) else None
        if name in SPAWN_TOOLS and isinstance(prompt, str):
            b.ctx.task_prompts.setdefault((fs.source_id, prompt), []).append(eid)
