"""The oracle for Goose sessions, written from block/goose's own formats (it imports nothing
from ctxstore: it judges the importer).

Goose (crates/goose/src/session, conversation/message.rs) keeps a session as
- a `goose session export` document `{id, working_dir, name, session_type, usage,
  accumulated_usage, conversation: [message], message_count, …}` (older exports: the flat
  `input_tokens`/`accumulated_input_tokens`… fields);
- an older `<id>.jsonl` file: a metadata line `{working_dir, description, message_count,
  input_tokens, output_tokens, accumulated_input_tokens, …}`, then one message per line;
- rows of the `sessions.db` SQLite store (`sessions`, `messages.content_json`).
A message is `{id, role, created, content: [{type: text|image|toolRequest|toolResponse|…}],
metadata: {userVisible, agentVisible}}`; a toolRequest `{id, toolCall: {status, value: {name,
arguments}}}` is answered by a toolResponse `{id, toolResult: {status, value}}` in a later user
message (`status: "error"`, or a value `{isError: true}`, is a failure; so is Goose's own
"The user has declined to run this tool" answer, recorded as a success).

What counts, by the rules ctxstore's issue 31 sets for this harness:
- prompts: user messages with text that the user sees (`userVisible` not false);
- writes: `developer__text_editor` write/str_replace/insert/undo_edit, the platform developer's
  `write`/`edit` (prefixed or not), and Claude Code's Write/Edit/MultiEdit when Goose drives it;
  reads: text_editor view, Read, developer__image_processor; plan: the newest TODO write's
  checklist items (`todo__todo_write`, `todo__write`, `todo_write`);
- tokens: per session, accumulated_usage, else usage (flat fields: accumulated_*, else *):
  input = input_tokens (cached included), cache read = cache_read_input_tokens, output =
  output_tokens.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from tests.oracles.transcripts import MAIN, Call, Transcript, _mark_later, prompt_text

EDITOR = {"developer__text_editor", "text_editor"}
WRITE_PLAIN = {"developer__write", "write", "developer__edit", "edit"}
CLAUDE_WRITE = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
READ_PLAIN = {"developer__image_processor": "path", "Read": "file_path"}
TODO = {"todo__todo_write", "todo__write", "todo_write"}
_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX~-]?\]\s+(.+?)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+?)\s*$")


def _is_message(r) -> bool:
    return (isinstance(r, dict) and r.get("role") in ("user", "assistant")
            and isinstance(r.get("content"), list) and "created" in r and "type" not in r)


def _is_meta(r) -> bool:
    return (isinstance(r, dict) and "role" not in r and "type" not in r
            and isinstance(r.get("description"), str)
            and ("message_count" in r or "working_dir" in r))


def _db_ok(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            cols = {t: {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
                    for t in ("sessions", "messages")}
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False
    return "working_dir" in cols["sessions"] and "content_json" in cols["messages"]


def detect(path: Path) -> bool:
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix == ".db":
        return _db_ok(path)
    try:
        if path.suffix == ".json":
            doc = json.loads(path.read_text(encoding="utf-8"))
            return isinstance(doc, dict) and "working_dir" in doc and "id" in doc and (
                isinstance(doc.get("conversation"), list) or "message_count" in doc)
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as fh:
                first = fh.readline()
            r = json.loads(first)
            return _is_meta(r) or _is_message(r)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def units(root: Path) -> list[Path]:
    return sorted(p for pat in ("*.json", "*.db") for p in Path(root).rglob(pat)
                  if not p.is_symlink() and detect(p))


def _sessions(path: Path) -> list[tuple[dict, list]]:
    """(session metadata, messages) of every session the unit holds."""
    if path.suffix == ".json":
        doc = json.loads(path.read_text(encoding="utf-8"))
        conv = doc.get("conversation")
        return [(doc, conv if isinstance(conv, list) else [])]
    if path.suffix == ".db":
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        out = []
        try:
            for s in con.execute("SELECT * FROM sessions"):
                msgs = []
                for m in con.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id",
                                     (s["id"],)):
                    try:
                        content = json.loads(m["content_json"])
                    except (TypeError, ValueError):
                        continue
                    meta = {}
                    if "metadata_json" in m.keys() and m["metadata_json"]:
                        try:
                            meta = json.loads(m["metadata_json"])
                        except ValueError:
                            meta = {}
                    msgs.append({"role": m["role"], "content": content, "metadata": meta,
                                 "created": m["created_timestamp"]})
                out.append((dict(s), msgs))
        finally:
            con.close()
        return out
    meta, msgs = {}, []
    with open(path, encoding="utf-8") as fh:
        for i, raw in enumerate(fh):
            try:
                r = json.loads(raw)
            except ValueError:
                continue
            if i == 0 and _is_meta(r):
                meta = r
            elif _is_message(r):
                msgs.append(r)
    return [(meta, msgs)]


def _n(v) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _tokens(meta: dict) -> tuple[int, int, int] | None:
    for key in ("accumulated_usage", "usage"):
        u = meta.get(key)
        if isinstance(u, dict) and (_n(u.get("input_tokens")) is not None
                                    or _n(u.get("output_tokens")) is not None):
            return (_n(u.get("input_tokens")) or 0, _n(u.get("cache_read_input_tokens")) or 0,
                    _n(u.get("output_tokens")) or 0)
    for pre in ("accumulated_", ""):
        i, o = _n(meta.get(pre + "input_tokens")), _n(meta.get(pre + "output_tokens"))
        if i is not None or o is not None:
            return i or 0, _n(meta.get(pre + "cache_read_input_tokens")) or 0, o or 0
    return None


def _declined(value) -> bool:
    """Goose answers a call the user declined (or chat mode skipped) with a *success* result
    whose text says so (agents/tool_execution.rs): the call did not run."""
    items = value.get("content") if isinstance(value, dict) else value
    text = " ".join(c.get("text", "") for c in items or [] if isinstance(c, dict)
                    and isinstance(c.get("text"), str)) if isinstance(items, list) else ""
    return "has declined to run this tool" in text or "tool call was skipped in goose chat mode" in text


def _checklist(text: str) -> tuple[str, ...]:
    lines = text.splitlines()
    items = [m.group(1) for m in map(_CHECK.match, lines) if m]
    if not items:
        items = [m.group(1) for m in map(_ITEM.match, lines) if m]
    return tuple(items)


def analyze(path: Path) -> Transcript:
    path = Path(path)
    t = Transcript(path=path, harness="goose")
    results: dict[str, tuple[str, int]] = {}
    total = 0
    for meta, msgs in _sessions(path):
        cwd = meta.get("working_dir") if isinstance(meta.get("working_dir"), str) else None
        t.cwd = t.cwd or cwd
        tok = _tokens(meta)
        if tok is not None:
            t.usage_records += 1
            t.input_tokens += tok[0]
            t.cache_read_tokens += tok[1]
            t.output_tokens += tok[2]
        group = MAIN  # each session of a database is its own main line
        for line, m in enumerate(msgs, 1):  # line i: the session's i-th message (0: the session)
            total += 1
            content = [c for c in m.get("content") or [] if isinstance(c, dict)]
            md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            if m.get("role") == "user":
                for c in content:
                    if c.get("type") == "toolResponse" and isinstance(c.get("id"), str):
                        tr = c.get("toolResult") if isinstance(c.get("toolResult"), dict) else {}
                        v = tr.get("value")
                        bad = tr.get("status") == "error" or (isinstance(v, dict) and v.get("isError") is True)
                        bad = bad or _declined(v)
                        results[c["id"]] = ("error" if bad else "ok", line)
                text = "\n".join(c["text"] for c in content
                                 if c.get("type") == "text" and isinstance(c.get("text"), str))
                real = prompt_text(text) if md.get("userVisible") is not False else ""
                if real:
                    t.prompts.append((line, group, real))
                continue
            for c in content:
                if c.get("type") not in ("toolRequest", "frontendToolRequest") or not isinstance(c.get("id"), str):
                    continue
                tc = c.get("toolCall") if isinstance(c.get("toolCall"), dict) else {}
                v = tc.get("value") if isinstance(tc.get("value"), dict) else {}
                name = v.get("name") if isinstance(v.get("name"), str) else ""
                args = v.get("arguments") if isinstance(v.get("arguments"), dict) else {}
                call = Call(id=c["id"], name=name, args=args, line=line, group=group, cwd=cwd)
                p = args.get("path") if isinstance(args.get("path"), str) else None
                if name in EDITOR and p:
                    if args.get("command") in ("write", "str_replace", "insert", "undo_edit"):
                        call.writes = (p,)
                    elif args.get("command") == "view":
                        call.reads = (p,)
                elif name in WRITE_PLAIN and p:
                    call.writes = (p,)
                elif name in CLAUDE_WRITE and isinstance(args.get(CLAUDE_WRITE[name]), str):
                    call.writes = (args[CLAUDE_WRITE[name]],)
                elif name in READ_PLAIN and isinstance(args.get(READ_PLAIN[name]), str):
                    call.reads = (args[READ_PLAIN[name]],)
                elif name in TODO and isinstance(args.get("content"), str):
                    call.plan = _checklist(args["content"])
                t.calls.append(call)
    t.lines = total
    for c in t.calls:
        if c.id in results:
            c.status, c.result_line = results[c.id]
    _mark_later(t)
    return t
