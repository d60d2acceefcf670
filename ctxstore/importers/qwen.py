"""Qwen Code chat recordings (`$QWEN_RUNTIME_DIR|$QWEN_HOME|~/.qwen/projects/<cwd>/chats/<id>.jsonl`).

qwen-code (a Gemini CLI fork) writes one JSONL file per session through its
ChatRecordingService: every record is `{uuid, parentUuid, sessionId, timestamp, type: user |
assistant | tool_result | system, subtype?, cwd, version, gitBranch?, message?: {role, parts},
usageMetadata?, model?, toolCallResult?, systemPayload?}`, `parts` in the Gemini API shape
(`text`, `thought: true`, `functionCall {id, name, args}`, `functionResponse {id, name,
response}`, `inlineData`). Records form a uuid/parentUuid tree: each record's parent is the
record written before it, except after `/rewind` (the `rewind` system record re-roots the
chain at the record before the rewound user turn, so everything after sits on a dead branch).
A record whose parent is not the previous record is therefore a rewind: a new line starts at
its parent and `main` is the line holding the last record. Title and source anchors that
Qwen re-appends without moving its tail (`custom_title`, `session_source`) do not fork, nor does
a record written again under the uuid and parent of the record before it (its newer copy).

Tokens come from `usageMetadata` on assistant records (Gemini's shape): input =
promptTokenCount (cached included; cachedContentTokenCount is the cached part), output =
candidatesTokenCount + thoughtsTokenCount. `ui_telemetry` api_response records repeat those
numbers for Qwen's own /stats and are kept as bookkeeping, not counted. `chat_compression`
records become compactions. Records of a subagent written inline (`isSidechain`, `agentId`)
become a child session of that agent. The session's title is its first prompt, which does
not change as the file grows (a ctx session's id covers its title, so a title that changed
between two imports of a growing file would make a second session); Qwen's own titles
(`custom_title`, auto-generated or /rename) are kept on their events (`payload.title`) and name
the session only when it has no prompt (read from the last 64 KiB, where Qwen re-anchors them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from ..userfiles import open_input
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    as_int,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
    usage_payload,
)

FMT = "qwen"
LABEL = "Qwen Code"
KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
#: metadata Qwen re-appends without making it the parent of the next record
SIDE_SUBTYPES = frozenset({"custom_title", "session_source"})
#: user records that are not the user typing (background notices, cron, Goal runtime)
NOTICE_SUBTYPES = frozenset({"notification", "cron", "goal_runtime", "background_task_completed"})
TAIL_BYTES = 64 * 1024


# ---------------------------------------------------------------------------------------------
# the harness surface

def _is_qwen(rec: Mapping) -> bool:
    """A Qwen chat record: a uuid-tree record with a Gemini-style `message.parts` body, a
    `systemPayload`, or the `tool_result` type (Claude Code lines have `message.content` and
    neither of the others; Gemini CLI lines have no uuid)."""
    if not isinstance(rec.get("uuid"), str) or "parentUuid" not in rec:
        return False
    msg = rec.get("message")
    if isinstance(msg, Mapping) and isinstance(msg.get("parts"), list):
        return True
    return rec.get("type") == "tool_result" or isinstance(rec.get("systemPayload"), Mapping)


def sniff(path: Path) -> bool:
    if not path.is_file() or not path.name.endswith(".jsonl"):
        return False
    try:
        for i, rec in enumerate(peek_jsonl(path, limit=20)):
            if _is_qwen(rec):
                return True
            if i >= 20:
                break
    except OSError:
        return False
    return False


def known(rec: dict) -> bool:
    return isinstance(rec.get("uuid"), str) and rec.get("type") in KNOWN_TYPES


def session_units(root: Path) -> list[Path]:
    return []  # chat files are *.jsonl: the generic walk finds them


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """`<runtime>/projects`: runtime = $QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen
    (qwen-code Storage.getRuntimeBaseDir; the `advanced.runtimeOutputDir` setting can move it
    too, and is not read here)."""
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        value = env.get(var)
        if value:
            return [Path(value).expanduser() / "projects"]
    return [home / ".qwen" / "projects"]


def import_file(ctx: ImportContext, path: Path) -> None:
    qf = open_file(ctx, path)
    qf.run(path)
    qf.b.finish()


# ---------------------------------------------------------------------------------------------
# reading parts

def _parts(rec: Mapping) -> list[dict]:
    msg = rec.get("message")
    parts = msg.get("parts") if isinstance(msg, Mapping) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _is_context(text: str) -> bool:
    return text.lstrip().startswith("<qwen:")


def user_text(rec: Mapping) -> str:
    """What the user typed: the record's `systemPayload.displayText` when Qwen kept it, else its
    text parts without the hook context Qwen adds in `<qwen:…>` tags."""
    sp = rec.get("systemPayload")
    if isinstance(sp, Mapping) and isinstance(sp.get("displayText"), str):
        return sp["displayText"]
    return "\n".join(p["text"] for p in _parts(rec) if isinstance(p.get("text"), str)
                     and not p.get("thought") and not _is_context(p["text"]))


def _usage(meta: Any) -> dict[str, int] | None:
    if not isinstance(meta, Mapping):
        return None
    n = meta.get
    return usage_payload(as_int(n("promptTokenCount")), as_int(n("cachedContentTokenCount")),
                         as_int(n("candidatesTokenCount")) + as_int(n("thoughtsTokenCount")))


def _blocks(parts: list[dict]) -> tuple[list, list[ToolCallBlock], str]:
    """(blocks, calls, visible text) of a model turn's parts."""
    blocks: list = []
    calls: list[ToolCallBlock] = []
    texts: list[str] = []
    for i, p in enumerate(parts):
        if isinstance(p.get("functionCall"), Mapping):
            fc = p["functionCall"]
            tcid = fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else f"call-{i}"
            args = fc.get("args") if fc.get("args") is not None else {}
            blk = ToolCallBlock(tcid, str(fc.get("name") or ""), args)
            blocks.append(blk)
            calls.append(blk)
        elif isinstance(p.get("text"), str):
            if p.get("thought"):
                sig = p.get("thoughtSignature")
                blocks.append(ThinkingBlock(p["text"], sig if isinstance(sig, str) else ""))
            else:
                blocks.append(TextBlock(p["text"]))
                texts.append(p["text"])
        elif isinstance(p.get("inlineData"), Mapping):
            blocks.append(ImageBlock(media_type=str(p["inlineData"].get("mimeType") or "")))
        elif isinstance(p.get("fileData"), Mapping):
            fd = p["fileData"]
            blocks.append(ImageBlock(media_type=str(fd.get("mimeType") or ""),
                                     uri=str(fd.get("fileUri") or "")))
    return blocks, calls, "\n".join(texts)


