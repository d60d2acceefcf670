"""Cursor sessions, from the three places Cursor keeps them.

- Agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/<id>.jsonl`, newer
  `<id>/<id>.jsonl`, subagents `<id>/subagents/<sub>.jsonl`): one `{role, message: {content}}`
  line per turn, content blocks `text` / `tool_use` (no ids, no results: Cursor does not write
  them) and, in some versions, `thinking` / `tool_result`. The user's words are wrapped in
  `<user_query>`. A subagent is linked to its parent by the folder it sits in.
- The cursor-agent CLI chat store (`~/.cursor/chats/<md5 of the workspace>/<id>/store.db`):
  SQLite, `meta` (key "0": hex-encoded JSON {agentId, name, mode, createdAt, lastUsedModel,
  latestRootBlobId}) and `blobs` (id, data): a Merkle tree whose message blobs are JSON
  `{role, content}` (content blocks text / reasoning / tool-call / tool-result) and whose
  linking blobs are protobuf field 1 (32-byte child ids) with, at times, an embedded JSON
  message. The tree is walked from `latestRootBlobId`, children first.
- IDE composer conversations: `globalStorage/state.vscdb` (SQLite, `cursorDiskKV` rows
  `composerData:<id>` and `bubbleId:<composer>:<bubble>`, file contents in
  `composer.content.<hash>`, the session index in `ItemTable` `composer.composerHeaders`),
  and the one-composer JSON dump toolpath's `dump_fixture` writes from it (`{head, data,
  bubbles[], content_blobs}`). A database composer is read as that same document, so both
  import, and export, alike: line 0 is the document with `bubbles: []`, line i its bubble i-1.

SQLite files are opened read-only (URI `mode=ro`, a short busy timeout, one read transaction
per composer), never written, and a locked or damaged database is an error naming the file.
Nothing named inside a record is ever opened. See docs/harnesses/cursor.md.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .. import jsonparse
from ..errors import InvalidInput, LockHeld
from ..objects import TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from ..userfiles import open_input
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    as_int,
    as_str,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
)
from .records import write_json_lines
from .sqlitesource import connect_read_only

FMT = "cursor"
LABEL = "Cursor"

SQLITE_MAGIC = b"SQLite format 3\x00"
#: A record that is not JSON (a bad transcript line, a database value that does not parse)
#: is kept as `{RAW: text}` so that export can write the text back as it was.
RAW = "cursor:raw"
BUSY_TIMEOUT = 2.0  # seconds a read waits for a writer's lock before giving up
SNIFF_BYTES = 64 << 10
OPEN_CALLS = 1024  # transcript calls kept for a result that may follow (most never get one)

TRANSCRIPT, DUMP, STORE, VSCDB = "transcript", "dump", "store", "vscdb"
_ROLES = frozenset({"user", "assistant", "system", "tool"})
_NOT_CURSOR_KEYS = ("type", "uuid", "parentUuid", "sessionId", "timestamp", "id")
#: toolFormerData.status values: a result that succeeded, one that failed; others (running,
#: loading, "") mean the call has no result yet
_DONE = frozenset({"completed", "success", "succeeded"})
_FAILED = frozenset({"error", "failed", "cancelled", "canceled", "aborted", "rejected"})
#: composer names Cursor gives before it has summarised the first request
_PLACEHOLDER_NAMES = frozenset({"", "New Agent", "New Chat", "New Composer", "Untitled"})
_COMPOSER_FIELDS = ("name", "status", "unifiedMode", "forceMode", "agentBackend")


# ---------------------------------------------------------------------------------------------
# What a path is


def _head(path: Path) -> bytes:
    try:
        with open_input(path) as fh:
            return fh.read(SNIFF_BYTES)
    except Exception:  # noqa: BLE001 - detection never fails, it says no
        return b""


def _is_transcript_line(rec: Any) -> bool:
    return (isinstance(rec, dict) and rec.get("role") in _ROLES
            and isinstance(rec.get("message"), dict)
            and not any(k in rec for k in _NOT_CURSOR_KEYS))


def kind_of(path: Path) -> str | None:
    """TRANSCRIPT, DUMP, STORE, VSCDB, or None when `path` is not a Cursor session unit."""
    try:
        if not path.is_file():
            return None
    except OSError:
        return None
    head = _head(path)
    if head.startswith(SQLITE_MAGIC):
        return _db_kind(path)
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    if b'"role"' in head and b'"message"' in head:  # only then read whole first lines
        try:
            first = next(iter(peek_jsonl(path, limit=3)), None)
        except Exception:  # noqa: BLE001
            first = None
        if _is_transcript_line(first):
            return TRANSCRIPT
    if b'"composerId"' in head and (b'"bubbleId"' in head or b'"bubbles"' in head):
        return DUMP
    return None


def sniff(path: Path) -> bool:
    return kind_of(path) is not None


def _connect(path: Path, timeout: float = BUSY_TIMEOUT) -> sqlite3.Connection:
    """A read-only connection (never creates, never writes). A WAL database whose `-shm`
    cannot be made (a read-only folder) and has no `-wal` beside it is opened immutable."""
    try:
        con = connect_read_only(path, timeout)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError as exc:
        wal = path.with_name(path.name + "-wal")
        if "unable to open" not in str(exc) or wal.exists():
            raise
    return connect_read_only(path, timeout, immutable=True)


def _tables(con: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {n: {r[1] for r in con.execute(f'PRAGMA table_info("{n}")')} for n in names
            if n in ("meta", "blobs", "cursorDiskKV", "ItemTable")}


def _db_kind(path: Path) -> str | None:
    try:
        con = _connect(path, timeout=0.2)
        try:
            tables = _tables(con)
        finally:
            con.close()
    except sqlite3.Error:  # locked or damaged: say what its name says; import reports why
        return VSCDB if path.suffix == ".vscdb" else STORE if path.name == "store.db" else None
    if "cursorDiskKV" in tables and {"key", "value"} <= tables["cursorDiskKV"]:
        return VSCDB
    if {"key", "value"} <= tables.get("meta", set()) and {"id", "data"} <= tables.get("blobs", set()):
        return STORE
    return None


def session_units(root: Path) -> list[Path]:
    """The chat stores, state databases and composer dumps under `root` (agent transcripts
    are `*.jsonl`, which the generic walk finds). Symlinks are not followed."""
    out: set[Path] = set()
    for pattern in ("*.db", "*.vscdb", "*.json"):
        for p in root.rglob(pattern):
            if not p.is_symlink() and kind_of(p) in (STORE, VSCDB, DUMP):
                out.add(p)
    return sorted(out)


def default_dirs(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
    """`~/.cursor/projects` (agent transcripts) and `~/.cursor/chats` (CLI chat stores), under
    `$CURSOR_CONFIG_DIR` too when it is set, and the IDE's globalStorage folder (state.vscdb):
    `~/Library/Application Support/Cursor` on macOS, `%APPDATA%\\Cursor` on Windows,
    `$XDG_CONFIG_HOME/Cursor` (else `~/.config/Cursor`) elsewhere, then `User/globalStorage`."""
    bases = [home / ".cursor"]
    if env.get("CURSOR_CONFIG_DIR"):
        custom = Path(env["CURSOR_CONFIG_DIR"]).expanduser()
        if custom not in bases:
            bases.append(custom)
    out = [b / sub for b in bases for sub in ("projects", "chats")]
    if platform == "darwin":
        app = home / "Library" / "Application Support" / "Cursor"
    elif platform.startswith("win"):
        app = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Cursor"
    else:
        xdg = env.get("XDG_CONFIG_HOME")
        app = (Path(xdg).expanduser() if xdg else home / ".config") / "Cursor"
    out.append(app / "User" / "globalStorage")
    return out


def import_file(ctx: ImportContext, path: Path) -> None:
    kind = kind_of(path)
    if kind == TRANSCRIPT or (kind is None and path.suffix == ".jsonl"):
        _Transcript(ctx, path).run()
    elif kind == DUMP:
        _import_dump(ctx, path)
    elif kind == STORE:
        _import_store(ctx, path)
    elif kind == VSCDB:
        _import_vscdb(ctx, path)
    else:
        raise InvalidInput(f"{path}: not a {LABEL} session (an agent transcript, a chat "
                           f"store.db, a state.vscdb or a composer dump)")


def export(records: list[tuple[int, Any]], out: TextIO) -> int:
    """Write a session back: a composer as its JSON document (line 0 with its bubbles put
    back), every other unit line by line (a transcript's lines, a chat store's rows)."""
    if records and records[0][0] == 0 and isinstance(records[0][1], dict) \
            and isinstance(records[0][1].get("bubbles"), list) and "table" not in records[0][1]:
        first = records[0][1]
        doc = {k: first[k] for k in ("head", "data") if k in first}  # what sniff looks for first
        doc.update((k, v) for k, v in first.items() if k not in doc)
        doc["bubbles"] = [v for _line, v in records[1:]]
        out.write(json.dumps(doc, ensure_ascii=False, indent=2))
        out.write("\n")
        return len(records)
    return write_json_lines(records, out, RAW)


# ---------------------------------------------------------------------------------------------
# Shared helpers


def _iso_ms(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            dt = datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return ""
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return ""



def _texts(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(as_str(c.get("text")) for c in content
                     if isinstance(c, dict) and c.get("type") in kinds)


def _content_list(content: Any) -> list:
    """Content blocks: a list as it is, a bare string as one text block."""
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if isinstance(content, str) else []


def _loads_deep(value: Any) -> Any:
    """A JSON string parsed, twice when it held JSON text again (Cursor double-encodes some
    tool params); anything that does not parse is returned as it was."""
    for _ in range(2):
        if not isinstance(value, str):
            return value
        s = value.strip()
        if not s or s[0] not in '{["':
            return value
        try:
            value = json.loads(s)
        except ValueError:
            return value
    return value


def _args(params: Any) -> Any:
    parsed = _loads_deep(params)
    if isinstance(parsed, dict):
        return parsed
    if parsed is None or parsed == "":
        return {}
    return {"params": parsed}


def _result_text(result: Any) -> str:
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        parts = [as_str(c.get("text")) if isinstance(c, dict) else str(c) for c in result]
        if all(isinstance(c, dict) and c.get("type") == "text" for c in result):
            return "\n".join(parts)
    return json.dumps(result, ensure_ascii=False)


def _user(b: SessionBuilder, blocks: list, text: str, ts: str, meta: dict | None = None) -> None:
    """A user message: a prompt when it holds the user's words, else context (MessageAdded)."""
    mid = b.message("user", blocks, meta=meta)
    query = prompt_text(text)
    if query:
        b.append("UserPromptSubmitted", "user", {"text": preview(query)}, {"message_id": mid}, ts)
    else:
        b.append("MessageAdded", "user", {"role": "user", "text": preview(text), "meta": True},
                 {"message_id": mid}, ts)


