"""Gemini CLI sessions (`$GEMINI_CLI_HOME/.gemini/tmp/<project>/`, else `~/.gemini/tmp/<project>/`).

Three shapes, told apart by their first bytes (docs/harnesses/gemini.md has the whole mapping):

- The JSONL chat recording `chats/session-<ts>-<id8>.jsonl` (a subagent's: `chats/<parent
  session id>/<agent id>.jsonl`): a metadata line `{sessionId, projectHash, startTime, kind?,
  directories?}`, message records `{id, timestamp, type: user|gemini|info|error|warning,
  content, displayContent?, toolCalls?, thoughts?, tokens?, model?}`, `{"$set": {...}}`
  metadata patches and `{"$rewindTo": id}`. gemini-cli keeps messages in a map by id, so a
  record written again under the same id replaces the earlier copy: here only what the new copy
  adds is appended (changed text, new tool calls, results, tokens; usage carries the message id
  as `response_id`, so a message's tokens count once). `$rewindTo` drops that message and every
  later one: a branch starts at the event before it, the old history stays a `rewind-*`
  branch. `$set.messages` replaces the history: a shorter prefix (an aborted turn rolled back)
  is a branch too; a history that lost messages and gained new ones (a compression) is a
  Compaction whose summary is the new messages' text. The file is appended to, so
  `ctx import --follow` feeds it line by line (`open_file`).
- The older one-document `session-*.json` (`messages` inside; the oldest has no `kind` and
  plain-string user content): line 0 is the document without its messages, line i its message
  i - 1; `export` writes the document back.
- `logs.json`, the array of everything the user typed (`{sessionId, messageId, type: "user",
  message, timestamp}`): one prompt-log session per sessionId (origin `{id: sessionId,
  agent_id: "logs"}`, beside the chat session of that id, whichever is imported first).

A recording ctxstore converted (`ctx resume --in gemini`) names its source in the metadata's
`ctxstore` key: the import is a fork of that session (ctxstore.convert.import_link).

A subagent session (`kind: "subagent"`) is a child of the session named by its folder, and of
the `invoke_agent` (or named agent tool) call whose record carries its `agentId` when both are
imported together. No path from the data is ever opened.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import jsonparse
from ..convert import PROVENANCE_KEY, import_link
from ..errors import InvalidInput
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

FMT = "gemini"
LABEL = "Gemini CLI"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: a tool call's final status -> whether its result is an error (others are still running)
FINAL = {"success": False, "error": True, "cancelled": True}
#: user-role text gemini-cli adds itself (sessionUtils.isIgnoredUserContent)
CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
HEAD_BYTES = 65536
_PREFIX_SCAN = re.compile(r'"sessionId"\s*:')
_HASH_SCAN = re.compile(r'"projectHash"\s*:')
_LOG_SCAN = re.compile(r'"messageId"\s*:')


# ---------------------------------------------------------------------------------------------
# Which files are Gemini's


def _is_meta(rec: Any) -> bool:
    """The metadata record (gemini-cli's isPartialMetadataRecord): sessionId + projectHash, and
    none of the keys Claude Code and Qwen Code lines carry."""
    return (isinstance(rec, dict) and isinstance(rec.get("sessionId"), str)
            and isinstance(rec.get("projectHash"), str)
            and not any(k in rec for k in ("uuid", "parentUuid", "message", "type")))


def _head(path: Path) -> str:
    try:
        with open_input(path) as fh:
            data = fh.read(HEAD_BYTES)
    except Exception:  # noqa: BLE001 - an unreadable file is simply not ours
        return ""
    return data.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")


def form_of(path: Path) -> str | None:
    """"jsonl" (the chat recording), "json" (a one-document session), "logs" or None, from
    the first bytes (a document is claimed when its first 64 KiB name both a sessionId and
    a projectHash; logs.json when they name a sessionId and a messageId)."""
    if not path.is_file():
        return None
    head = _head(path)
    if head.startswith("["):
        if _PREFIX_SCAN.search(head) and _LOG_SCAN.search(head):
            return "logs"
        return "logs" if path.name == "logs.json" and head.rstrip() == "[]" else None
    if not head.startswith("{"):
        return None
    lines = head.split("\n")
    for k, line in enumerate(lines[:5]):
        if not line.strip():
            continue
        try:
            rec = jsonparse.loads(line)
        except ValueError:
            if k == 0 and line.strip() == "{" or not line.rstrip().endswith("}"):
                break  # a pretty-printed document (or a first line longer than the head)
            continue  # a damaged line: look at the next ones
        if not _is_meta(rec):
            return None
        rest = "\n".join(lines[k + 1:]).strip()
        return "json" if path.suffix == ".json" and not rest else "jsonl"
    if path.suffix == ".json" and _PREFIX_SCAN.search(head) and _HASH_SCAN.search(head):
        return "json"
    return None


def sniff(path: Path) -> bool:
    return form_of(Path(path)) is not None


def session_units(root: Path) -> list[Path]:
    """The session documents and logs.json files under ROOT (its *.jsonl files are walked by
    detect.py). A symlink that leads out of ROOT is not followed. A `session-x.json` with a
    `session-x.jsonl` beside it is skipped: gemini-cli migrated it to that recording when the
    session was resumed (the recording starts with all its messages) and reads only that one."""
    root = Path(root)
    try:
        top = root.resolve()
    except OSError:
        return []
    out = []
    for p in root.rglob("*.json"):
        if p.is_symlink():
            try:
                if not p.resolve().is_relative_to(top):
                    continue
            except OSError:
                continue
        if p.with_name(p.name + "l").is_file():
            continue
        if p.is_file() and form_of(p) in ("json", "logs"):
            out.append(p)
    return sorted(out)


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """gemini-cli's homedir() is $GEMINI_CLI_HOME when set (taken as is), else the user's home;
    sessions, logs.json and checkpoints live under <home>/.gemini/tmp/<project>."""
    value = env.get("GEMINI_CLI_HOME")
    base = Path(value).expanduser() if value else home
    return [base / ".gemini" / "tmp"]


def is_document(origin: Mapping[str, Any]) -> bool:
    """Whether a session came from a document (export writes it back whole) rather than the
    JSONL recording (export writes it back line by line)."""
    return origin.get("form") in ("json", "logs")


# ---------------------------------------------------------------------------------------------
# Content


def _parts(content: Any) -> list:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content if isinstance(p, (dict, str))]
    return []


def _text(content: Any) -> str:
    return "\n".join(p["text"] for p in _parts(content)
                     if isinstance(p.get("text"), str) and not p.get("thought"))


def _only_responses(parts: list) -> bool:
    return bool(parts) and all("functionResponse" in p for p in parts)


def _user_blocks(parts: list) -> list:
    out: list = []
    for p in parts:
        if isinstance(p.get("text"), str):
            out.append(TextBlock(p["text"]))
        elif isinstance(p.get("inlineData"), dict):
            out.append(ImageBlock(media_type=str(p["inlineData"].get("mimeType", ""))))
        elif isinstance(p.get("fileData"), dict):
            fd = p["fileData"]
            out.append(ImageBlock(media_type=str(fd.get("mimeType", "")),
                                  uri=str(fd.get("fileUri", ""))))
    return out


def _prompt_of(rec: dict) -> str:
    """What the user typed: displayContent when gemini-cli kept it (content then holds the
    expanded @file text), else the content."""
    shown = rec.get("displayContent")
    return _text(shown if shown is not None else rec.get("content"))


def _thinking(rec: dict, parts: list) -> list:
    out = []
    for t in rec.get("thoughts") or []:
        if isinstance(t, dict):
            subject, desc = t.get("subject"), t.get("description")
            text = "\n".join(x for x in (subject, desc) if isinstance(x, str) and x)
            if text:
                out.append(ThinkingBlock(text))
    for p in parts:
        if p.get("thought") and isinstance(p.get("text"), str):
            out.append(ThinkingBlock(p["text"], str(p.get("thoughtSignature", ""))))
    return out


def _calls(rec: dict, parts: list) -> list[dict]:
    """The message's tool calls: its toolCalls records, then functionCall parts of its content
    that no record names (the same call is one call)."""
    out = [c for c in rec.get("toolCalls") or [] if isinstance(c, dict) and isinstance(c.get("id"), str)
           and c["id"]]
    ids = {c["id"] for c in out}
    for p in parts:
        fc = p.get("functionCall")
        if isinstance(fc, dict) and isinstance(fc.get("id"), str) and fc["id"] not in ids:
            ids.add(fc["id"])
            out.append({"id": fc["id"], "name": fc.get("name"), "args": fc.get("args")})
    return out


def _response_text(resp: Any) -> str:
    if isinstance(resp, dict):
        for key in ("output", "error", "llmContent", "content"):
            if isinstance(resp.get(key), str):
                return resp[key]
        return json.dumps(resp, ensure_ascii=False, sort_keys=True)
    return resp if isinstance(resp, str) else ""


def _result_text(result: Any, display: Any = None) -> str:
    texts = []
    for p in _parts(result):
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            texts.append(_response_text(fr.get("response")))
        elif isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif isinstance(p.get("inlineData"), dict):
            texts.append(f"[{p['inlineData'].get('mimeType', 'binary')} data]")
    if not any(texts) and isinstance(display, str):
        texts.append(display)
    return "\n".join(t for t in texts if t)


def _usage(tokens: Any) -> dict | None:
    """{input_tokens (cached included), cached_input_tokens, output_tokens (output + thoughts)}
    of a message's `tokens` (Gemini's promptTokenCount already includes the cached part)."""
    if not isinstance(tokens, dict):
        return None
    n = tokens.get
    return usage_payload(as_int(n("input")), as_int(n("cached")),
                         as_int(n("output")) + as_int(n("thoughts")))


def _first_title(messages) -> str:
    for m in messages:
        if isinstance(m, dict) and m.get("type") == "user":
            parts = _parts(m.get("content"))
            if _only_responses(parts):
                continue
            text = _prompt_of(m)
            if text.strip().startswith(CONTEXT_PREFIXES):
                continue
            title = title_of(prompt_text(text))
            if title:
                return title
    return ""


def _meta_payload(meta: dict) -> dict:
    """What a metadata record (or `$set`) tells the state besides the title: its keys, the
    kind and times."""
    out: dict[str, Any] = {"keys": sorted(k for k in meta if isinstance(k, str))[:20]}
    for k in ("kind", "startTime", "lastUpdated"):
        if isinstance(meta.get(k), str):
            out[k] = meta[k]
    return out


# ---------------------------------------------------------------------------------------------
# One session's records


class _Msg:
    __slots__ = ("before", "first", "text", "usage", "calls")

    def __init__(self, before: tuple[str, int]) -> None:
        self.before = before  # (tip, generation) just before the message's first event
        self.first = ""       # its first event
        self.text: tuple | None = None  # (text, thinking) last appended
        self.usage: dict | None = None
        self.calls: set[str] = set()


class GeminiSession:
    """Maps the records of one Gemini session onto a SessionBuilder (`run` a JSONL file, or
    `feed` records one at a time: `ctx import --follow`, a document's messages)."""

    def __init__(self, b: SessionBuilder, source: str, kind: str) -> None:
        self.b = b
        self.source = source
        self.kind = kind
        self.live: dict[str, _Msg] = {}   # message id -> entry, in history order
        self.calls: dict[str, list] = {}  # call id -> [requested event, name, answered]

    def run(self, path: Path) -> None:
        for n, text, rec in iter_jsonl(self.b.ctx, path):
            self.feed(n, text, rec)

    # -- one record ----------------------------------------------------------------------------
    def feed(self, n: int, text: str, rec: Any) -> None:
        b = self.b
        b.begin(n, rec, text)
        before = b.stats.events
        if rec is MALFORMED:
            b.append(f"{FMT}:malformed", "system", {})
            return
        if isinstance(rec.get("$rewindTo"), str):
            self.rewind(rec["$rewindTo"], n)
        elif isinstance(rec.get("id"), str):
            self.message(rec, n)
        elif isinstance(rec.get("$set"), dict):
            s = rec["$set"]
            ts = b.ts(s.get("lastUpdated"))
            if isinstance(s.get("messages"), list):
                self.replace_history(s["messages"], n, ts)
            self.metadata(s, ts)
        elif _is_meta(rec):
            ts = b.ts(rec.get("lastUpdated") or rec.get("startTime"))
            if isinstance(rec.get("messages"), list):  # a whole legacy record on one line
                for m in rec["messages"]:
                    if isinstance(m, dict) and isinstance(m.get("id"), str):
                        self.message(m, n)
            self.metadata(rec, ts)
        else:
            keys = ", ".join(sorted(str(k) for k in rec)[:5])
            b.ctx.warn(b.file, n, f"unknown record type (keys {keys}); kept as {FMT}:unknown")
            b.append(f"{FMT}:unknown", "system", {})
        if b.stats.events == before:  # a record that changed nothing is still kept
            b.append(f"{FMT}:rewrite", "system", {"id": rec.get("id")} if isinstance(
                rec.get("id"), str) else {})

    def metadata(self, meta: dict, ts: str) -> None:
        """`gemini:metadata`, with the summary gemini-cli generates as the session's display
        title (not a subagent's: its summary is its answer)."""
        payload = _meta_payload(meta)
        if self.kind != "subagent" and isinstance(meta.get("summary"), str) and meta["summary"].strip():
            payload["title"] = preview(meta["summary"].strip(), 200)
        self.b.append(f"{FMT}:metadata", "system", payload, ts=ts)

    def message(self, rec: dict, n: int) -> None:
        b = self.b
        mid, t = rec["id"], rec.get("type")
        ts = b.ts(rec.get("timestamp"))
        entry = self.live.get(mid)
        new = entry is None
        if new:
            entry = self.live[mid] = _Msg((b.tip, b.tip_gen))
        start = b.stats.events
        if t == "user":
            self.user(rec, entry, new, ts)
        elif t == "gemini":
            self.gemini(rec, entry, new, ts)
        elif t in MESSAGE_TYPES:  # info / error / warning: shown to the user, not the model
            if new:
                b.append(f"{FMT}:{t}", "system",
                         {"id": mid, "text": preview(_text(rec.get("content")))}, ts=ts)
        else:
            b.ctx.warn(b.file, n, f"unknown record type {t!r} (message {mid[:12]}); "
                                  f"kept as {FMT}:message")
            b.append(f"{FMT}:message", "system",
                     {"id": mid, **({"type": t} if isinstance(t, str) else {})}, ts=ts)
        if new and b.stats.events > start and not entry.first:
            entry.first = b.tip if b.stats.events == start + 1 else self._first_since(entry.before[0])

    def _first_since(self, tip: str) -> str:
        first = ""
        for eid, _ev in self.b.repo.graph.first_parents(self.b.tip):
            if eid == tip:
                break
            first = eid
        return first

    def user(self, rec: dict, entry: _Msg, new: bool, ts: str) -> None:
        b = self.b
        parts = _parts(rec.get("content"))
        for p in parts:  # results gemini-cli records as a user turn (newer versions)
            fr = p.get("functionResponse")
            if isinstance(fr, dict) and isinstance(fr.get("id"), str):
                call = self.calls.get(fr["id"])
                if call is not None and not call[2]:
                    resp = fr.get("response")
                    err = isinstance(resp, dict) and "error" in resp and "output" not in resp
                    b.tool_result(fr["id"], call[1], call[0], _response_text(resp), err, ts)
                    call[2] = True
        if _only_responses(parts) or not new:
            return
        text = _prompt_of(rec)
        blocks = _user_blocks([p for p in parts if "functionResponse" not in p])
        if text.strip().startswith(CONTEXT_PREFIXES) or not text.strip() and not blocks:
            mid = b.message("user", blocks)
            b.append("MessageAdded", "user", {"role": "user", "text": preview(text)},
                     {"message_id": mid}, ts)
            return
        mid = b.message("user", blocks, meta={"id": rec["id"]})
        b.append("UserPromptSubmitted", "user", {"text": preview(text)}, {"message_id": mid}, ts)

    def gemini(self, rec: dict, entry: _Msg, new: bool, ts: str) -> None:
        b = self.b
        parts = _parts(rec.get("content"))
        text = _text(rec.get("content"))
        thinking = _thinking(rec, parts)
        sig = (text, tuple(t.text for t in thinking))
        calls = _calls(rec, parts)
        fresh = [c for c in calls if c["id"] not in self.calls]
        usage = _usage(rec.get("tokens"))
        blocks: list = []
        said = new or sig != entry.text
        if said:
            blocks += thinking
            if text:
                blocks.append(TextBlock(text))
        for c in fresh:
            args = c.get("args") if c.get("args") is not None else {}
            blocks.append(ToolCallBlock(c["id"], str(c.get("name") or ""), args))
        if new or blocks or (usage is not None and usage != entry.usage):
            causality = {}
            if blocks:
                meta = {"id": rec["id"]}
                if isinstance(rec.get("model"), str):
                    meta["model"] = rec["model"]
                causality["message_id"] = b.message("assistant", blocks, meta=meta)
            payload: dict[str, Any] = {"text": preview(text) if said else "", "response_id": rec["id"]}
            if isinstance(rec.get("model"), str):
                payload["model"] = rec["model"]
            if usage is not None:
                payload["usage"] = usage
            b.append("ModelResponseReceived", "model", payload, causality, ts)
            for c in fresh:
                name = str(c.get("name") or "")
                args = c.get("args") if c.get("args") is not None else {}
                eid = b.append("ToolCallRequested", "model",
                               tool_requested_payload(c["id"], name, args),
                               {"tool_call_id": c["id"], "message_id": causality["message_id"]}, ts)
                self.calls[c["id"]] = [eid, name, False]
                entry.calls.add(c["id"])
        entry.text = sig
        if usage is not None:
            entry.usage = usage
        for c in calls:
            call = self.calls.get(c["id"])
            if call is None:
                continue
            if isinstance(c.get("agentId"), str) and c["agentId"]:
                b.ctx.agent_spawns[(self.source, c["agentId"])] = call[0]
            status = c.get("status")
            if call[2] or not isinstance(status, str) or status not in FINAL:
                continue
            text = _result_text(c.get("result"), c.get("resultDisplay"))
            when = b.ts(c.get("timestamp")) if c.get("timestamp") else ts
            b.tool_result(c["id"], call[1], call[0], text, FINAL[status], when)
            call[2] = True

    # -- history changes -----------------------------------------------------------------------
    def _drop(self, ids: list[str]) -> None:
        for mid in ids:
            entry = self.live.pop(mid, None)
            for cid in entry.calls if entry is not None else ():
                self.calls.pop(cid, None)

    def rewind(self, target: str, n: int) -> None:
        """`$rewindTo`: the message and every later one leave the history; a new line starts
        at the event before it (gemini-cli clears the whole history when the id is unknown)."""
        b = self.b
        ids = list(self.live)
        if target in self.live:
            tip, gen = self.live[target].before
            cut = ids.index(target)
        else:
            b.ctx.warn(b.file, n, f"$rewindTo names message {target[:36]!r}, which is not in the "
                                  f"history; the whole history is rewound, as Gemini CLI does")
            tip, gen, cut = b.root, 1, 0
        self._drop(ids[cut:])
        b.fork(tip, gen, target[:8])
        b.append(f"{FMT}:rewind", "system", {"message_id": target})

    def replace_history(self, messages: list, n: int, ts: str) -> None:
        b = self.b
        new = [m for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)]
        ids = [m["id"] for m in new]
        live = list(self.live)
        wanted = set(ids)
        dropped = [i for i in live if i not in wanted]
        fresh = [m for m in new if m["id"] not in self.live]
        if dropped and not fresh and ids == live[:len(ids)]:
            # the history lost its tail (an aborted turn rolled back): a rewind
            tip, gen = self.live[dropped[0]].before
            self._drop(dropped)
            b.fork(tip, gen, dropped[0][:8])
            return
        if dropped:  # messages replaced by new ones: a compression
            kept = [self.live[i] for i in ids if i in self.live]
            first_kept = kept[0].first if kept else ""
            summary = "\n\n".join(t for t in (_text(m.get("content")) for m in fresh) if t.strip())
            source = self._before(first_kept) if first_kept else None
            mid = b.message("summary", [TextBlock(summary)], meta={"gemini": "$set.messages"})
            b.compaction(summary, b.tip, ts, first_kept=first_kept, source_ids=source,
                         extra={"dropped_messages": len(dropped)}, message_id=mid)
            self._drop(dropped)
            for m in fresh:
                usage = _usage(m.get("tokens")) if m.get("type") == "gemini" else None
                entry = _Msg((b.tip, b.tip_gen))
                if usage is not None:
                    b.append("ModelResponseReceived", "model", {"text": "", "response_id": m["id"],
                                                                "usage": usage}, {}, ts)
                    entry.usage = usage
                self.live[m["id"]] = entry
        else:
            for m in fresh:
                self.message(m, n)
        order = {i: self.live[i] for i in ids if i in self.live}
        order.update((i, e) for i, e in self.live.items() if i not in order)
        self.live = order

    def _before(self, event: str) -> list[str]:
        """The events before EVENT on its chain, back to the previous compaction."""
        graph, out = self.b.repo.graph, []
        parents = graph.event(event).parents
        for cur, ev in graph.first_parents(parents[0] if parents else None):
            if cur == self.b.root or ev.type == "CompactionCompleted":
                break
            out.append(cur)
        out.reverse()
        return out


