"""The oracle for Cursor sessions, written from Cursor's stores as they are documented
(toolpath's docs/agents/formats/cursor.md, the agent-sessions readers, the cursor-agent store
format guides), sharing nothing with ctxstore's importer:

- agent transcripts (`agent-transcripts/…/<id>.jsonl`): `{role, message: {content}}` lines;
  `tool_use` blocks are the calls (an `id`, else the id `cursor-<line>-<block index>`, the
  convention docs/harnesses/cursor.md states); Cursor writes no results, so those calls have
  none (a `tool_result` block, where a version writes one, answers by `tool_use_id`, else the
  oldest open call of its name); the request is the text inside `<user_query>`;
- the IDE's composer, as toolpath's dump `{head, data, bubbles[], content_blobs}` or read from
  `state.vscdb` (`cursorDiskKV` `composerData:<id>`, `bubbleId:<id>:<bubble>`, bubbles in
  `fullConversationHeadersOnly` order, then the others by `createdAt`): line 0 is the document,
  line i its bubble i-1; type 1 is the user, type 2 the assistant; `toolFormerData` {name,
  params (JSON text), result, status} is a call (status completed: ok unless its result says
  `rejected` or a non-zero `exitCode`; error/cancelled: error; anything else without a result:
  none); tokens Σ `tokenCount` {inputTokens, outputTokens} of assistant bubbles; a composer
  another one lists in `subagentComposerIds` is a subagent (side lane);
- the cursor-agent CLI `store.db`: `meta` key "0" is hex of JSON {agentId, name,
  latestRootBlobId, …}; blobs starting with `{` are JSON messages {role, content} (blocks
  text / reasoning / tool-call {toolCallId, toolName, args} / tool-result {toolCallId, result,
  isError}); other blobs link to children by protobuf field 1 (tag 0x0A, 32-byte ids) and may
  end in a JSON message; the conversation is the walk from latestRootBlobId, children before the
  blob that names them. Lines: the meta rows (key "0" first), then the blobs in walk order, then
  the blobs the walk does not reach.

Files written: edit_file / edit_file_v2 / search_replace / delete_file / edit_notebook and
Write / StrReplace / Delete / EditNotebook; read: read_file / read_file_v2 / Read; the plan:
todo_write / TodoWrite (`merge: true` updates items by id and appends new ones).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from tests.oracles.transcripts import MAIN, SIDE, Call, Transcript, prompt_text

WRITES = {"edit_file": ("target_file", "relativeWorkspacePath"),
          "edit_file_v2": ("relativeWorkspacePath", "target_file"),
          "search_replace": ("file_path", "target_file"),
          "delete_file": ("target_file", "path"),
          "edit_notebook": ("target_notebook",),
          "Write": ("path", "file_path"), "StrReplace": ("path", "file_path"),
          "Delete": ("path",), "EditNotebook": ("target_notebook", "path")}
READS = {"read_file": ("target_file", "targetFile"), "read_file_v2": ("targetFile", "target_file"),
         "Read": ("path", "file_path")}
PLANS = {"todo_write", "TodoWrite"}
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_MAGIC = b"SQLite format 3\x00"


def request(text: str) -> str:
    """The user's words: the `<user_query>` contents when there are any, else the text."""
    qs = _QUERY.findall(text or "")
    return prompt_text("\n\n".join(q for q in qs if q) if qs else (text or ""))


# ---------------------------------------------------------------------------------------------
# Detection


def _db(path: Path):
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1)


def _db_tables(path: Path) -> set[str]:
    try:
        con = _db(path)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return set()