def _first_title(texts: Iterator[str]) -> str:
    for text in texts:
        title = title_of(prompt_text(text))
        if title:
            return title
    return ""


def _bookkeeping(b: SessionBuilder, kind: str, payload: dict | None = None, ts: str | None = None,
                 actor: str = "system") -> str:
    return b.append(f"{FMT}:{kind}", actor, payload or {}, ts=ts)


# ---------------------------------------------------------------------------------------------
# Agent transcripts (JSONL)


def _transcript_layout(path: Path) -> tuple[str, str]:
    """(parent session id or "", project slug or "") from where the file sits:
    `…/<slug>/agent-transcripts/[<id>/]<id>.jsonl`, subagents in `<parent>/subagents/`."""
    parts = path.parts
    parent = parts[-3] if len(parts) >= 3 and parts[-2] == "subagents" else ""
    slug = ""
    if "agent-transcripts" in parts:
        i = len(parts) - 1 - parts[::-1].index("agent-transcripts")
        slug = parts[i - 1] if i >= 1 else ""
    return parent, slug


class _Transcript:
    def __init__(self, ctx: ImportContext, path: Path) -> None:
        self.ctx = ctx
        self.path = path
        sid = path.stem
        parent_id, slug = _transcript_layout(path)
        origin: dict[str, Any] = {"format": FMT, "id": sid, "store": "agent-transcript"}
        if slug:
            origin["project"] = slug
        parent = spawn = ""
        if parent_id:
            origin["parent_id"] = parent_id
            parent = ctx.find_session(FMT, parent_id)
            if not parent:
                ctx.report.notes.append(f"{path.name}: subagent of {parent_id}, whose transcript "
                                        f"is not imported; link kept in the session origin only")
        title = _first_title(_texts((r.get("message") or {}).get("content"))
                             for r in peek_jsonl(path, limit=400)
                             if r.get("role") == "user" and isinstance(r.get("message"), dict))
        if parent_id and title:
            prompts = ctx.task_prompts.get((parent_id, title), [])
            spawn = prompts.pop(0) if prompts else ""
        self.parent_id = parent_id
        self.sid = sid
        self.b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=sid, ts="", nonce=sid,
                                origin=origin, kind="subagent" if parent_id else "main",
                                title=title, parent_session=parent, spawn_event=spawn)
        #: calls still without a result, oldest first: id -> (requested event, name)
        self.open: dict[str, tuple[str, str]] = {}

    def run(self) -> None:
        for n, text, rec in iter_jsonl(self.ctx, self.path):
            self.feed(n, text, rec)
        self.b.finish()

    def feed(self, n: int, text: str, rec: Any) -> None:
        b = self.b
        if rec is MALFORMED:
            b.begin(n, {RAW: text}, text)
            _bookkeeping(b, "malformed")
            return
        b.begin(n, rec, text)
        role = rec.get("role")
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        if role == "user":
            self.user(n, content)
        elif role == "assistant":
            self.assistant(n, rec, content)
        elif role in ("system", "tool"):
            text_ = _texts(content)
            mid = b.message("system" if role == "system" else "custom", [TextBlock(text_)])
            b.append("MessageAdded", "system", {"role": role, "text": preview(text_)},
                     {"message_id": mid})
        else:
            t = rec.get("type") if isinstance(rec.get("type"), str) else ""
            if t != "turn_ended":
                b.ctx.warn(b.file, n, f"unknown record type {t or role or '(none)'!r}; kept as "
                                      f"{FMT}:{t or 'record'}")
            payload = {k: rec[k] for k in ("status",) if isinstance(rec.get(k), str)}
            _bookkeeping(b, t or "record", payload)

    def user(self, n: int, content: Any) -> None:
        b = self.b
        blocks = _content_list(content)
        texts = [TextBlock(as_str(c.get("text"))) for c in blocks
                 if isinstance(c, dict) and c.get("type") == "text"]
        results = [c for c in blocks if isinstance(c, dict)
                   and c.get("type") in ("tool_result", "tool-result")]
        if texts or not results:
            _user(b, texts, "\n".join(t.text for t in texts), b.last_ts)
        for c in results:
            self.result(n, c)

    def result(self, n: int, c: dict) -> None:
        b = self.b
        tcid = as_str(c.get("tool_use_id")) or as_str(c.get("toolCallId"))
        if not tcid:  # results without ids answer the oldest open call of their tool
            name = as_str(c.get("name"))
            tcid = next((k for k, (_e, nm) in self.open.items() if not name or nm == name), "")
        call = self.open.pop(tcid, None)
        if call is None:
            b.ctx.warn(b.file, n, f"tool result without its call ({tcid or 'no id'})")
            _bookkeeping(b, "tool_result", {"tool_call_id": tcid}, actor="tool")
            return
        text = _result_text(c.get("content") if "content" in c else c.get("output"))
        b.tool_result(tcid, call[1], call[0], text, c.get("is_error") is True, b.last_ts)

    def assistant(self, n: int, rec: dict, content: Any) -> None:
        b = self.b
        blocks: list = []
        for k, c in enumerate(_content_list(content)):
            if not isinstance(c, dict):
                continue
            t = c.get("type")
            if t == "text":
                blocks.append(TextBlock(as_str(c.get("text"))))
            elif t in ("thinking", "reasoning"):
                blocks.append(ThinkingBlock(as_str(c.get("thinking")) or as_str(c.get("text")),
                                            as_str(c.get("signature"))))
            elif t in ("tool_use", "tool-use", "tool_call", "tool-call"):
                tcid = as_str(c.get("id")) or as_str(c.get("toolCallId")) or f"cursor-{n}-{k}"
                name = as_str(c.get("name")) or as_str(c.get("toolName")) or as_str(c.get("tool"))
                args = c.get("input") if "input" in c else c.get("args", {})
                blocks.append(ToolCallBlock(tcid, name, args if args is not None else {}))
            elif isinstance(c.get("text"), str):
                blocks.append(TextBlock(c["text"]))
        text = "\n".join(x.text for x in blocks if isinstance(x, TextBlock))
        mid = b.message("assistant", blocks)
        payload: dict[str, Any] = {"text": preview(text)}
        if isinstance(rec.get("model"), str):
            payload["model"] = rec["model"]
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid})
        for blk in blocks:
            if isinstance(blk, ToolCallBlock):
                self.call(blk, mid)

    def call(self, blk: ToolCallBlock, mid: str) -> None:
        b = self.b
        eid = b.append("ToolCallRequested", "model",
                       tool_requested_payload(blk.tool_call_id, blk.name, blk.args),
                       {"tool_call_id": blk.tool_call_id, "message_id": mid})
        self.open[blk.tool_call_id] = (eid, blk.name)
        while len(self.open) > OPEN_CALLS:  # Cursor writes no results: keep the newest calls
            del self.open[next(iter(self.open))]
        if blk.name in ("Task", "task", "task_v2", "Agent") and isinstance(blk.args, Mapping):
            prompt = title_of(prompt_text(as_str(blk.args.get("prompt"))))
            if prompt:
                self.ctx.task_prompts.setdefault((self.sid, prompt), []).append(eid)