# ---------------------------------------------------------------------------------------------
# Sessions


def _parent_of(path: Path, kind: str) -> str:
    """A subagent's parent session id: the folder gemini-cli files it under
    (`chats/<parent session id>/<agent id>.jsonl`)."""
    folder = path.parent.name
    return folder if kind == "subagent" and path.parent.parent.name == "chats" else ""


def _builder(ctx: ImportContext, path: Path, meta: dict, form: str,
             title: str) -> tuple[SessionBuilder, str, str]:
    sid = meta.get("sessionId")
    source = sid if isinstance(sid, str) and sid else path.stem
    kind = "subagent" if meta.get("kind") == "subagent" else "main"
    origin: dict[str, Any] = {"format": FMT, "id": source, "form": form}
    if isinstance(meta.get("projectHash"), str):
        origin["project_hash"] = meta["projectHash"]
    parent_id = _parent_of(path, kind)
    parent = spawn = ""
    if parent_id:
        origin["parent_id"] = parent_id
        parent = ctx.find_session(FMT, parent_id)
        spawn = ctx.agent_spawns.get((parent_id, source), "") if parent else ""
        if not parent:
            ctx.report.notes.append(f"{path.name}: parent session {parent_id} not imported; "
                                    f"link kept in the session origin only")
    dirs = meta.get("directories")
    cwd = ""
    if kind == "subagent" and isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
        cwd = dirs[0]  # a subagent records the workspace directories, the project root first
    # a recording ctx resume/export wrote links back to the session it came from
    link = {} if parent_id else import_link(ctx.repo, meta.get(PROVENANCE_KEY))
    origin.update(link.pop("origin", {}))
    b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=source,
                       ts=str(meta.get("startTime") or ""), nonce=source, origin=origin,
                       kind=link.pop("kind", kind), title=title,
                       parent_session=link.pop("parent_session", parent),
                       spawn_event=link.pop("spawn_event", spawn), cwd=cwd)
    return b, source, kind