def _kind(path: Path) -> str | None:
    if not path.is_file():
        return None
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head == _MAGIC:
        t = _db_tables(path)
        return "vscdb" if "cursorDiskKV" in t else "store" if {"meta", "blobs"} <= t else None
    if path.suffix == ".json":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        ok = isinstance(doc, dict) and isinstance(doc.get("data"), dict) and \
            isinstance(doc.get("bubbles"), list) and "composerId" in doc["data"]
        return "dump" if ok else None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    return None
                ok = isinstance(rec, dict) and rec.get("role") in ("user", "assistant", "system") \
                    and isinstance(rec.get("message"), dict) and not any(
                        k in rec for k in ("type", "uuid", "parentUuid", "sessionId", "timestamp", "id"))
                return "transcript" if ok else None
    return None


def detect(path: Path) -> bool:
    return _kind(Path(path)) is not None


def units(root: Path) -> list[Path]:
    out = []
    for pat in ("*.db", "*.vscdb", "*.json"):
        out += [p for p in Path(root).rglob(pat) if not p.is_symlink() and _kind(p)]
    return sorted(set(out))


def analyze(path: Path) -> Transcript:
    path = Path(path)
    kind = _kind(path)
    t = Transcript(path=path, harness="cursor")
    if kind == "transcript":
        _transcript(t, path)
    elif kind == "dump":
        doc = json.loads(path.read_text(encoding="utf-8"))
        _composers(t, [doc], set())
    elif kind == "vscdb":
        docs, children = _vscdb(path)
        _composers(t, docs, children)
    elif kind == "store":
        _store(t, path)
    else:
        raise ValueError(f"{path}: not a Cursor session")
    return t


# ---------------------------------------------------------------------------------------------
# Calls


def _first(args, keys) -> str | None:
    if isinstance(args, dict):
        for k in keys:
            if isinstance(args.get(k), str) and args[k]:
                return args[k]
    return None


def _call(cid: str, name: str, args, line: int, lane: str, group: str, cwd, plan_state: list) -> Call:
    args = args if isinstance(args, dict) else {}
    c = Call(id=cid, name=name, args=args, line=line, lane=lane, group=group, cwd=cwd)
    if name in WRITES and _first(args, WRITES[name]):
        c.writes = (_first(args, WRITES[name]),)
    if name in READS and _first(args, READS[name]):
        c.reads = (_first(args, READS[name]),)
    if name in PLANS and isinstance(args.get("todos"), list):
        todos = [x for x in args["todos"] if isinstance(x, dict)]
        if args.get("merge") is True:
            by_id = {str(x.get("id")): x for x in plan_state}
            for x in todos:
                key = str(x.get("id"))
                if key in by_id:
                    by_id[key].update({k: v for k, v in x.items() if v is not None})
                else:
                    plan_state.append(dict(x))
                    by_id[key] = plan_state[-1]
        else:
            plan_state[:] = [dict(x) for x in todos]
        c.plan = tuple(str(x.get("content", "")) for x in plan_state)
    return c


def _status(result_text: str | None, failed: bool) -> str:
    if failed:
        return "error"
    s = (result_text or "").strip()
    try:
        v = json.loads(s) if s.startswith("{") else None
    except ValueError:
        v = None
    if isinstance(v, dict):
        code = v.get("exitCode")
        if v.get("rejected") is True or (isinstance(code, int) and code != 0):
            return "error"
        return "ok"
    m = re.search(r"^Exit code:\s*(-?\d+)", s, re.M)
    return "error" if m and int(m.group(1)) != 0 else "ok"


def _later(t: Transcript, calls: list[Call], prompt_lines: list[int]) -> None:
    for c in calls:
        if c.status is None:
            c.later_prompt = any(n > c.line for n in prompt_lines)


# ---------------------------------------------------------------------------------------------
# Agent transcripts


def _texts(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict)
                     and b.get("type") == "text" and isinstance(b.get("text"), str))