# ---------------------------------------------------------------------------------------------
# IDE composers: the dump document and state.vscdb


def _load_json_file(path: Path) -> Any:
    try:
        with open_input(path) as fh:
            data = fh.read()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the composer dump: {exc}") from None
    try:
        return jsonparse.loads(data)
    except ValueError as exc:
        raise InvalidInput(f"{path}: not a JSON document ({exc}); nothing imported") from None


def _import_dump(ctx: ImportContext, path: Path) -> None:
    doc = _load_json_file(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise InvalidInput(f"{path}: a composer dump is an object with `data` (composerData); "
                           f"this one has none; nothing imported")
    _Composer(ctx, path.name, doc, "dump").run()


def _composer_id(doc: dict) -> str:
    data, head = doc.get("data") or {}, doc.get("head") or {}
    return as_str(data.get("composerId")) or as_str(head.get("composerId") if isinstance(head, dict) else "")


def _content_ids(bubble: Any) -> list[str]:
    """The `composer.content.<hash>` keys an edit's result names (before and after)."""
    tf = bubble.get("toolFormerData") if isinstance(bubble, dict) else None
    if not isinstance(tf, dict):
        return []
    res = _loads_deep(tf.get("result"))
    if not isinstance(res, dict):
        return []
    return [v for k in ("beforeContentId", "afterContentId")
            if isinstance(v := res.get(k), str) and v.startswith("composer.content.")]


class _Composer:
    """One composer document {head?, data, bubbles[], content_blobs?} as a session."""

    def __init__(self, ctx: ImportContext, file: str, doc: dict, store: str,
                 parent_session: str = "", parent_cid: str = "") -> None:
        self.ctx, self.file, self.doc = ctx, file, doc
        data = doc["data"]
        head = doc.get("head") if isinstance(doc.get("head"), dict) else {}
        cid = _composer_id(doc) or file
        self.cid = cid
        bubbles = doc.get("bubbles") if isinstance(doc.get("bubbles"), list) else []
        self.inline = not bubbles and isinstance(data.get("conversation"), list)
        self.bubbles = data["conversation"] if self.inline else bubbles
        name = as_str(data.get("name")) or as_str(head.get("name"))
        title = name if name.strip() not in _PLACEHOLDER_NAMES else ""
        title = title or _first_title(as_str(x.get("text")) for x in self.bubbles
                                      if isinstance(x, dict) and x.get("type") == 1)
        ws = head.get("workspaceIdentifier") if isinstance(head.get("workspaceIdentifier"), dict) else {}
        uri = ws.get("uri") if isinstance(ws.get("uri"), dict) else {}
        cwd = as_str(uri.get("fsPath")) or as_str(uri.get("path"))
        origin: dict[str, Any] = {"format": FMT, "id": cid, "store": store, "agent_id": "composer"}
        if parent_cid:
            origin["parent_id"] = parent_cid
        spawn = ctx.agent_spawns.get((parent_cid, cid), "") if parent_cid else ""
        self.b = SessionBuilder(ctx, fmt=FMT, file=file, source_id=cid,
                                ts=_iso_ms(data.get("createdAt")), nonce=cid, origin=origin,
                                kind="subagent" if parent_cid else "main", title=title,
                                parent_session=parent_session, spawn_event=spawn, cwd=cwd,
                                agent="composer")

    def run(self) -> None:
        b, doc = self.b, self.doc
        record0 = dict(doc)
        if isinstance(doc.get("bubbles"), list):
            record0["bubbles"] = []
        b.begin(0, record0, "")
        data = doc["data"]
        payload = {k: data[k] for k in _COMPOSER_FIELDS if isinstance(data.get(k), str)}
        mc = data.get("modelConfig")
        if isinstance(mc, dict) and isinstance(mc.get("modelName"), str):
            payload["model"] = mc["modelName"]
        payload["bubbles"] = len(self.bubbles)
        _bookkeeping(b, "composer", payload, b.ts(_iso_ms(data.get("createdAt"))))
        for i, bubble in enumerate(self.bubbles, 1):
            if not self.inline:
                b.begin(i, bubble, "")
            self.bubble(i, bubble)
        b.finish()

    def bubble(self, i: int, bub: Any) -> None:
        b = self.b
        if not isinstance(bub, dict) or (len(bub) == 1 and RAW in bub):
            _bookkeeping(b, "bubble")
            return
        ts = b.ts(bub.get("createdAt")) if isinstance(bub.get("createdAt"), str) \
            else b.ts(_iso_ms(bub.get("createdAt")))
        text = as_str(bub.get("text"))
        meta = {"bubble_id": bub["bubbleId"]} if isinstance(bub.get("bubbleId"), str) else {}
        if bub.get("type") == 1:
            _user(b, [TextBlock(text)], text, ts, meta)
            return
        if bub.get("type") != 2:
            b.ctx.warn(b.file, i, f"bubble of unknown type {bub.get('type')!r}; kept as {FMT}:bubble")
            _bookkeeping(b, "bubble", {"type": str(bub.get("type"))}, ts)
            return
        blocks: list = []
        th = bub.get("thinking")
        if isinstance(th, dict) and as_str(th.get("text")):
            blocks.append(ThinkingBlock(th["text"], as_str(th.get("signature"))))
        if text:
            blocks.append(TextBlock(text))
        tf = bub.get("toolFormerData") if isinstance(bub.get("toolFormerData"), dict) else None
        call = None
        if tf is not None and (as_str(tf.get("name")) or tf.get("params") is not None):
            tcid = as_str(tf.get("toolCallId")) or as_str(tf.get("modelCallId")) or \
                as_str(bub.get("bubbleId")) or f"cursor-bubble-{i}"
            call = ToolCallBlock(tcid, as_str(tf.get("name")) or str(tf.get("tool", "")), _args(tf.get("params")))
            blocks.append(call)
        if not blocks:
            _bookkeeping(b, "bubble", {"type": "2"}, ts)
            return
        mid = b.message("assistant", blocks, meta=meta)
        payload: dict[str, Any] = {"text": preview(text)}
        mi = bub.get("modelInfo")
        if isinstance(mi, dict) and isinstance(mi.get("modelName"), str):
            payload["model"] = mi["modelName"]
        tc = bub.get("tokenCount")
        if isinstance(tc, dict):
            inp, out = as_int(tc.get("inputTokens")), as_int(tc.get("outputTokens"))
            if inp or out:
                payload["usage"] = {"input_tokens": inp, "cached_input_tokens": 0,
                                    "output_tokens": out}
                if meta:
                    payload["response_id"] = meta["bubble_id"]
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        if call is None:
            return
        eid = b.append("ToolCallRequested", "model",
                       tool_requested_payload(call.tool_call_id, call.name, call.args),
                       {"tool_call_id": call.tool_call_id, "message_id": mid}, ts)
        res = _loads_deep(tf.get("result"))
        child = ""
        if isinstance(res, dict) and isinstance(res.get("agentId"), str):
            child = res["agentId"]
        ad = tf.get("additionalData")
        if isinstance(ad, dict) and isinstance(ad.get("subagentComposerId"), str):
            child = ad["subagentComposerId"]
        if child:
            self.ctx.agent_spawns[(self.cid, child)] = eid
        status = as_str(tf.get("status")).lower()
        result = tf.get("result")
        if status in _FAILED:
            b.tool_result(call.tool_call_id, call.name, eid,
                          _result_text(result) or f"{status}", True, ts)
        elif status in _DONE or result is not None:
            b.tool_result(call.tool_call_id, call.name, eid, _result_text(result), False, ts)



def _db_error(path: Path, exc: sqlite3.Error) -> Exception:
    msg = str(exc)
    if "locked" in msg or "busy" in msg:
        return LockHeld(f"{path}: the database is locked by another process (Cursor writing?); "
                        f"nothing imported from it; try again in a moment ({msg})")
    return InvalidInput(f"{path}: cannot read this SQLite database ({msg}): damaged, half "
                        f"written or not a {LABEL} database; nothing imported from it")


def _value_text(v: Any) -> str | None:
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return v if isinstance(v, str) else None


def _row_json(v: Any) -> Any:
    """A cursorDiskKV value parsed, or {RAW: text} when it is not JSON."""
    text = _value_text(v)
    if text is None:
        return {RAW: v.hex() if isinstance(v, bytes) else str(v)}
    try:
        return jsonparse.loads(text)
    except ValueError:
        return {RAW: text}


def _import_vscdb(ctx: ImportContext, path: Path) -> None:
    try:
        con = _connect(path)
    except sqlite3.Error as exc:
        raise _db_error(path, exc) from None
    try:
        try:
            _read_vscdb(ctx, path, con)
        except sqlite3.Error as exc:
            raise _db_error(path, exc) from None
    finally:
        con.close()


def _bubble_rows(con: sqlite3.Connection, cid: str) -> dict[str, Any]:
    lo = f"bubbleId:{cid}:"
    hi = f"bubbleId:{cid};"  # ';' sorts right after ':'
    return {k[len(lo):]: v for k, v in
            con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (lo, hi))}


