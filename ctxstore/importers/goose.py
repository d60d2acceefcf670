"""Goose sessions: `goose session export` documents, the older JSONL session files and the
`sessions.db` SQLite store of current Goose (read-only).

Where Goose keeps them (block/goose crates/goose/src/config/paths.rs and session/):
`Paths::data_dir()/sessions`, the data dir being `$GOOSE_PATH_ROOT/data` when that variable is
an absolute path, else the XDG data dir of the "goose" app (`$XDG_DATA_HOME/goose`, else
`~/.local/share/goose`; Windows `%APPDATA%\\Block\\goose\\data`). Goose 1.0–1.8 wrote one
`<id>.jsonl` per session there (a metadata line `{working_dir, description, schedule_id,
message_count, total_tokens, input_tokens, output_tokens, accumulated_*}`, then one message per
line); later releases keep every session in `sessions.db` (tables `sessions` and `messages`,
`messages.content_json` being the message's content array) and import the JSONL files into it.

A message is `{id, role: user|assistant, created, content: [...], metadata: {userVisible,
agentVisible}}`; content items are tagged by `type`: text, image, thinking, redactedThinking,
toolRequest `{id, toolCall: {status, value: {name, arguments}} | {status: "error", error}}`,
toolResponse `{id, toolResult: {status, value: [Content] | {content, isError}}}`,
frontendToolRequest, toolConfirmationRequest, actionRequired, systemNotification. A
compaction marks the messages it replaced `agentVisible: false` and adds the summary as a user
message that only the agent sees (`userVisible: false`), then an agent-only continuation.

Records. An export document is line 0 (the document, its `conversation` array emptied) and
line i (its i-th message). A JSONL file is its lines. A database session is line 0 (its
`sessions` row) and line i (its i-th `messages` row by rowid), each `{"table", "row"}`: export
writes a document back as the document, a JSONL file line by line, and a database session as
one JSON row per line.

Title: the session's first prompt, stable as the session grows (a ctx session's id covers
its title); Goose's own `name` (generated after the first messages, or set by the user) is
kept on the session record's event and names the session only when it has no prompt.

The session record's event comes last in the session's history (its line number still puts
it first in an export): Goose rewrites that record as the session grows (message_count,
updated_at, usage), and coming last it leaves the events of the messages already imported as
they were, so importing a grown session adds only its new messages.

Tokens: Goose records no usage per message, only per session. The session's
`accumulated_usage` (`accumulated_*_tokens` columns in older stores), else its `usage`, is put
as a running total on the session record's event: input = input_tokens (Goose's count already
includes the cached tokens, `cache_read_input_tokens`), output = output_tokens.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .. import jsonparse
from ..errors import InvalidInput
from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from ..userfiles import open_input
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
)
from .records import write_json_lines
from .sqlitesource import connect_read_only

FMT = "goose"
LABEL = "Goose"
#: the key of a JSONL line that did not parse, kept as its text (export writes the text back)
RAW = "\u0000goose-raw-line"
CONTENT_TYPES = frozenset({"text", "image", "thinking", "redactedThinking", "reasoning",
                           "toolRequest", "toolResponse", "frontendToolRequest",
                           "toolConfirmationRequest", "actionRequired", "systemNotification",
                           "conversationCompacted", "summarizationRequested",
                           "contextLengthExceeded"})
_DOC_KEYS = re.compile(rb'"(?:conversation|extension_data|session_type|accumulated_usage|'
                       rb'accumulated_total_tokens|message_count|goose_mode)"\s*:')
SNIFF_BYTES = 64 * 1024


# ---------------------------------------------------------------------------------------------
# which files are Goose's

def _is_message(rec: Mapping) -> bool:
    content = rec.get("content")
    return (rec.get("role") in ("user", "assistant") and isinstance(content, list)
            and "created" in rec and "type" not in rec
            and all(isinstance(c, Mapping) and c.get("type") in CONTENT_TYPES for c in content))


def _is_metadata(rec: Mapping) -> bool:
    return ("role" not in rec and "type" not in rec and isinstance(rec.get("description"), str)
            and ("message_count" in rec or "working_dir" in rec))


def _sqlite_tables(path: Path) -> tuple[dict[str, set[str]] | None, bool]:
    """(the `sessions`/`messages` columns, whether the file is damaged) of an SQLite file: read
    from the file as it is (`immutable`: no lock taken or waited for), then, if the schema is
    not there yet (still in the write-ahead log), read-only through SQLite's locking."""
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return None, False
    except OSError:
        return None, False
    found: dict[str, set[str]] | None = None
    damaged = False
    for immutable in (True, False):
        try:
            con = _connect(path, immutable=immutable, timeout=0.2)
        except sqlite3.Error:
            continue
        try:
            names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            found = {n: {r[1] for r in con.execute(f'PRAGMA table_info("{n}")')}
                     for n in names if n in ("sessions", "messages")}
        except sqlite3.OperationalError:
            found = None
        except sqlite3.DatabaseError:  # "database disk image is malformed": cut short
            found, damaged = None, True
        finally:
            con.close()
        if found and len(found) == 2:
            return found, False
    return found, damaged