def open_file(ctx: ImportContext, path: Path) -> GeminiSession:
    """The session a JSONL recording starts (from its metadata line and first prompt), ready
    to be fed its lines (`run`, or `feed` a line at a time: `ctx import --follow`)."""
    path = Path(path)
    head = list(peek_jsonl(path, limit=400))
    meta = head[0] if head and _is_meta(head[0]) else {}
    if not meta:
        ctx.warn(path.name, 1, "no Gemini CLI metadata line first; session named after the file")
    title = _first_title(r for r in head if isinstance(r.get("id"), str))
    b, source, kind = _builder(ctx, path, meta, "jsonl", title)
    return GeminiSession(b, source, kind)


def _load_document(path: Path) -> Any:
    with open_input(path) as fh:
        data = fh.read()
    try:
        return jsonparse.loads(data)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not a Gemini CLI session document "
                           f"(invalid UTF-8: {exc.reason})") from None
    except ValueError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else ""
        raise InvalidInput(f"{path}: not a Gemini CLI session document (malformed JSON{where}: "
                           f"{getattr(exc, 'msg', exc)})") from None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def import_document(ctx: ImportContext, path: Path) -> None:
    doc = _load_document(path)
    ctx.advance(os.path.getsize(path), str(path))
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}: not a Gemini CLI session document (a JSON "
                           f"{type(doc).__name__}, not an object)")
    messages = doc.get("messages")
    if not isinstance(messages, list):
        ctx.warn(path.name, 0, "the document has no messages list")
        messages = []
    b, source, kind = _builder(ctx, path, doc, "json", _first_title(messages))
    s = GeminiSession(b, source, kind)
    head = {**doc, "messages": []} if isinstance(doc.get("messages"), list) else dict(doc)
    b.begin(0, head, _dump(head))
    s.metadata(doc, b.ts(doc.get("startTime")))
    for i, m in enumerate(messages, 1):
        if isinstance(m, dict):
            s.feed(i, _dump(m), m)
        else:
            ctx.warn(path.name, i, f"message {i - 1} is a {type(m).__name__}, not an object; kept")
            s.feed(i, _dump(m), MALFORMED)
    b.finish()


