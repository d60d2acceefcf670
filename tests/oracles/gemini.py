"""The oracle for Gemini CLI sessions, written from gemini-cli's own format (it imports nothing
from ctxstore: it judges the importer).

Gemini CLI (google-gemini/gemini-cli, packages/core/src/services/chatRecording*.ts) keeps a
session under `~/.gemini/tmp/<project>/chats/` in one of three shapes:

- the JSONL chat recording `session-<ts>-<id8>.jsonl` (subagents: `chats/<parent>/<id>.jsonl`):
  a metadata line `{sessionId, projectHash, startTime, lastUpdated, kind?, directories?}`, then
  message records `{id, timestamp, type: user|gemini|info|error|warning, content,
  displayContent?, toolCalls?, thoughts?, tokens?, model?}`, `{"$set": {...}}` metadata patches
  and `{"$rewindTo": id}`. gemini-cli's loader keeps messages in a map by id: a record written
  again under the same id replaces the earlier copy in place; `$rewindTo` drops that message and
  every later one (all of them when the id is unknown); `$set.messages` replaces the history.
- the older one-document `session-*.json` `{sessionId, projectHash, startTime, lastUpdated,
  messages: [...], kind?, summary?, directories?}` (the oldest has no `kind` and plain-string
  user content).
- `logs.json`: an array of `{sessionId, messageId, type: "user", message, timestamp}`, every
  line the user typed.

What counts, following the rules ctxstore's issue 31 sets for this harness:

- Lines: a JSONL record is its 1-based line number; a document's message i (0-based) is line
  i + 1 (line 0 is the document itself); a logs.json entry i is line i + 1.
- Lanes: messages a `$rewindTo` drops are OFF (an abandoned branch); so are the tail messages a
  `$set.messages` drops when it keeps a prefix of the history and adds nothing (a rollback).
  A `$set.messages` that drops messages and adds new ones (a compression) leaves the dropped
  ones MAIN (they happened on the session's line) and its new messages only count tokens.
- Tool calls: a gemini message's `toolCalls[]` (plus `functionCall` parts of its content not in
  `toolCalls`), each id once, its status from the newest copy: "success" -> ok, "error" or
  "cancelled" -> error, anything else (or none) -> no result yet; a `functionResponse` part of a
  later user message answers a call that has none (ok unless the response holds `error`).
- Files: write_file / replace (`file_path`) modify; read_file (`file_path`, older
  `absolute_path`) and read_many_files (`include`, older `paths`: entries without glob
  characters) read. Plan: write_todos `todos[].description`.
- Prompts: user messages whose parts are not all functionResponse and whose text (the
  `displayContent` when there is one, else the content) is not gemini-cli context
  (`<session_context>`, `<hook_context>`); logs.json: every `type: user` entry.
- Tokens: what the session spent, as `ctx stats` reports it since issue 29 (every branch, each
  response once): per message id in the file (rewound ones included), the newest copy that has
  `tokens`: input_tokens = Σ input (cached included), cache_read_tokens = Σ cached,
  output_tokens = Σ (output + thoughts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .transcripts import MAIN, OFF, Call, Transcript, prompt_text

HARNESS = "gemini"
WRITE_TOOLS = {"write_file": ("file_path", "absolute_path", "path"),
               "replace": ("file_path", "absolute_path", "path")}
READ_TOOLS = {"read_file": ("file_path", "absolute_path", "path")}
_GLOB = re.compile(r"[*?\[\]{}]")
_CONTEXT = ("<session_context>", "<hook_context>")
_STATUS = {"success": "ok", "error": "error", "cancelled": "error"}


# ---------------------------------------------------------------------------------------------
# Telling the shapes apart


def _head(path: Path, n: int = 65536) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(n).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return ""


def _is_meta(rec) -> bool:
    return (isinstance(rec, dict) and isinstance(rec.get("sessionId"), str)
            and isinstance(rec.get("projectHash"), str)
            and not any(k in rec for k in ("uuid", "parentUuid", "message")))


def shape(path: Path) -> str | None:
    """"jsonl", "json" (a one-document session), "logs" or None."""
    path = Path(path)
    if not path.is_file():
        return None
    head = _head(path).lstrip()
    if head.startswith("["):
        if path.suffix != ".json":
            return None
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        if isinstance(value, list) and value and all(
                isinstance(e, dict) and "sessionId" in e and "messageId" in e for e in value):
            return "logs"
        return "logs" if value == [] and path.name == "logs.json" else None
    if not head.startswith("{"):
        return None
    first = head.split("\n", 1)[0]
    try:
        rec = json.loads(first)
    except ValueError:
        rec = None
    if rec is not None:
        if not _is_meta(rec):
            return None
        rest = head.split("\n", 1)[1].strip() if "\n" in head else ""
        return "json" if path.suffix == ".json" and not rest else "jsonl"
    if path.suffix != ".json":
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return "json" if _is_meta(value) and isinstance(value.get("messages"), list) else None


def detect(path: Path) -> bool:
    return shape(Path(path)) is not None


def units(root: Path) -> list[Path]:
    """The non-JSONL Gemini units under ROOT: session documents and logs.json. A document
    gemini-cli migrated to a recording (`session-x.json` beside `session-x.jsonl`, written when
    the session is resumed) is that recording's: gemini-cli reads only the `.jsonl` then."""
    root = Path(root)
    return sorted(p for p in root.rglob("*.json") if p.is_file() and detect(p)
                  and not p.with_name(p.name + "l").is_file())


