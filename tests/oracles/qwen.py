"""The oracle for Qwen Code sessions, written from qwen-code's own format (it imports nothing
from ctxstore: it judges the importer).

Qwen Code (QwenLM/qwen-code, packages/core/src/services/chatRecordingService.ts) appends one
JSONL record per event to `<runtime>/projects/<cwd>/chats/<sessionId>.jsonl`: `{uuid,
parentUuid, sessionId, timestamp, type: user|assistant|tool_result|system, subtype?, cwd,
version, message?: {role, parts}, usageMetadata?, toolCallResult?, systemPayload?}`. Parts are
Gemini API parts: `text` (`thought: true` for reasoning), `functionCall {id, name, args}`,
`functionResponse {id, name, response}`. The records form a tree by uuid/parentUuid; Qwen
resumes the chain that ends at the newest record (a `/rewind` re-roots the chain, leaving the
rewound records on a dead branch). Subagent records written inline carry `isSidechain`.

What counts, by the rules ctxstore's issue 31 sets for this harness:
- the session's line is the path from the last (non-sidechain) record back by parentUuid;
  records off it are OFF, sidechain records SIDE;
- prompts: `user` records without a subtype (or `mid_turn_user_message`): the user's words are
  `systemPayload.displayText` when present, else the text parts minus Qwen's `<qwen:…>` hook
  context;
- a call succeeded unless its tool_result says `toolCallResult.status` error/cancelled or its
  functionResponse carries an `error`;
- writes: write_file, edit, replace (`file_path`, older `absolute_path`, or `path`); reads:
  read_file; plan: the newest todo_write's `todos[].content`;
- tokens: the whole session (`ctx stats` counts every branch: rewound turns were spent too),
  each assistant record once (by uuid): input = promptTokenCount (cached included), cache read
  = cachedContentTokenCount, output = candidatesTokenCount + thoughtsTokenCount (the
  ui_telemetry records that repeat them are not counted).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.oracles.transcripts import MAIN, OFF, SIDE, Call, Transcript, _mark_later, prompt_text

WRITE_TOOLS = {"write_file", "edit", "replace"}
READ_TOOLS = {"read_file"}
PATH_KEYS = ("file_path", "absolute_path", "path")


def _records(path: Path, limit: int | None = None) -> list[tuple[int, dict]]:
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            if limit is not None and n > limit:
                break
            raw = raw.strip()
            if not raw:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append((n, rec))
    return out


def _qwen_record(r: dict) -> bool:
    if not isinstance(r.get("uuid"), str) or "parentUuid" not in r:
        return False
    msg = r.get("message")
    return ((isinstance(msg, dict) and isinstance(msg.get("parts"), list))
            or r.get("type") == "tool_result" or isinstance(r.get("systemPayload"), dict))


def detect(path: Path) -> bool:
    path = Path(path)
    if not path.is_file() or path.suffix != ".jsonl":
        return False
    try:
        return any(_qwen_record(r) for _, r in _records(path, limit=20))
    except OSError:
        return False


def units(root: Path) -> list[Path]:
    return []


def _parts(r: dict) -> list[dict]:
    msg = r.get("message")
    parts = msg.get("parts") if isinstance(msg, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _user_words(r: dict) -> str:
    sp = r.get("systemPayload")
    if isinstance(sp, dict) and isinstance(sp.get("displayText"), str):
        return sp["displayText"]
    return "\n".join(p["text"] for p in _parts(r) if isinstance(p.get("text"), str)
                     and not p.get("thought") and not p["text"].lstrip().startswith("<qwen:"))


def _n(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def analyze(path: Path) -> Transcript:
    path = Path(path)
    records = _records(path)
    t = Transcript(path=path, harness="qwen", lines=len(records))
    main = [(n, r) for n, r in records if isinstance(r.get("uuid"), str) and not r.get("isSidechain")]
    by_uuid = {r["uuid"]: n for n, r in main}
    rec_at = dict(records)
    on_path: set[int] = set()
    if main:
        n = main[-1][0]
        while n is not None and n not in on_path:
            on_path.add(n)
            parent = rec_at[n].get("parentUuid")
            n = by_uuid.get(parent) if isinstance(parent, str) else None

    results: dict[str, tuple[str, int]] = {}
    usage: dict[str, dict] = {}
    lanes: dict[str, str] = {}
    for n, r in records:
        if t.cwd is None and isinstance(r.get("cwd"), str):
            t.cwd = r["cwd"]
        side = r.get("isSidechain") is True
        lane = SIDE if side else (MAIN if n in on_path else OFF)
        group = (str(r.get("agentId") or "sidechain")) if side else lane
        typ = r.get("type")
        if typ == "tool_result":
            tcr = r.get("toolCallResult") if isinstance(r.get("toolCallResult"), dict) else {}
            for p in _parts(r):
                fr = p.get("functionResponse")
                if not isinstance(fr, dict):
                    continue
                cid = fr.get("id") or tcr.get("callId")
                resp = fr.get("response")
                bad = (isinstance(resp, dict) and "error" in resp and "output" not in resp) or (
                    tcr.get("status") in ("error", "cancelled") and tcr.get("callId") in (None, cid))
                if isinstance(cid, str):
                    results[cid] = ("error" if bad else "ok", n)
        elif typ == "user" and lane != OFF and r.get("subtype") in (None, "mid_turn_user_message"):
            real = prompt_text(_user_words(r))
            if real:
                t.prompts.append((n, group, real))
        elif typ == "assistant" and isinstance(r.get("usageMetadata"), dict):
            key = r["uuid"] if isinstance(r.get("uuid"), str) else f"line:{n}"
            usage[key] = r["usageMetadata"]
            lanes[key] = lane
        if typ != "assistant":
            continue
        for i, p in enumerate(_parts(r)):
            fc = p.get("functionCall")
            if not isinstance(fc, dict):
                continue
            name = fc.get("name") if isinstance(fc.get("name"), str) else ""
            args = fc.get("args") if isinstance(fc.get("args"), dict) else {}
            c = Call(id=fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else f"call-{i}",
                     name=name, args=args, line=n, lane=lane, group=group,
                     cwd=r.get("cwd") if isinstance(r.get("cwd"), str) else t.cwd)
            target = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str) and args[k]), None)
            if name in WRITE_TOOLS and target:
                c.writes = (target,)
            if name in READ_TOOLS and target:
                c.reads = (target,)
            if name == "todo_write" and isinstance(args.get("todos"), list):
                c.plan = tuple(str(s.get("content", "")) for s in args["todos"] if isinstance(s, dict))
            t.calls.append(c)
    t.branch_input_tokens = t.branch_output_tokens = 0
    for key, u in usage.items():  # the newest record of a uuid counts, once
        t.usage_records += 1
        inp = _n(u.get("promptTokenCount"))
        out = _n(u.get("candidatesTokenCount")) + _n(u.get("thoughtsTokenCount"))
        t.input_tokens += inp  # the whole session: rewound records were spent too
        t.cache_read_tokens += _n(u.get("cachedContentTokenCount"))
        t.output_tokens += out
        if lanes[key] != OFF:  # the resumed chain (and inline sidechains): the branch's share
            t.branch_input_tokens += inp
            t.branch_output_tokens += out
    for c in t.calls:
        if c.id in results:
            c.status, c.result_line = results[c.id]
    _mark_later(t)
    return t