def _read_vscdb(ctx: ImportContext, path: Path, con: sqlite3.Connection) -> None:
    tables = _tables(con)
    if "cursorDiskKV" not in tables:
        raise InvalidInput(f"{path}: no cursorDiskKV table: not a {LABEL} state database")
    heads: dict[str, dict] = {}
    if "ItemTable" in tables:
        row = con.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerHeaders'").fetchone()
        idx = _row_json(row[0]) if row else {}
        for h in (idx.get("allComposers") if isinstance(idx, dict) else None) or ():
            if isinstance(h, dict) and isinstance(h.get("composerId"), str):
                heads[h["composerId"]] = h
    # the composers, and which is whose subagent (parents are imported first)
    info: dict[str, tuple[Any, list[str]]] = {}
    for key, value in con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' "
                                  "AND key < 'composerData;'"):
        cid = key[len("composerData:"):]
        data = _row_json(value)
        if not isinstance(data, dict) or RAW in data:
            ctx.warn(path.name, 0, f"{key}: not a JSON object; that composer is not imported")
            continue
        kids = [x for f in ("subagentComposerIds", "subComposerIds")
                for x in (data.get(f) or ()) if isinstance(x, str)]
        info[cid] = (data.get("createdAt") if isinstance(data.get("createdAt"), (int, float)) else 0,
                     kids)
    parent_of = {k: cid for cid, (_t, kids) in info.items() for k in kids if k in info and k != cid}
    order = sorted((c for c in info if c not in parent_of), key=lambda c: (info[c][0], c))
    queue, seen = list(order), set(order)
    while queue:  # children after their parent, breadth first
        cid = queue.pop(0)
        for k in sorted(info[cid][1]):
            if k in info and k not in seen and parent_of.get(k) == cid:
                seen.add(k)
                order.append(k)
                queue.append(k)
    order += sorted((c for c in info if c not in seen), key=lambda c: (info[c][0], c))  # cycles
    drafts = 0
    for cid in order:
        doc = _read_composer(ctx, path, con, cid, heads.get(cid))
        if doc is None:
            drafts += 1
            continue
        parent_cid = parent_of.get(cid, "")
        parent = ctx.sessions.get((FMT, parent_cid, "composer"), "") if parent_cid else ""
        _Composer(ctx, path.name, doc, "state.vscdb", parent, parent_cid).run()
    if drafts:
        ctx.report.notes.append(f"{path.name}: {drafts} composer(s) without any message "
                                f"(drafts) not imported")
    if not info:
        ctx.report.notes.append(f"{path.name}: no composerData rows: no {LABEL} conversations")