# ---------------------------------------------------------------------------------------------
# Reading


def _parts(content) -> list:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return [p for p in content if isinstance(p, (dict, str))] if isinstance(content, list) else []


def _text(content) -> str:
    out = []
    for p in _parts(content):
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p.get("text"), str) and not p.get("thought"):
            out.append(p["text"])
    return "\n".join(out)


def _only_responses(content) -> bool:
    parts = _parts(content)
    return bool(parts) and all(isinstance(p, dict) and "functionResponse" in p for p in parts)


def _int(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


class _Replay:
    """gemini-cli's loader, remembering for each message id its lane, lines and copies."""

    def __init__(self, t: Transcript) -> None:
        self.t = t
        self.live: dict[str, dict] = {}  # id -> newest copy (insertion order = history order)
        self.off: set[str] = set()
        self.tokens: dict[str, dict] = {}  # id -> newest tokens on the id's current copy chain
        self.calls: dict[str, Call] = {}
        self.msg_of_call: dict[str, str] = {}
        self.prompts: dict[str, tuple[int, str]] = {}
        self.token_only: set[str] = set()

    def message(self, n: int, m: dict, token_only: bool = False) -> None:
        mid = m["id"]
        if mid in self.off and mid not in self.live:
            self.off.discard(mid)  # written again after a rewind: a new copy on the new line
        self.live[mid] = m
        kind = m.get("type")
        if isinstance(m.get("tokens"), dict):
            self.tokens[mid] = m["tokens"]
        if token_only:
            self.token_only.add(mid)
            return
        if kind == "user":
            if _only_responses(m.get("content")) or any(
                    isinstance(p, dict) and "functionResponse" in p for p in _parts(m.get("content"))):
                for p in _parts(m.get("content")):
                    fr = p.get("functionResponse") if isinstance(p, dict) else None
                    if isinstance(fr, dict) and isinstance(fr.get("id"), str):
                        c = self.calls.get(fr["id"])
                        if c is not None and c.status is None:
                            resp = fr.get("response")
                            c.status = "error" if isinstance(resp, dict) and "error" in resp else "ok"
                            c.result_line = n
                if _only_responses(m.get("content")):
                    return
            if mid in self.prompts:
                return
            shown = m.get("displayContent")
            text = _text(shown if shown is not None else m.get("content"))
            if text.strip().startswith(_CONTEXT):
                return
            real = prompt_text(text)
            if real:
                self.prompts[mid] = (n, real)
        elif kind == "gemini":
            records = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)
                       and isinstance(c.get("id"), str)]
            ids = {c["id"] for c in records}
            for p in _parts(m.get("content")):
                fc = p.get("functionCall") if isinstance(p, dict) else None
                if isinstance(fc, dict) and isinstance(fc.get("id"), str) and fc["id"] not in ids:
                    records.append({"id": fc["id"], "name": fc.get("name"), "args": fc.get("args")})
            for rec in records:
                self.call(n, mid, rec)

    def call(self, n: int, mid: str, rec: dict) -> None:
        cid = rec["id"]
        c = self.calls.get(cid)
        if c is None:
            name = rec.get("name") if isinstance(rec.get("name"), str) else ""
            args = rec.get("args") if isinstance(rec.get("args"), dict) else {}
            c = Call(id=cid, name=name, args=args, line=n, cwd=self.t.cwd)
            if name in WRITE_TOOLS:
                c.writes = tuple(v for v in [next((args[k] for k in WRITE_TOOLS[name]
                                                   if isinstance(args.get(k), str) and args[k]), None)] if v)
            if name in READ_TOOLS:
                c.reads = tuple(v for v in [next((args[k] for k in READ_TOOLS[name]
                                                  if isinstance(args.get(k), str) and args[k]), None)] if v)
            if name == "read_many_files":
                paths = args.get("include") or args.get("paths")
                c.reads = tuple(p for p in (paths if isinstance(paths, list) else [])
                                if isinstance(p, str) and p and not _GLOB.search(p))
            if name == "write_todos" and isinstance(args.get("todos"), list):
                c.plan = tuple(str(x.get("description", "")) for x in args["todos"] if isinstance(x, dict))
            self.calls[cid] = c
            self.msg_of_call[cid] = mid
        status = _STATUS.get(rec.get("status")) if isinstance(rec.get("status"), str) else None
        if status is not None and c.status is None:
            c.status, c.result_line = status, n

    def rewind(self, target: str) -> None:
        ids = list(self.live)
        cut = ids.index(target) if target in ids else 0
        for mid in ids[cut:]:
            del self.live[mid]
            self.off.add(mid)

    def set_messages(self, n: int, msgs: list) -> None:
        new = [m for m in msgs if isinstance(m, dict) and isinstance(m.get("id"), str)]
        ids = [m["id"] for m in new]
        live = list(self.live)
        dropped = [i for i in live if i not in set(ids)]
        fresh = [m for m in new if m["id"] not in self.live]
        if dropped and not fresh and ids == live[:len(ids)]:  # a rollback: the tail is undone
            for mid in dropped:
                del self.live[mid]
                self.off.add(mid)
            return
        compression = bool(dropped)
        for m in fresh:
            self.message(n, m, token_only=compression)
        kept = {m["id"]: self.live[m["id"]] for m in new}
        self.live = kept

    def finish(self) -> None:
        t = self.t
        for cid, c in self.calls.items():
            c.lane = OFF if self.msg_of_call[cid] in self.off else MAIN
            c.group = MAIN if c.lane != OFF else OFF
            t.calls.append(c)
        t.calls.sort(key=lambda c: c.line)
        for mid, (n, text) in sorted(self.prompts.items(), key=lambda x: x[1][0]):
            if mid not in self.off:
                t.prompts.append((n, MAIN, text))
        t.branch_input_tokens = t.branch_output_tokens = 0
        for mid, tok in self.tokens.items():  # the whole session: rewound turns were spent too
            t.usage_records += 1
            inp = _int(tok.get("input"))
            out = _int(tok.get("output")) + _int(tok.get("thoughts"))
            t.input_tokens += inp
            t.cache_read_tokens += _int(tok.get("cached"))
            t.output_tokens += out
            if mid not in self.off:  # the history gemini-cli resumes: the branch's share
                t.branch_input_tokens += inp
                t.branch_output_tokens += out