def _response_text(resp: Any) -> str:
    if isinstance(resp, str):
        return resp
    if isinstance(resp, Mapping):
        for key in ("output", "error", "content", "result"):
            v = resp.get(key)
            if isinstance(v, str):
                return v
    try:
        return json.dumps(resp, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(resp)


# ---------------------------------------------------------------------------------------------
# the session a file starts

def _tail_title(path: Path) -> str:
    """The newest `custom_title` in the file's last 64 KiB (Qwen re-anchors it there)."""
    try:
        size = os.path.getsize(path)
        with open_input(path) as fh:
            if size > TAIL_BYTES:
                fh.seek(size - TAIL_BYTES)
                fh.readline()  # a partial line
            data = fh.read()
    except OSError:
        return ""
    if b'"custom_title"' not in data:
        return ""
    title = ""
    for raw in data.splitlines():
        if b'"custom_title"' not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        sp = rec.get("systemPayload") if isinstance(rec, dict) else None
        if rec.get("subtype") == "custom_title" and isinstance(sp, dict) \
                and isinstance(sp.get("customTitle"), str) and sp["customTitle"].strip():
            title = sp["customTitle"].strip()
    return title


def open_file(ctx: ImportContext, path: Path) -> QwenFile:
    """The session a chat file starts (from its first records and its tail), ready to be fed
    its lines (`run`, or `feed` one at a time: `ctx import --follow`)."""
    first: dict = {}
    title = ""
    parent_id = forked = ""
    for rec in peek_jsonl(path, limit=400):
        if not first and isinstance(rec.get("sessionId"), str):
            first = rec
        sp = rec.get("systemPayload")
        if rec.get("subtype") == "parent_session" and isinstance(sp, Mapping) \
                and isinstance(sp.get("parentSessionId"), str):
            parent_id = parent_id or sp["parentSessionId"]
        fk = rec.get("forkedFrom")
        if isinstance(fk, Mapping) and isinstance(fk.get("sessionId"), str):
            forked = forked or fk["sessionId"]
        if not title and rec.get("type") == "user" and not rec.get("subtype") \
                and not rec.get("isSidechain"):
            title = title_of(prompt_text(user_text(rec)))
        if first and title and (parent_id or forked or rec.get("type") == "assistant"):
            break
    title = title or _tail_title(path)
    source = first.get("sessionId") if isinstance(first.get("sessionId"), str) else path.stem
    origin: dict[str, Any] = {"format": FMT, "id": source}
    if isinstance(first.get("version"), str):
        origin["version"] = first["version"]
    kind, link = "main", ""
    if parent_id:
        origin["parent_session_id"], kind, link = parent_id, "subagent", parent_id
    elif forked and forked != source:
        origin["forked_from"], kind, link = forked, "fork", forked
    parent = ctx.find_session(FMT, link) if link else ""
    if link and not parent:
        ctx.report.notes.append(f"{path.name}: parent session {link} not imported; link kept "
                                f"in the session origin only")
    b = _MainBuilder(ctx, fmt=FMT, file=path.name, source_id=source,
                     ts=first.get("timestamp", ""), nonce=source, origin=origin, kind=kind,
                     title=title, cwd=str(first.get("cwd") or ""), parent_session=parent)
    return QwenFile(b)


class _MainBuilder(SessionBuilder):
    """The file's session; `finish` also finishes the inline subagent sessions it holds (so a
    `--follow` reader that only knows `b` finishes them too)."""

    children: dict[str, SessionBuilder]

    def finish(self) -> None:
        super().finish()
        for child in getattr(self, "children", {}).values():
            child.ctx, child.tx = self.ctx, self.tx
            child.finish()


class QwenFile:
    def __init__(self, b: _MainBuilder) -> None:
        self.b = b
        b.children = {}
        #: uuid -> (event id, generation) after the record
        self.by_uuid: dict[str, tuple[str, int]] = {}
        #: parents a record may name without being a rewind: the previous record, and the
        #: tail before trailing title/source anchors
        self.ok_parents: set[str] = set()
        self.started = False
        self.last: tuple[str, Any] = ("", None)  # (uuid, parentUuid) of the previous record
        #: tool call id -> (requested event id, name, builder)
        self.calls: dict[str, tuple[str, str, SessionBuilder]] = {}
        self.model = ""

    def run(self, path: Path) -> None:
        for n, text, rec in iter_jsonl(self.b.ctx, path):
            self.feed(n, text, rec)

    # -- which session and where ------------------------------------------------------------
    def _child(self, rec: dict) -> SessionBuilder:
        main = self.b
        agent = rec.get("agentId") if isinstance(rec.get("agentId"), str) else "sidechain"
        child = main.children.get(agent)
        if child is None:
            origin = {"format": FMT, "id": main.source_id, "agent_id": agent, "layout": "inline"}
            if isinstance(rec.get("agentName"), str):
                origin["agent_name"] = rec["agentName"]
            text = user_text(rec) if rec.get("type") == "user" else ""
            title = title_of(prompt_text(text)) or f"{rec.get('agentName') or agent} (subagent)"
            child = SessionBuilder(main.ctx, fmt=FMT, file=main.file, source_id=main.source_id,
                                   ts=rec.get("timestamp", ""), nonce=f"{main.source_id}/{agent}",
                                   origin=origin, kind="subagent", title=title, cwd=main.cwd,
                                   parent_session=main.sid, agent=agent)
            main.children[agent] = child
        elif child.ctx is not main.ctx:  # a --follow poll: this poll's transaction
            child.ctx, child.tx = main.ctx, main.tx
            main.ctx.report.sessions.append(child.stats)
            child.stats.new_events = 0
        return child

    def _position(self, rec: dict, n: int) -> None:
        """Start a new line where a record names a parent other than the previous record."""
        b = self.b
        uuid, parent = rec["uuid"], rec.get("parentUuid")
        side = rec.get("type") == "system" and rec.get("subtype") in SIDE_SUBTYPES
        again = (uuid, parent) == self.last  # the same record written again (a fuller copy)
        self.last = (uuid, parent)
        if not self.started:
            self.started = True
        elif again:
            pass
        elif parent is None or (isinstance(parent, str) and parent not in self.ok_parents):
            if parent is None:
                b.fork(b.root, 1, uuid[:8])
            elif parent in self.by_uuid:
                ev, gen = self.by_uuid[parent]
                b.fork(ev, gen, uuid[:8])
            else:
                b.ctx.warn(b.file, n, f"dangling parentUuid {parent!r}; attached after the "
                                      f"previous record")
        if side and (parent in self.ok_parents or parent is None):
            self.ok_parents = self.ok_parents | {uuid}
        else:
            self.ok_parents = {uuid}

    # -- records ----------------------------------------------------------------------------
    def feed(self, n: int, text: str, rec: Any) -> None:
        if rec is MALFORMED:
            self.b.begin(n, rec, text)
            self.b.append(f"{FMT}:malformed", "system", {})
            return
        side = rec.get("isSidechain") is True
        b = self._child(rec) if side else self.b
        b.begin(n, rec, text)
        if not side and isinstance(rec.get("uuid"), str):
            self._position(rec, n)
        self.record(b, rec, n)
        if not side and isinstance(rec.get("uuid"), str):
            self.by_uuid[rec["uuid"]] = (b.tip, b.tip_gen)

    def record(self, b: SessionBuilder, rec: dict, n: int) -> None:
        t = rec.get("type")
        ts = b.ts(rec.get("timestamp"))
        sub = rec.get("subtype") if isinstance(rec.get("subtype"), str) else ""
        if t == "user":
            self.user(b, rec, sub, ts)
        elif t == "assistant":
            self.assistant(b, rec, ts)
        elif t == "tool_result":
            self.tool_result(b, rec, n, ts)
        elif t == "system" and sub == "chat_compression":
            self.compression(b, rec, ts)
        else:
            if t not in KNOWN_TYPES:
                b.ctx.warn(b.file, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
            payload: dict[str, Any] = {"subtype": sub} if sub else {}
            sp = rec.get("systemPayload") if isinstance(rec.get("systemPayload"), Mapping) else {}
            if sub == "custom_title" and isinstance(sp.get("customTitle"), str):
                payload["title"] = preview(sp["customTitle"])
            elif sub == "ui_telemetry" and isinstance(sp.get("uiEvent"), Mapping):
                name = sp["uiEvent"].get("event.name")
                if isinstance(name, str):
                    payload["event"] = name
            elif sub == "rewind" and isinstance(sp.get("truncatedCount"), int):
                payload["truncated"] = sp["truncatedCount"]
            kind = t if isinstance(t, str) and t else "unknown"
            b.append(f"{FMT}:{kind}", "system", payload, ts=ts)

    def user(self, b: SessionBuilder, rec: dict, sub: str, ts: str) -> None:
        parts = _parts(rec)
        blocks, _calls, raw = _blocks(parts)
        text = user_text(rec)
        meta = {"qwen_subtype": sub} if sub else {}
        real = prompt_text(text) if sub not in NOTICE_SUBTYPES else ""
        if real:
            mid = b.message("user", blocks or [TextBlock(text)], meta=meta)
            b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)
            return
        role = "custom" if sub in NOTICE_SUBTYPES else "user"
        mid = b.message(role, blocks or [TextBlock(text or raw)], meta=meta)
        b.append("MessageAdded", "system" if role == "custom" else "user",
                 {"role": role, "text": preview(text or raw), **({"subtype": sub} if sub else {})},
                 {"message_id": mid}, ts)

    def assistant(self, b: SessionBuilder, rec: dict, ts: str) -> None:
        blocks, calls, text = _blocks(_parts(rec))
        model = rec.get("model") if isinstance(rec.get("model"), str) else ""
        meta: dict[str, Any] = {"uuid": rec["uuid"]} if isinstance(rec.get("uuid"), str) else {}
        if model:
            meta["model"] = model
        mid = b.message("assistant", blocks, meta=meta)
        payload: dict[str, Any] = {"text": preview(text)}
        if model:
            payload["model"] = model
        usage = _usage(rec.get("usageMetadata"))
        if usage is not None:
            payload["usage"] = usage
        if isinstance(rec.get("uuid"), str):
            payload["response_id"] = rec["uuid"]
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        for blk in calls:
            eid = b.append("ToolCallRequested", "model",
                           tool_requested_payload(blk.tool_call_id, blk.name, blk.args),
                           {"tool_call_id": blk.tool_call_id, "message_id": mid}, ts)
            self.calls[blk.tool_call_id] = (eid, blk.name, b)

    def tool_result(self, b: SessionBuilder, rec: dict, n: int, ts: str) -> None:
        tcr = rec.get("toolCallResult") if isinstance(rec.get("toolCallResult"), Mapping) else {}
        failed = tcr.get("status") in ("error", "cancelled")
        answered = False
        for p in _parts(rec):
            fr = p.get("functionResponse")
            if not isinstance(fr, Mapping):
                continue
            tcid = fr.get("id") if isinstance(fr.get("id"), str) else tcr.get("callId")
            if not isinstance(tcid, str) or tcid not in self.calls:
                name = fr.get("name")
                tcid = next((k for k, v in self.calls.items() if v[1] == name and v[2] is b), tcid)
            call = self.calls.pop(tcid, None) if isinstance(tcid, str) else None
            if call is None or call[2] is not b:
                b.ctx.warn(b.file, n, f"tool result without its call (id {tcid!r})")
                continue
            resp = fr.get("response")
            err = (isinstance(resp, Mapping) and "error" in resp and "output" not in resp) or (
                failed and tcr.get("callId") in (None, tcid))
            b.tool_result(tcid, call[1], call[0], _response_text(resp), bool(err), ts)
            answered = True
        if not answered:
            payload = {"status": tcr["status"]} if isinstance(tcr.get("status"), str) else {}
            b.append(f"{FMT}:tool_result", "tool", payload, ts=ts)

    def compression(self, b: SessionBuilder, rec: dict, ts: str) -> None:
        sp = rec.get("systemPayload") if isinstance(rec.get("systemPayload"), Mapping) else {}
        hist = sp.get("compressedHistory") if isinstance(sp.get("compressedHistory"), list) else []
        summary = ""
        for content in hist:
            if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
                summary = "\n".join(p["text"] for p in content["parts"]
                                    if isinstance(p, Mapping) and isinstance(p.get("text"), str))
                if summary:
                    break
        info = sp.get("info") if isinstance(sp.get("info"), Mapping) else {}
        before = info.get("originalTokenCount")
        extra = {"retained_contents": len(hist)}
        if isinstance(info.get("newTokenCount"), int):
            extra["new_token_count"] = info["newTokenCount"]
        mid = b.message("summary", [TextBlock(summary)], meta={"qwen_subtype": "chat_compression"})
        b.compaction(summary, b.tip, ts, tokens_before=before if isinstance(before, int) else 0,
                     extra=extra, message_id=mid)