def _transcript(t: Transcript, path: Path) -> None:
    recs = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            if raw.strip():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    recs.append((n, rec))
    t.lines = len(recs)
    plan: list = []
    open_calls: dict[str, Call] = {}
    prompts: list[int] = []
    for n, r in recs:
        msg = r.get("message") if isinstance(r.get("message"), dict) else {}
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        if r.get("role") == "user":
            real = request(_texts(content))
            if real:
                t.prompts.append((n, MAIN, real))
                prompts.append(n)
            for b in blocks:
                if isinstance(b, dict) and b.get("type") in ("tool_result", "tool-result"):
                    cid = b.get("tool_use_id") or next(
                        (k for k, c in open_calls.items() if not b.get("name") or c.name == b.get("name")), None)
                    c = open_calls.pop(cid, None) if cid else None
                    if c is not None:
                        c.status = "error" if b.get("is_error") is True else "ok"
                        c.result_line = n
        elif r.get("role") == "assistant":
            for k, b in enumerate(blocks):
                if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_call"):
                    cid = b.get("id") if isinstance(b.get("id"), str) and b.get("id") else f"cursor-{n}-{k}"
                    c = _call(cid, b.get("name") or "", b.get("input"), n, MAIN, MAIN, None, plan)
                    t.calls.append(c)
                    open_calls[cid] = c
    _later(t, t.calls, prompts)


# ---------------------------------------------------------------------------------------------
# Composers (dump, state.vscdb)


