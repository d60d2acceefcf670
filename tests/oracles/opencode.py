"""The oracle for OpenCode sessions: `opencode.db`, the JSON storage tree, `opencode export`.

Written from OpenCode's own data model (sst/opencode `session/message-v2.ts`, `session.sql.ts`,
`storage/storage.ts`), sharing nothing with ctxstore's importer:

- a database has tables `session` (a row per session, `parent_id` for a child), `message` and
  `part` whose `data` column is the message info / part as JSON without its ids; messages are
  in (time_created, id) order, parts in id order;
- a storage tree has `session/<project>/<id>.json`, `message/<session id>/*.json` and
  `part/<message id>/*.json` (older trees: flat `part/*.json` naming their `messageID`); files
  are in name order; symlinks are not followed;
- an export document is `{info, messages: [{info, parts}]}`;
- calls are `tool` parts: `callID`, `tool`, `state.status` completed (ok) | error (error) |
  pending, running (no result); any other status: ok when it has an `output`, error when it
  has only an `error`. Files written: `write`/`edit`/`multiedit` (`filePath`),
  `patch`/`apply_patch` (the patch's file headers); read: `read` (`filePath`); plan:
  `todowrite` (`todos[].content`);
- prompts: `text` parts of user messages that are neither `synthetic` nor `ignored`;
- tokens (issue 31): per step input + cache.read + cache.write and output + reasoning, each step
  once: the `step-finish` parts of an assistant message, or its own `tokens` when none of them
  carries any;
- a child session (`parentID`) is a side lane; calls and prompts are grouped by session.

`Call.line` and prompt lines follow the importer's documented numbering (docs/harnesses/
opencode.md): storage and database records at `crc32(session id) << 24` plus their place in
the session (1 the session, then each message followed by its parts); export documents at i
for message i.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from tests.oracles.transcripts import MAIN, SIDE, Call, Transcript, patch_files, prompt_text

WRITE_TOOLS = {"write", "edit", "multiedit"}
PATCH_TOOLS = {"patch", "apply_patch"}
MAGIC = b"SQLite format 3\x00"


@dataclass
class OpenCodeTranscript(Transcript):
    """A unit can hold several sessions: the first prompt is that of any top-level one."""

    top_groups: tuple = ()

    @property
    def first_prompt(self) -> str | None:
        main = [t for _, g, t in self.prompts if g in self.top_groups]
        return main[0] if main else None


@dataclass
class _Session:
    id: str
    info: dict
    numbered: bool  # storage/db (record lines) or export (message lines)
    messages: list = field(default_factory=list)  # [(info, [part, ...])]


# ---------------------------------------------------------------------------------------------
# Finding units


def _entries(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _dirs(path: Path) -> dict[str, Path]:
    return {e.name: Path(e.path) for e in _entries(path) if e.is_dir(follow_symlinks=False)}


def _json_files(path: Path) -> list[Path]:
    return [Path(e.path) for e in _entries(path)
            if e.is_file(follow_symlinks=False) and e.name.endswith(".json")]


def _storage(path: Path) -> bool:
    d = _dirs(path)
    if "session" not in d or not ("message" in d or "part" in d):
        return False
    return any(_json_files(p) for p in _dirs(d["session"]).values())


def _db(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != MAGIC:
                return False
        con = sqlite3.connect("file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro",
                              uri=True, timeout=0.2)
    except (OSError, sqlite3.Error):
        return False
    try:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {"session", "message", "part"} <= names
    except sqlite3.Error:
        return False
    finally:
        con.close()


def _export(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("info"), dict) \
        and isinstance(doc.get("messages"), list) and isinstance(doc["info"].get("id"), str)


def detect(path: Path) -> bool:
    path = Path(path)
    if path.is_symlink():
        return False
    if path.is_dir():
        return _storage(path)
    if not path.is_file():
        return False
    if path.suffix == ".json":
        return _export(path)
    return _db(path)


def units(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if _storage(here):
            out.append(here)
            dirnames[:] = []
            continue
        for f in filenames:
            p = here / f
            if not p.is_symlink() and f.endswith((".json", ".db")) and detect(p):
                out.append(p)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# Reading sessions


def _load(path: Path):
    try:
        return json.loads(path.read_bytes())
    except ValueError:
        return None


def _read_storage(root: Path) -> list[_Session]:
    top = _dirs(root)
    messages = _dirs(top["message"]) if "message" in top else {}
    part_dirs = _dirs(top["part"]) if "part" in top else {}
    flat: dict[str, list[dict]] = {}
    for f in _json_files(top["part"]) if "part" in top else []:
        p = _load(f)
        if isinstance(p, dict) and isinstance(p.get("messageID"), str):
            flat.setdefault(p["messageID"], []).append(p)
    out = []
    for project in _dirs(top["session"]).values():
        for f in _json_files(project):
            info = _load(f)
            info = info if isinstance(info, dict) else {}
            sid = info.get("id") if isinstance(info.get("id"), str) else f.stem
            s = _Session(sid, info, True)
            for mf in _json_files(messages[sid]) if sid in messages else []:
                m = _load(mf)
                m = m if isinstance(m, dict) else {}
                mid = m.get("id") if isinstance(m.get("id"), str) else mf.stem
                parts = [_load(pf) for pf in _json_files(part_dirs[mid])] if mid in part_dirs else []
                s.messages.append((m, parts + flat.get(mid, [])))
            out.append(s)
    return out


def _read_db(path: Path) -> list[_Session]:
    con = sqlite3.connect("file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    out = []
    try:
        for row in con.execute("SELECT * FROM session ORDER BY time_created, id").fetchall():
            info = {"id": row["id"], "directory": row["directory"], "parentID": row["parent_id"],
                    "title": row["title"]}
            s = _Session(row["id"], info, True)
            for m in con.execute("SELECT * FROM message WHERE session_id = ? "
                                 "ORDER BY time_created, id", (row["id"],)).fetchall():
                try:
                    data = json.loads(m["data"])
                except ValueError:
                    data = {}
                parts = []
                for p in con.execute("SELECT * FROM part WHERE message_id = ? AND session_id = ? "
                                     "ORDER BY id", (m["id"], row["id"])).fetchall():
                    try:
                        pdata = json.loads(p["data"])
                    except ValueError:
                        pdata = None
                    parts.append({**pdata, "id": p["id"]} if isinstance(pdata, dict) else pdata)
                s.messages.append(({**data, "id": m["id"]} if isinstance(data, dict) else {}, parts))
            out.append(s)
    finally:
        con.close()
    return out


def _read_export(path: Path) -> list[_Session]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    s = _Session(doc["info"]["id"], doc["info"], False)
    for m in doc["messages"]:
        ok = isinstance(m, dict) and isinstance(m.get("info"), dict)
        s.messages.append((m["info"] if ok else {}, m.get("parts") or [] if ok else []))
    return [s]


# ---------------------------------------------------------------------------------------------
# Analysis


def _n(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _tokens(t) -> tuple[int, int, int, int]:
    """(input with cache, output with reasoning, cache read, cache write) of a tokens object."""
    if not isinstance(t, dict):
        return 0, 0, 0, 0
    cache = t.get("cache") if isinstance(t.get("cache"), dict) else {}
    read, write = _n(cache.get("read")), _n(cache.get("write"))
    return (_n(t.get("input")) + read + write, _n(t.get("output")) + _n(t.get("reasoning")),
            read, write)


def _status(state: dict) -> str | None:
    status = state.get("status")
    if status == "completed":
        return "ok"
    if status == "error":
        return "error"
    if status in ("pending", "running"):
        return None
    if isinstance(state.get("output"), str):
        return "ok"
    if isinstance(state.get("error"), str):
        return "error"
    return None


def analyze(path: Path) -> Transcript:
    path = Path(path)
    if path.is_dir():
        sessions = _read_storage(path)
    elif path.suffix == ".json":
        sessions = _read_export(path)
    else:
        sessions = _read_db(path)
    t = OpenCodeTranscript(path=path, harness="opencode")
    tops = []
    for s in sessions:
        child = bool(s.info.get("parentID"))
        if not child:
            tops.append(s.id)
        _analyze_session(t, s, SIDE if child else MAIN)
        if t.cwd is None and isinstance(s.info.get("directory"), str):
            t.cwd = s.info["directory"]
    t.top_groups = tuple(tops)
    return t


def _analyze_session(t: OpenCodeTranscript, s: _Session, lane: str) -> None:
    base = zlib.crc32(s.id.encode("utf-8")) << 24 if s.numbered else 0
    n = 1
    user_lines: list[int] = []
    calls: list[Call] = []
    cwd = s.info.get("directory") if isinstance(s.info.get("directory"), str) else None
    for i, (info, parts) in enumerate(s.messages, 1):
        n += 1
        t.lines += 1 + len(parts)
        role = info.get("role")
        steps = [p.get("tokens") for p in parts if isinstance(p, dict)
                 and p.get("type") == "step-finish" and any(_tokens(p.get("tokens")))]
        if role == "assistant":
            for tokens in steps or ([info.get("tokens")] if any(_tokens(info.get("tokens"))) else []):
                inp, out, read, write = _tokens(tokens)
                t.usage_records += 1
                t.input_tokens += inp
                t.output_tokens += out
                t.cache_read_tokens += read
                t.cache_write_tokens += write
        for j, p in enumerate(parts):
            line = base + n + 1 + j if s.numbered else i
            if not isinstance(p, dict):
                continue
            if role == "user" and p.get("type") == "text" and not p.get("synthetic") \
                    and not p.get("ignored"):
                user_lines.append(line)
                real = prompt_text(p.get("text") if isinstance(p.get("text"), str) else "")
                if real:
                    t.prompts.append((line, s.id, real))
            if p.get("type") != "tool":
                continue
            state = p.get("state") if isinstance(p.get("state"), dict) else {}
            args = state.get("input") if isinstance(state.get("input"), dict) else {}
            name = p.get("tool") if isinstance(p.get("tool"), str) else ""
            cid = p.get("callID") or p.get("id") or ""
            c = Call(id=str(cid), name=name, args=args, line=line, lane=lane, group=s.id, cwd=cwd,
                     status=_status(state), aborted_message=bool(info.get("error")))
            if c.status is not None:
                c.result_line = line
            if name in WRITE_TOOLS and isinstance(args.get("filePath"), str):
                c.writes = (args["filePath"],)
            if name in PATCH_TOOLS and isinstance(args.get("patchText"), str):
                c.writes = tuple(patch_files(args["patchText"]))
            if name == "read" and isinstance(args.get("filePath"), str):
                c.reads = (args["filePath"],)
            if name == "todowrite" and isinstance(args.get("todos"), list):
                c.plan = tuple(str(x.get("content", "")) for x in args["todos"] if isinstance(x, dict))
            calls.append(c)
        if s.numbered:
            n += len(parts)
    for c in calls:
        if c.status is None:
            c.later_prompt = any(line > c.line for line in user_lines)
    t.calls += calls