def import_logs(ctx: ImportContext, path: Path) -> None:
    """logs.json: one prompt-log session per sessionId, its entries as prompts."""
    entries = _load_document(path)
    ctx.advance(os.path.getsize(path), str(path))
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: not a Gemini CLI logs.json (a JSON {type(entries).__name__}, "
                           f"not an array)")
    groups: dict[str, list[tuple[int, Any]]] = {}
    last = ""
    for i, e in enumerate(entries, 1):
        sid = e.get("sessionId") if isinstance(e, dict) else None
        if not isinstance(sid, str) or not sid:
            ctx.warn(path.name, i, f"log entry {i - 1} names no sessionId; kept with the "
                                   f"{'previous entry' if last else 'first session'}")
            sid = last or next((x.get("sessionId") for x in entries if isinstance(x, dict)
                                and isinstance(x.get("sessionId"), str) and x["sessionId"]), "unknown")
        last = sid
        groups.setdefault(sid, []).append((i, e))
    for sid, items in groups.items():
        first = next((e for _, e in items if isinstance(e, dict)), {})
        title = next((title_of(prompt_text(e["message"])) for _, e in items if isinstance(e, dict)
                      and isinstance(e.get("message"), str) and prompt_text(e["message"])), "")
        b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=sid,
                           ts=str(first.get("timestamp") or ""),
                           nonce=f"{sid}/logs", origin={"format": FMT, "id": sid, "agent_id": "logs",
                                                        "form": "logs"},
                           kind="main", title=title, agent="logs")
        for i, e in items:
            b.begin(i, e if isinstance(e, dict) else MALFORMED, _dump(e))
            ts = b.ts(e.get("timestamp")) if isinstance(e, dict) else b.last_ts
            if isinstance(e, dict) and e.get("type") == "user" and isinstance(e.get("message"), str):
                mid = b.message("user", [TextBlock(e["message"])])
                b.append("UserPromptSubmitted", "user", {"text": preview(e["message"])},
                         {"message_id": mid}, ts)
            else:
                if isinstance(e, dict):
                    ctx.warn(path.name, i, f"log entry {i - 1} is not a user message; "
                                           f"kept as {FMT}:log")
                b.append(f"{FMT}:log", "system", {}, ts=ts)
        b.finish()