def _is_db(path: Path) -> bool:
    """Goose's store: `sessions` with `working_dir` and `messages` with `content_json`; also a
    damaged `sessions.db` (half-written), which the import then refuses naming the damage."""
    tables, damaged = _sqlite_tables(path)
    if damaged and path.name == "sessions.db":
        return True
    return bool(tables and "working_dir" in tables.get("sessions", ())
                and "content_json" in tables.get("messages", ()))


def _is_document(path: Path) -> bool:
    try:
        with open_input(path) as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    s = head.lstrip()
    return (s.startswith(b"{") and re.search(rb'"working_dir"\s*:', head) is not None
            and re.search(rb'"id"\s*:', head) is not None and _DOC_KEYS.search(head) is not None)


def sniff(path: Path) -> bool:
    if not path.is_file():
        return False
    name = path.name
    if name.endswith(".db"):
        return _is_db(path)
    if name.endswith(".json"):
        return _is_document(path)
    try:
        first = next(iter(peek_jsonl(path, limit=3)), None)
    except OSError:
        return False
    return isinstance(first, dict) and (_is_metadata(first) or _is_message(first))


def session_units(root: Path) -> list[Path]:
    """Export documents (`*.json`) and `sessions.db` stores under ROOT (JSONL session files are
    found by the generic walk)."""
    out = []
    for pattern in ("*.json", "*.db"):
        for p in root.rglob(pattern):
            if not p.is_symlink() and sniff(p):
                out.append(p)
    return out


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    root = env.get("GOOSE_PATH_ROOT")
    if root and Path(root).is_absolute():
        return [Path(root) / "data" / "sessions"]
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share"
    return [base / "goose" / "sessions"]


def import_file(ctx: ImportContext, path: Path) -> None:
    if path.name.endswith(".db"):
        _import_db(ctx, path)
    elif path.name.endswith(".json"):
        _import_document(ctx, path)
    else:
        _import_jsonl(ctx, path)


def export(records: list[tuple[int, Any]], out: TextIO) -> int:
    """Write a session back: an export document as the document (pretty-printed as Goose
    does), a JSONL session file line by line, a database session one row document a line."""
    if not records:
        return 0
    line0, first = records[0]
    if line0 == 0 and isinstance(first, dict) and not _is_row(first):
        doc = dict(first)
        conv = [v for _, v in records[1:]]
        if isinstance(doc.get("conversation"), list) or conv:
            doc["conversation"] = conv
        out.write(json.dumps(doc, ensure_ascii=False, indent=2))
        out.write("\n")
        return len(records)
    return write_json_lines(records, out, RAW)


def _is_row(value: dict) -> bool:
    return set(value) == {"table", "row"} and isinstance(value.get("row"), dict)


# ---------------------------------------------------------------------------------------------
# the session's own numbers