def _cwd(meta: dict) -> str | None:
    dirs = meta.get("directories")
    if meta.get("kind") == "subagent" and isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
        return dirs[0]
    return None


def analyze(path: Path) -> Transcript:
    path = Path(path)
    form = shape(path)
    t = Transcript(path=path, harness=HARNESS)
    if form == "logs":
        entries = json.loads(path.read_text(encoding="utf-8"))
        t.lines = len(entries)
        for i, e in enumerate(entries, 1):
            if isinstance(e, dict) and e.get("type") == "user" and isinstance(e.get("message"), str):
                real = prompt_text(e["message"])
                if real:
                    t.prompts.append((i, MAIN, real))
        return t
    if form == "json":
        doc = json.loads(path.read_text(encoding="utf-8"))
        t.cwd = _cwd(doc)
        r = _Replay(t)
        msgs = doc.get("messages") or []
        t.lines = len(msgs) + 1
        for i, m in enumerate(msgs, 1):
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                r.message(i, m)
        r.finish()
        return t
    if form != "jsonl":
        raise ValueError(f"{path}: not a Gemini CLI session")
    records: list[tuple[int, dict]] = []
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict):
                records.append((n, rec))
    t.lines = len(records)
    meta = next((r for _, r in records if _is_meta(r)), {})
    t.cwd = _cwd(meta)
    r = _Replay(t)
    for n, rec in records:
        if isinstance(rec.get("$rewindTo"), str):
            r.rewind(rec["$rewindTo"])
        elif isinstance(rec.get("id"), str):
            r.message(n, rec)
        elif isinstance(rec.get("$set"), dict):
            if isinstance(rec["$set"].get("messages"), list):
                r.set_messages(n, rec["$set"]["messages"])
        elif _is_meta(rec) and isinstance(rec.get("messages"), list):
            for m in rec["messages"]:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    r.message(n, m)
    r.finish()
    return t