def import_file(ctx: ImportContext, path: Path) -> None:
    path = Path(path)
    form = form_of(path)
    if form == "logs":
        import_logs(ctx, path)
    elif form == "json":
        import_document(ctx, path)
    elif form == "jsonl" or path.suffix == ".jsonl":
        s = open_file(ctx, path)
        s.run(path)
        s.b.finish()
    else:
        import_document(ctx, path)  # a forced format: the parse says what is wrong with it


# ---------------------------------------------------------------------------------------------
# Writing a document back


def export(records: list[tuple[int, Any]], out) -> int:
    """A session document (line 0 the document, line i its message i - 1) or a logs.json
    session's entries, written back JSON-equal (two-space indent, as gemini-cli writes)."""
    if records and records[0][0] == 0 and isinstance(records[0][1], dict):
        doc = dict(records[0][1])
        if isinstance(doc.get("messages"), list):
            doc["messages"] = [v for n, v in records[1:]]
        value: Any = doc
    else:
        value = [v for _, v in records]
    out.write(json.dumps(value, ensure_ascii=False, indent=2))
    out.write("\n")
    return len(records)


def follows_lines(path: Path) -> bool:
    """`ctx import --follow` feeds only the JSONL recording line by line; a session document
    or logs.json is rewritten whole by gemini-cli, so each change is imported again whole."""
    form = form_of(Path(path))
    return form == "jsonl" or form is None and Path(path).suffix != ".json"  # an empty file too