def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def usage_total(meta: Mapping) -> dict[str, Any] | None:
    """The session's token total (module docstring): accumulated_usage, else usage; the flat
    `accumulated_*_tokens`, else `*_tokens`, of older stores."""
    for key in ("accumulated_usage", "usage"):
        u = meta.get(key)
        if isinstance(u, Mapping) and (_int(u.get("input_tokens")) is not None
                                       or _int(u.get("output_tokens")) is not None):
            return {"input_tokens": _int(u.get("input_tokens")) or 0,
                    "cached_input_tokens": _int(u.get("cache_read_input_tokens")) or 0,
                    "output_tokens": _int(u.get("output_tokens")) or 0}
    for prefix in ("accumulated_", ""):
        i, o = _int(meta.get(prefix + "input_tokens")), _int(meta.get(prefix + "output_tokens"))
        if i is not None or o is not None:
            return {"input_tokens": i or 0,
                    "cached_input_tokens": _int(meta.get(prefix + "cache_read_input_tokens")) or 0,
                    "output_tokens": o or 0}
    return None


def _ts(created: Any) -> str:
    n = _int(created)
    if n is None:
        return created if isinstance(created, str) else ""
    if n > 10_000_000_000:  # milliseconds
        n //= 1000
    try:
        return datetime.fromtimestamp(n, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    except (OverflowError, OSError, ValueError):
        return ""


def _iso(value: Any) -> str:
    """A Goose timestamp (RFC 3339 `2026-08-19T21:08:38Z`, SQLite `2026-08-19 21:08:38`)."""
    if isinstance(value, str) and re.match(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d", value):
        return value.replace(" ", "T", 1)
    return _ts(value)


def _model(meta: Mapping) -> str:
    mc = meta.get("model_config")
    if isinstance(mc, str):
        try:
            mc = json.loads(mc)
        except ValueError:
            mc = None
    if isinstance(mc, Mapping) and isinstance(mc.get("model_name"), str):
        return mc["model_name"]
    return ""


def _text(content: list) -> str:
    return "\n".join(c["text"] for c in content
                     if isinstance(c, Mapping) and c.get("type") == "text" and isinstance(c.get("text"), str))


def first_prompt(messages: list) -> str:
    for m in messages:
        if isinstance(m, Mapping) and m.get("role") == "user" and isinstance(m.get("content"), list):
            meta = m.get("metadata") if isinstance(m.get("metadata"), Mapping) else {}
            if meta.get("userVisible") is False:
                continue
            title = title_of(prompt_text(_text(m["content"])))
            if title:
                return title
    return ""


#: what Goose answers a call it did not run with, as a *successful* result
#: (agents/tool_execution.rs DECLINED_RESPONSE, CHAT_MODE_TOOL_SKIPPED_RESPONSE)
NOT_RUN = ("The user has declined to run this tool", "the tool call was skipped in goose chat mode")


def _result(tr: Any) -> tuple[str, bool]:
    """(text, is_error) of a toolResponse's `toolResult`; a call Goose did not run (declined
    by the user, skipped in chat mode) is an error although Goose records it as a success."""
    if not isinstance(tr, Mapping):
        return "", False
    if tr.get("status") == "error" or "error" in tr and "value" not in tr:
        return str(tr.get("error") or ""), True
    value = tr.get("value")
    err = False
    items = value
    if isinstance(value, Mapping):
        items = value.get("content")
        err = value.get("isError") is True or value.get("is_error") is True
    texts = []
    for c in items if isinstance(items, list) else []:
        if isinstance(c, Mapping):
            if isinstance(c.get("text"), str):
                texts.append(c["text"])
            elif isinstance(c.get("resource"), Mapping) and isinstance(c["resource"].get("text"), str):
                texts.append(c["resource"]["text"])
    text = "\n".join(texts)
    return text, err or any(m in text for m in NOT_RUN)


def _call(item: Mapping) -> tuple[str, Any]:
    tc = item.get("toolCall")
    value = tc.get("value") if isinstance(tc, Mapping) else None
    if isinstance(value, Mapping):
        args = value.get("arguments")
        return str(value.get("name") or ""), args if args is not None else {}
    return "", {"error": tc.get("error")} if isinstance(tc, Mapping) and "error" in tc else {}


# ---------------------------------------------------------------------------------------------
# one session

class GooseSession:
    """Maps a session's messages, whichever store they came from."""

    def __init__(self, b: SessionBuilder, model: str = "") -> None:
        self.b = b
        self.model = model
        self.calls: dict[str, tuple[str, str]] = {}
        self.hidden = False  # messages the agent no longer sees since the last compaction

    def header(self, n: int, value: Any, text: str, meta: Mapping, kind: str) -> None:
        b = self.b
        b.begin(n, value, text)
        payload: dict[str, Any] = {}
        name = meta.get("name") or meta.get("description")
        if isinstance(name, str) and name:
            payload["title"] = preview(name)
        total = usage_total(meta)
        if total is not None:
            cost = meta.get("accumulated_cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                total["cost_usd"] = float(cost)
            payload["usage_total"] = total
        if self.model:
            payload["model"] = self.model
        b.append(f"{FMT}:{kind}", "system", payload,
                 ts=b.ts(_iso(meta.get("updated_at")) or None))

    def message(self, n: int, value: Any, text: str, msg: Any) -> None:
        b = self.b
        b.begin(n, value, text)
        if not isinstance(msg, Mapping) or not isinstance(msg.get("content"), list):
            b.ctx.warn(b.file, n, "not a Goose message (no role and content list); kept as "
                                  f"{FMT}:record")
            b.append(f"{FMT}:record", "system", {})
            return
        ts = b.ts(_ts(msg.get("created")) or None)
        meta = msg.get("metadata") if isinstance(msg.get("metadata"), Mapping) else {}
        if meta.get("agentVisible") is False:
            self.hidden = True
        content = [c for c in msg["content"] if isinstance(c, Mapping)]
        unknown = sorted({str(c.get("type")) for c in content if c.get("type") not in CONTENT_TYPES})
        if unknown:
            b.ctx.warn(b.file, n, f"unknown content type(s) {', '.join(unknown)}; kept in the record")
        role = msg.get("role")
        before = b.stats.events
        if role == "assistant":
            self.assistant(msg, content, meta, ts)
        elif role == "user":
            self.user(msg, content, meta, n, ts)
        else:
            b.ctx.warn(b.file, n, f"unknown message role {role!r}; kept as {FMT}:message")
        if b.stats.events == before:  # nothing mapped: keep the record on a bookkeeping event
            types = sorted({str(c.get("type")) for c in content})
            b.append(f"{FMT}:message", "system",
                     {"role": str(role), **({"content": types} if types else {})}, ts=ts)

    def assistant(self, msg: Mapping, content: list, meta: Mapping, ts: str) -> None:
        b = self.b
        blocks: list = []
        calls: list[ToolCallBlock] = []
        for i, c in enumerate(content):
            t = c.get("type")
            if t == "text" and isinstance(c.get("text"), str):
                blocks.append(TextBlock(c["text"]))
            elif t == "thinking":
                blocks.append(ThinkingBlock(str(c.get("thinking") or ""), str(c.get("signature") or "")))
            elif t == "reasoning":
                blocks.append(ThinkingBlock(str(c.get("text") or c.get("reasoning") or "")))
            elif t == "redactedThinking":
                blocks.append(ThinkingBlock("", str(c.get("data") or "")))
            elif t == "image":
                blocks.append(ImageBlock(media_type=str(c.get("mimeType") or "")))
            elif t in ("toolRequest", "frontendToolRequest"):
                tcid = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call-{i}"
                name, args = _call(c)
                blk = ToolCallBlock(tcid, name, args)
                blocks.append(blk)
                calls.append(blk)
        if not blocks:
            return
        text = "\n".join(x.text for x in blocks if isinstance(x, TextBlock))
        mid_meta: dict[str, Any] = {"id": msg["id"]} if isinstance(msg.get("id"), str) else {}
        if meta.get("userVisible") is False and not calls:  # the agent-only continuation note
            mid = b.message("custom", blocks, meta={**mid_meta, "goose": "agent_only"})
            b.append("MessageAdded", "system", {"role": "custom", "text": preview(text)},
                     {"message_id": mid}, ts)
            return
        if self.model:
            mid_meta["model"] = self.model
        mid = b.message("assistant", blocks, meta=mid_meta)
        payload: dict[str, Any] = {"text": preview(text)}
        if self.model:
            payload["model"] = self.model
        if isinstance(msg.get("id"), str) and msg["id"]:
            payload["response_id"] = msg["id"]
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        for blk in calls:
            eid = b.append("ToolCallRequested", "model",
                           tool_requested_payload(blk.tool_call_id, blk.name, blk.args),
                           {"tool_call_id": blk.tool_call_id, "message_id": mid}, ts)
            self.calls[blk.tool_call_id] = (eid, blk.name)

    def user(self, msg: Mapping, content: list, meta: Mapping, n: int, ts: str) -> None:
        b = self.b
        for c in content:
            if c.get("type") != "toolResponse":
                continue
            tcid = c.get("id")
            call = self.calls.pop(tcid, None) if isinstance(tcid, str) else None
            if call is None:
                b.ctx.warn(b.file, n, f"tool response without its request (id {tcid!r})")
                continue
            text, err = _result(c.get("toolResult"))
            b.tool_result(tcid, call[1], call[0], text, err, ts)
        blocks: list = []
        for c in content:
            if c.get("type") == "text" and isinstance(c.get("text"), str):
                blocks.append(TextBlock(c["text"]))
            elif c.get("type") == "image":
                blocks.append(ImageBlock(media_type=str(c.get("mimeType") or "")))
        if not blocks:
            return
        text = _text(content)
        mid_meta: dict[str, Any] = {"id": msg["id"]} if isinstance(msg.get("id"), str) else {}
        user_visible = meta.get("userVisible") is not False
        agent_visible = meta.get("agentVisible") is not False
        if not user_visible and agent_visible and self.hidden:  # a compaction's summary
            mid = b.message("summary", [TextBlock(text)], meta={**mid_meta, "goose": "summary"})
            b.compaction(text, b.tip, ts, extra={"visibility": "agent_only"}, message_id=mid)
            self.hidden = False
            return
        real = prompt_text(text) if user_visible else ""
        if real:
            mid = b.message("user", blocks, meta=mid_meta)
            b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)
            return
        extra = {} if user_visible else {"goose": "hidden"}
        mid = b.message("user", blocks, meta={**mid_meta, **extra})
        b.append("MessageAdded", "user", {"role": "user", "text": preview(text), **extra},
                 {"message_id": mid}, ts)


def _builder(ctx: ImportContext, file: str, meta: Mapping, source: str, title: str,
             layout: str) -> SessionBuilder:
    origin: dict[str, Any] = {"format": FMT, "id": source, "layout": layout}
    stype = meta.get("session_type")
    if isinstance(stype, str):
        origin["session_type"] = stype
    parent_id = meta.get("parent_session_id")
    parent = ""
    if isinstance(parent_id, str) and parent_id:
        origin["parent_session_id"] = parent_id
        parent = ctx.find_session(FMT, parent_id)
        if not parent:
            ctx.report.notes.append(f"{file}: parent session {parent_id} not imported; link "
                                    f"kept in the session origin only")
    name = meta.get("name") or meta.get("description")
    return SessionBuilder(ctx, fmt=FMT, file=file, source_id=source,
                          ts=_iso(meta.get("created_at")), nonce=source, origin=origin,
                          kind="subagent" if stype == "sub_agent" else "main",
                          title=title or (title_of(name) if isinstance(name, str) else ""),
                          cwd=str(meta.get("working_dir") or ""), parent_session=parent)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# the three stores

def _import_document(ctx: ImportContext, path: Path) -> None:
    try:
        with open_input(path) as fh:
            data = fh.read()
        ctx.advance(len(data), str(path))
        doc = jsonparse.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: not a Goose session document ({exc})") from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}: not a Goose session document (a JSON "
                           f"{type(doc).__name__}, not an object)")
    conv = doc.get("conversation")
    messages = conv if isinstance(conv, list) else []
    header = dict(doc)
    if isinstance(conv, list):
        header["conversation"] = []
    source = doc.get("id") if isinstance(doc.get("id"), str) and doc["id"] else path.stem
    b = _builder(ctx, path.name, doc, source, first_prompt(messages), "export")
    gs = GooseSession(b, _model(doc))
    for i, msg in enumerate(messages, 1):
        gs.message(i, msg, _dumps(msg), msg)
    gs.header(0, header, _dumps(header), doc, "session")  # last: see the module docstring
    b.finish()


def _import_jsonl(ctx: ImportContext, path: Path) -> None:
    meta: dict = {}
    head = next(iter(peek_jsonl(path, limit=1)), None)
    if isinstance(head, dict) and _is_metadata(head):
        meta = head
    msgs = [r for r in peek_jsonl(path, limit=50) if _is_message(r)]
    b = _builder(ctx, path.name, meta, path.stem, first_prompt(msgs), "jsonl")
    gs = GooseSession(b, _model(meta))
    first, header = True, None
    for n, text, rec in iter_jsonl(ctx, path):
        if rec is MALFORMED:
            b.begin(n, {RAW: text}, text)
            b.append(f"{FMT}:malformed", "system", {})
        elif first and _is_metadata(rec):
            header = (n, rec, text)
        else:
            gs.message(n, rec, text, rec)
        first = False
    if header is not None:  # last: see the module docstring
        gs.header(header[0], header[1], header[2], header[1], "session")
    b.finish()


def _connect(path: Path, immutable: bool = False, timeout: float = 1.0) -> sqlite3.Connection:
    """A read-only connection: never a write, never a lock that would hold Goose up."""
    return connect_read_only(path, timeout, immutable)


def _row_value(v: Any) -> Any:
    if isinstance(v, bytes):
        return {"$base64": base64.b64encode(v).decode("ascii")}
    return v


def _rows(con: sqlite3.Connection, sql: str, args: tuple = ()) -> list[dict]:
    cur = con.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [{c: _row_value(v) for c, v in zip(cols, r, strict=True)} for r in cur.fetchall()]


def _json_column(row: Mapping, key: str) -> Any:
    v = row.get(key)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return None


def _import_db(ctx: ImportContext, path: Path) -> None:
    con = None
    try:
        try:
            con = _connect(path)
            sessions = _rows(con, "SELECT * FROM sessions ORDER BY created_at, id")
        except sqlite3.OperationalError as exc:  # locked, or no -shm can be made beside it
            if con is not None:
                con.close()
            ctx.report.notes.append(f"{path.name}: read without its write-ahead log ({exc}); "
                                    f"changes Goose has not checkpointed yet are missing")
            con = _connect(path, immutable=True)
            sessions = _rows(con, "SELECT * FROM sessions ORDER BY created_at, id")
    except sqlite3.Error as exc:
        if con is not None:
            con.close()
        raise InvalidInput(f"{path}: not a readable Goose sessions database ({exc})") from exc
    size = path.stat().st_size
    ctx.advance(size, str(path))
    expected = _header_size(path)
    if expected and size < expected:
        ctx.warn(path.name, 0, f"the database is shorter ({size} bytes) than its header says "
                               f"({expected}): half-written; rows past the cut are missing")
    try:
        for srow in sessions:
            source = str(srow.get("id") or "")
            try:
                mrows = _rows(con, "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (source,))
            except sqlite3.Error as exc:
                ctx.warn(path.name, 0, f"session {source}: messages unreadable ({exc})")
                mrows = []
            msgs = [_message_of(r) for r in mrows]
            meta = dict(srow)
            meta["model_config"] = srow.get("model_config_json")
            b = _builder(ctx, path.name, meta, source, first_prompt(msgs), "sqlite")
            gs = GooseSession(b, _model(meta))
            for i, (row, msg) in enumerate(zip(mrows, msgs, strict=True), 1):
                value = {"table": "messages", "row": row}
                if msg is None:
                    ctx.warn(path.name, i, f"session {source}: message row {row.get('id')} has "
                                           f"no readable content_json; kept as {FMT}:record")
                gs.message(i, value, _dumps(value), msg)
            value = {"table": "sessions", "row": srow}
            gs.header(0, value, _dumps(value), meta, "session")  # last: module docstring
            b.finish()
    finally:
        con.close()


def _header_size(path: Path) -> int:
    """The size an SQLite file's header says it has (page size x page count), or 0."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(32)
    except OSError:
        return 0
    if len(head) < 32:
        return 0
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return page * int.from_bytes(head[28:32], "big")


def _message_of(row: Mapping) -> dict | None:
    content = _json_column(row, "content_json")
    if not isinstance(content, list):
        return None
    msg: dict[str, Any] = {"role": row.get("role"), "created": row.get("created_timestamp"),
                           "content": content}
    if isinstance(row.get("message_id"), str):
        msg["id"] = row["message_id"]
    meta = _json_column(row, "metadata_json")
    if isinstance(meta, dict):
        msg["metadata"] = meta
    return msg