def _read_composer(ctx: ImportContext, path: Path, con: sqlite3.Connection, cid: str,
                   head: dict | None) -> dict | None:
    """One composer as the dump document, read in one transaction; None for a draft."""
    con.execute("BEGIN")
    try:
        row = con.execute("SELECT value FROM cursorDiskKV WHERE key = ?",
                          (f"composerData:{cid}",)).fetchone()
        data = _row_json(row[0]) if row else None
        if not isinstance(data, dict) or RAW in data:
            return None
        rows = _bubble_rows(con, cid)
        headers = [h.get("bubbleId") for h in data.get("fullConversationHeadersOnly") or ()
                   if isinstance(h, dict)]
        bubbles: list[Any] = []
        for bid in headers:
            if isinstance(bid, str) and bid in rows:
                bubbles.append(_bubble_value(ctx, path, cid, bid, rows.pop(bid)))
        leftovers = [_bubble_value(ctx, path, cid, bid, v) for bid, v in rows.items()]
        leftovers.sort(key=lambda x: (as_str(x.get("createdAt")) if isinstance(x, dict) else "",
                                      as_str(x.get("bubbleId")) if isinstance(x, dict) else ""))
        bubbles += leftovers
        if not bubbles and not data.get("conversation"):
            return None
        blobs: dict[str, str] = {}
        for bub in bubbles:
            for key in _content_ids(bub):
                h = key[len("composer.content."):]
                if h in blobs:
                    continue
                r = con.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
                if r is not None:
                    v = r[0]
                    blobs[h] = v.decode("utf-8", "replace") if isinstance(v, bytes) else \
                        "" if v is None else str(v)
    finally:
        con.execute("COMMIT")
    doc: dict[str, Any] = {}
    if head is not None:
        doc["head"] = head
    doc["data"] = data
    doc["bubbles"] = bubbles
    doc["content_blobs"] = blobs
    return doc