def _vscdb(path: Path) -> tuple[list[dict], set[str]]:
    con = _db(path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        heads = {}
        if "ItemTable" in tables:
            row = con.execute("SELECT value FROM ItemTable WHERE key='composer.composerHeaders'").fetchone()
            if row:
                for h in json.loads(row[0]).get("allComposers", []):
                    heads[h.get("composerId")] = h
        rows = dict(con.execute("SELECT key, value FROM cursorDiskKV"))
    finally:
        con.close()
    docs, children = [], set()
    for key, value in rows.items():
        if not key.startswith("composerData:"):
            continue
        cid = key[len("composerData:"):]
        try:
            data = json.loads(value)
        except (ValueError, TypeError):
            continue
        children.update(data.get("subagentComposerIds") or [])
        prefix = f"bubbleId:{cid}:"
        mine = {k[len(prefix):]: json.loads(v) for k, v in rows.items() if k.startswith(prefix)}
        bubbles = []
        for h in data.get("fullConversationHeadersOnly") or []:
            if h.get("bubbleId") in mine:
                bubbles.append(mine.pop(h["bubbleId"]))
        bubbles += sorted(mine.values(), key=lambda b: (b.get("createdAt", ""), b.get("bubbleId", "")))
        if bubbles:
            docs.append({"head": heads.get(cid), "data": data, "bubbles": bubbles})
    return docs, children


def _composers(t: Transcript, docs: list[dict], children: set[str]) -> None:
    for doc in docs:
        data, bubbles = doc["data"], doc["bubbles"]
        cid = data.get("composerId", "")
        side = cid in children
        lane, group = (SIDE, cid) if side else (MAIN, MAIN)
        head = doc.get("head") or {}
        cwd = ((head.get("workspaceIdentifier") or {}).get("uri") or {}).get("fsPath")
        t.cwd = t.cwd or cwd
        t.lines += 1 + len(bubbles)
        plan: list = []
        calls, prompts = [], []
        for i, b in enumerate(bubbles, 1):
            if not isinstance(b, dict):
                continue
            if b.get("type") == 1:
                real = request(b.get("text") or "")
                if real:
                    t.prompts.append((i, group, real))
                    prompts.append(i)
                continue
            tc = b.get("tokenCount") or {}
            inp, out = tc.get("inputTokens") or 0, tc.get("outputTokens") or 0
            if inp or out:
                t.usage_records += 1
                t.input_tokens += inp
                t.output_tokens += out
            tf = b.get("toolFormerData")
            if not isinstance(tf, dict) or not tf.get("name"):
                continue
            params = tf.get("params")
            for _ in range(2):
                if isinstance(params, str):
                    try:
                        params = json.loads(params)
                    except ValueError:
                        break
            c = _call(tf.get("toolCallId") or tf.get("modelCallId") or b.get("bubbleId"), tf["name"],
                      params, i, lane, group, cwd, plan)
            status, result = tf.get("status"), tf.get("result")
            text = result if isinstance(result, str) or result is None else json.dumps(result)
            if status in ("error", "failed", "cancelled", "canceled", "aborted", "rejected"):
                c.status = "error"
            elif status in ("completed", "success", "succeeded") or result is not None:
                c.status = _status(text, False)
            if c.status:
                c.result_line = i
            calls.append(c)
        _later(t, calls, prompts)
        t.calls += calls


# ---------------------------------------------------------------------------------------------
# cursor-agent CLI store.db


def _children(data: bytes) -> tuple[list[str], list[dict]]:
    """Child ids (field 1, 32 bytes) and embedded JSON messages of a linking blob, read as
    protobuf wire format."""
    kids, msgs, i = [], [], 0

    def varint(i):
        shift = v = 0
        while True:
            byte = data[i]
            i += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return v, i

    try:
        while i < len(data):
            key, i = varint(i)
            field, wt = key >> 3, key & 7
            if wt == 0:
                _, i = varint(i)
            elif wt == 2:
                ln, i = varint(i)
                chunk, i = data[i:i + ln], i + ln
                if field == 1 and len(chunk) == 32:
                    kids.append(chunk.hex())
                elif chunk[:1] == b"{":
                    try:
                        m = json.loads(chunk)
                        if isinstance(m, dict):
                            msgs.append(m)
                    except ValueError:
                        pass
            elif wt == 1:
                i += 8
            elif wt == 5:
                i += 4
            else:
                break
    except IndexError:
        pass
    return kids, msgs


def _store(t: Transcript, path: Path) -> None:
    con = _db(path)
    try:
        metas = sorted(con.execute("SELECT key, value FROM meta"), key=lambda r: (r[0] != "0", r[0]))
        blobs = {k: (v if isinstance(v, bytes) else str(v).encode()) for k, v in
                 con.execute("SELECT id, data FROM blobs")}
    finally:
        con.close()
    meta = {}
    if metas and metas[0][0] == "0":
        try:
            meta = json.loads(bytes.fromhex(metas[0][1]).decode())
        except ValueError:
            meta = {}
    order, seen = [], set()

    def visit(bid):
        if bid in seen or bid not in blobs:
            return
        seen.add(bid)
        if blobs[bid][:1] != b"{":
            for k in _children(blobs[bid])[0]:
                visit(k)
        order.append(bid)

    if meta.get("latestRootBlobId"):
        visit(meta["latestRootBlobId"])
    line = len(metas)
    plan: list = []
    calls: dict[str, Call] = {}
    prompts: list[int] = []
    for bid in order:
        data = blobs[bid]
        msgs = [json.loads(data)] if data[:1] == b"{" else _children(data)[1]
        for m in msgs:
            role, content = m.get("role"), m.get("content")
            if role == "user":
                real = request(_texts(content))
                if real:
                    t.prompts.append((line, MAIN, real))
                    prompts.append(line)
            for b in content if isinstance(content, list) else []:
                if not isinstance(b, dict):
                    continue
                if role == "assistant" and b.get("type") == "tool-call":
                    c = _call(b.get("toolCallId"), b.get("toolName") or "", b.get("args"), line,
                              MAIN, MAIN, None, plan)
                    calls[c.id] = c
                    t.calls.append(c)
                elif role == "tool" and b.get("type") == "tool-result" and b.get("toolCallId") in calls:
                    c = calls[b["toolCallId"]]
                    res = b.get("result")
                    text = res if isinstance(res, str) else "\n".join(
                        x.get("text", "") for x in res if isinstance(x, dict)) if isinstance(res, list) \
                        else json.dumps(res)
                    c.status = _status(text, b.get("isError") is True)
                    c.result_line = line
        line += 1
    t.lines = len(metas) + len(blobs)
    _later(t, t.calls, prompts)