def _bubble_value(ctx: ImportContext, path: Path, cid: str, bid: str, v: Any) -> Any:
    value = _row_json(v)
    if isinstance(value, dict) and RAW in value and len(value) == 1:
        ctx.warn(path.name, 0, f"bubbleId:{cid}:{bid}: not JSON; kept as raw text")
    return value


# ---------------------------------------------------------------------------------------------
# The cursor-agent CLI chat store (store.db)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _proto(data: bytes) -> list[tuple[int, int, Any]] | None:
    """The (field, wire type, value) of a protobuf message, or None if it is not one."""
    out, i = [], 0
    try:
        while i < len(data):
            key, i = _varint(data, i)
            field, wt = key >> 3, key & 7
            if field == 0:
                return None
            if wt == 0:
                v, i = _varint(data, i)
            elif wt == 1:
                v, i = data[i:i + 8], i + 8
            elif wt == 2:
                n, i = _varint(data, i)
                v, i = data[i:i + n], i + n
            elif wt == 5:
                v, i = data[i:i + 4], i + 4
            else:
                return None
            if i > len(data):
                return None
            out.append((field, wt, v))
    except ValueError:
        return None
    return out


def _json_message(data: bytes) -> dict | None:
    try:
        v = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return v if isinstance(v, dict) else None


def links(data: bytes) -> tuple[list[str], list[dict]]:
    """(child blob ids, embedded JSON messages) of a linking blob: protobuf field 1 holds
    32-byte child ids; a length-delimited field holding a JSON object is an embedded message.
    Bytes that are not protobuf are read as `0A 20 <32 bytes>` runs and a JSON tail."""
    fields = _proto(data)
    kids: list[str] = []
    msgs: list[dict] = []
    if fields is not None:
        for f, wt, v in fields:
            if wt != 2:
                continue
            if f == 1 and len(v) == 32:
                kids.append(v.hex())
            elif v[:1] == b"{" and (m := _json_message(v)) is not None:
                msgs.append(m)
        return kids, msgs
    i = 0
    while i + 34 <= len(data) and data[i] == 0x0A and data[i + 1] == 0x20:
        kids.append(data[i + 2:i + 34].hex())
        i += 34
    j = data.find(b"{", i)
    if j >= 0:
        try:
            m, _end = json.JSONDecoder().raw_decode(data[j:].decode("utf-8", "replace"))
            if isinstance(m, dict):
                msgs.append(m)
        except ValueError:
            pass
    return kids, msgs


def _blob_bytes(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    return b"" if v is None else str(v).encode()


def walk_blobs(blobs: dict[str, bytes], root: str) -> tuple[list[str], list[str]]:
    """(blob ids reachable from `root`, children before the blob naming them; ids named but
    missing from the table)."""
    order: list[str] = []
    missing: list[str] = []
    done: set[str] = set()
    stack: list[tuple[str, bool]] = [(root, False)] if root else []
    while stack:
        bid, expanded = stack.pop()
        if expanded:
            order.append(bid)
            continue
        if bid in done:
            continue
        done.add(bid)
        if bid not in blobs:
            missing.append(bid)
            continue
        data = blobs[bid]
        stack.append((bid, True))
        if data[:1] != b"{":
            kids, _msgs = links(data)
            stack.extend((k, False) for k in reversed(kids))
    return order, missing


def _import_store(ctx: ImportContext, path: Path) -> None:
    try:
        con = _connect(path)
    except sqlite3.Error as exc:
        raise _db_error(path, exc) from None
    try:
        con.execute("BEGIN")
        metas = con.execute("SELECT key, value FROM meta").fetchall()
        blobs = {str(k): _blob_bytes(v) for k, v in con.execute("SELECT id, data FROM blobs")}
        con.execute("COMMIT")
    except sqlite3.Error as exc:
        raise _db_error(path, exc) from None
    finally:
        con.close()
    _ChatStore(ctx, path, metas, blobs).run()


def _meta_json(v: Any) -> dict:
    text = _value_text(v)
    if text is None:
        return {}
    for decode in (lambda s: bytes.fromhex(s).decode("utf-8"), lambda s: s):
        try:
            obj = json.loads(decode(text.strip()))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(obj, dict):
            return obj
    return {}


class _ChatStore:
    def __init__(self, ctx: ImportContext, path: Path, metas: list, blobs: dict[str, bytes]) -> None:
        self.ctx, self.path, self.blobs = ctx, path, blobs
        metas = sorted(metas, key=lambda r: (str(r[0]) != "0", str(r[0])))
        self.metas = metas
        meta = _meta_json(metas[0][1]) if metas and str(metas[0][0]) == "0" else {}
        self.meta = meta
        sid = as_str(meta.get("agentId")) or path.parent.name
        self.root = as_str(meta.get("latestRootBlobId"))
        self.order, self.missing = walk_blobs(blobs, self.root)
        reached = set(self.order)
        self.unreached = sorted(k for k in blobs if k not in reached)
        name = as_str(meta.get("name"))
        title = name if name.strip() not in _PLACEHOLDER_NAMES else ""
        if not title:
            title = _first_title(_texts(m.get("content")) for m in self.messages_of_order()
                                 if m.get("role") == "user")
        origin: dict[str, Any] = {"format": FMT, "id": sid, "store": "store.db", "agent_id": "chat"}
        ws = path.parent.parent.name
        if path.parent.name == sid and len(ws) == 32 and all(c in "0123456789abcdef" for c in ws):
            origin["workspace_hash"] = ws
        self.b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=sid,
                                ts=_iso_ms(meta.get("createdAt")), nonce=sid, origin=origin,
                                title=title, agent="chat")
        self.calls: dict[str, tuple[str, str]] = {}
        self.line = 0

    def messages_of_order(self) -> Iterator[dict]:
        for bid in self.order:
            data = self.blobs[bid]
            if data[:1] == b"{":
                m = _json_message(data)
                if m is not None:
                    yield m
            else:
                yield from links(data)[1]

    def run(self) -> None:
        b, ctx = self.b, self.ctx
        line = 0
        for key, value in self.metas:
            rec = {"table": "meta", "key": key, "value": value} if not isinstance(value, bytes) \
                else {"table": "meta", "key": key, "value_hex": value.hex()}
            b.begin(line, rec, "")
            m = self.meta if line == 0 else {}
            payload = {k: m[k] for k in ("name", "mode", "lastUsedModel") if isinstance(m.get(k), str)}
            _bookkeeping(b, "meta", payload, b.ts(_iso_ms(m.get("createdAt"))))
            line += 1
        for bid in self.order:
            self.blob(line, bid, reached=True)
            line += 1
        for bid in self.unreached:
            self.blob(line, bid, reached=False)
            line += 1
        if self.missing and self.blobs:
            ctx.report.notes.append(f"{self.path.name}: {len(self.missing)} blob(s) named in the "
                                    f"message tree are not in the table (e.g. {self.missing[0][:16]})")
        if not self.blobs:
            ctx.report.notes.append(f"{self.path.name}: the chat store has no messages (its blobs "
                                    f"table is empty); imported its metadata only")
        elif not self.order:
            ctx.report.notes.append(f"{self.path.name}: latestRootBlobId names no blob of the "
                                    f"table; its {len(self.blobs)} blob(s) kept unread")
        b.finish()

    def blob(self, line: int, bid: str, reached: bool) -> None:
        b = self.b
        self.line = line
        data = self.blobs[bid]
        msg = _json_message(data) if data[:1] == b"{" else None
        if msg is not None:
            b.begin(line, {"table": "blobs", "id": bid, "data": msg}, "")
            if reached:
                self.message(msg)
            else:
                _bookkeeping(b, "blob", {"id": bid, "reachable": False})
            return
        b.begin(line, {"table": "blobs", "id": bid, "data_hex": data.hex()}, "")
        kids, msgs = links(data)
        _bookkeeping(b, "blob", {"id": bid, "children": len(kids), **({} if reached else
                                                                        {"reachable": False})})
        if reached:
            for m in msgs:
                self.message(m)

    def message(self, m: dict) -> None:
        b = self.b
        role = m.get("role")
        content = m.get("content")
        if role == "user":
            blocks = [TextBlock(as_str(c.get("text"))) for c in _content_list(content)
                      if isinstance(c, dict) and c.get("type") == "text"]
            _user(b, blocks, "\n".join(x.text for x in blocks), b.last_ts)
        elif role == "assistant":
            blocks: list = []
            model = ""
            for c in _content_list(content):
                if not isinstance(c, dict):
                    continue
                t = c.get("type")
                po = (c.get("providerOptions") or {}).get("cursor") \
                    if isinstance(c.get("providerOptions"), dict) else None
                if isinstance(po, dict) and isinstance(po.get("modelName"), str):
                    model = po["modelName"]
                if t == "text":
                    blocks.append(TextBlock(as_str(c.get("text"))))
                elif t in ("reasoning", "thinking"):
                    blocks.append(ThinkingBlock(as_str(c.get("text")) or as_str(c.get("thinking")),
                                                as_str(c.get("signature"))))
                elif t in ("tool-call", "tool_call", "tool_use"):
                    tcid = as_str(c.get("toolCallId")) or as_str(c.get("id")) or f"cursor-call-{len(self.calls)}"
                    args = c.get("args") if "args" in c else c.get("input", {})
                    blocks.append(ToolCallBlock(tcid, as_str(c.get("toolName")) or as_str(c.get("name")),
                                                args if args is not None else {}))
            text = "\n".join(x.text for x in blocks if isinstance(x, TextBlock))
            mid = b.message("assistant", blocks)
            payload: dict[str, Any] = {"text": preview(text)}
            if model:
                payload["model"] = model
            b.append("ModelResponseReceived", "model", payload, {"message_id": mid})
            for blk in blocks:
                if isinstance(blk, ToolCallBlock):
                    eid = b.append("ToolCallRequested", "model",
                                   tool_requested_payload(blk.tool_call_id, blk.name, blk.args),
                                   {"tool_call_id": blk.tool_call_id, "message_id": mid})
                    self.calls[blk.tool_call_id] = (eid, blk.name)
        elif role == "tool":
            results = [c for c in content or () if isinstance(c, dict)
                       and c.get("type") in ("tool-result", "tool_result")] \
                if isinstance(content, list) else []
            if not results:
                _bookkeeping(b, "tool", {}, actor="tool")
            for c in results:
                tcid = as_str(c.get("toolCallId")) or as_str(c.get("tool_use_id")) or as_str(m.get("id"))
                call = self.calls.pop(tcid, None)
                if call is None:
                    b.ctx.warn(b.file, self.line, f"tool result without its call ({tcid or 'no id'})")
                    _bookkeeping(b, "tool_result", {"tool_call_id": tcid}, actor="tool")
                    continue
                text = _result_text(c.get("result") if "result" in c else c.get("content"))
                b.tool_result(tcid, call[1], call[0], text, c.get("isError") is True, b.last_ts)
        else:
            text = _texts(content)
            r = role if isinstance(role, str) and role in ("system", "developer") else "custom"
            mid = b.message(r, [TextBlock(text)])
            b.append("MessageAdded", "system", {"role": r, "text": preview(text)},
                     {"message_id": mid})
