"""The oracle for GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>/events.jsonl`).

Written from Copilot CLI's event format (the Copilot SDK's generated session-events schema and
its recorded tool calls), sharing nothing with ctxstore's importer:

- one JSON event per line, `{type, data, id, timestamp, parentId}`; a sub-agent's events also
  carry `agentId` (older releases: `data.parentToolCallId`), which is its lane and group;
- calls are the `toolRequests` of `assistant.message` (`toolCallId`, `name`, `arguments`), or a
  `tool.execution_start` no message requested; `tool.execution_complete` answers one by
  `toolCallId` with `success` true (ok) or false (error);
- files written: `create`, `edit`, `str_replace` (`path`), `str_replace_editor` with command
  create / str_replace / insert, `apply_patch` (the patch's file headers); files read: `view`,
  `show_file`, `read_file`, `str_replace_editor` view (`path`);
- plan: `update_todo` replaces it with its markdown checklist; `sql` statements on the `todos`
  table change it row by row (the plan after such a call is the table as this oracle replays
  it);
- prompts: `user.message` `content` of the main agent with no `source` other than "user" and
  not an autopilot continuation;
- an `abort` ends its agent's turn and `session.shutdown` every agent's: calls still open are
  interrupted;
- tokens (the rule in docs/harnesses/copilot.md): per stretch of the file ending in a
  `session.shutdown`, input = Σ modelMetrics[m].usage.inputTokens (cache included),
  cache read = Σ cacheReadTokens, output = Σ outputTokens; a last stretch with no shutdown adds
  the `outputTokens` of its assistant messages, one per response (`apiCallId`, else
  `messageId`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.oracles.transcripts import (
    MAIN,
    SIDE,
    Call,
    Transcript,
    _mark_later,
    patch_files,
    prompt_text,
    read_jsonl,
)

WRITE_TOOLS = {"create", "edit", "str_replace"}
READ_TOOLS = {"view", "show_file", "read_file"}


def _records(path: Path) -> list[tuple[int, dict]]:
    return read_jsonl(path)  # the shared oracle reader (it imports nothing from ctxstore)


def _is_event(rec: dict) -> bool:
    t = rec.get("type")
    return (isinstance(t, str) and isinstance(rec.get("data"), dict) and "id" in rec
            and "timestamp" in rec and (t == "abort" or re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", t)
                                        is not None))


def detect(path: Path) -> bool:
    path = Path(path)
    if not path.is_file() or path.suffix != ".jsonl":
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for i, raw in enumerate(fh):
                if i >= 20:
                    break
                try:
                    rec = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and _is_event(rec):
                    return True
    except OSError:
        return False
    return False


def units(root: Path) -> list[Path]:
    return []


def _agent(rec: dict) -> str:
    a = rec.get("agentId")
    if isinstance(a, str) and a:
        return a
    p = (rec.get("data") or {}).get("parentToolCallId")
    return p if isinstance(p, str) else ""


def _str(v) -> str:
    return v if isinstance(v, str) else ""


def _n(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*\[[ xX~\-/>]\]\s*(.+?)\s*$")
_LIT = re.compile(r"'((?:[^']|'')*)'|(-?\d+(?:\.\d+)?|NULL|TRUE|FALSE)", re.I)


def _split_values(body: str) -> list[list[str]]:
    """Rows of a VALUES list: (a, b), (c, d) with SQL string literals."""
    rows, row, depth, i = [], [], 0, 0
    while i < len(body):
        ch = body[i]
        if ch == "(":
            depth, row = 1, []
        elif ch == ")" and depth:
            depth = 0
            rows.append(row)
        elif depth:
            m = _LIT.match(body, i)
            if m:
                row.append(m.group(1).replace("''", "'") if m.group(1) is not None else m.group(2))
                i = m.end()
                continue
        i += 1
    return rows


def _replay_sql(query: str, todos: dict[str, str]) -> bool:
    """Apply the statements on `todos` to {id: title}; whether any touched the table."""
    touched = False
    for stmt in query.split(";"):
        s = " ".join(stmt.split())
        m = re.match(r"insert (?:or \w+ )?into [\"`]?todos[\"`]? \(([^)]*)\) values (.*)$", s, re.I)
        if m:
            cols = [c.strip().strip("\"`").lower() for c in m.group(1).split(",")]
            for row in _split_values(m.group(2)):
                r = dict(zip(cols, row, strict=False))
                key = r.get("id") or str(len(todos) + 1)
                todos[key] = r.get("title") or r.get("description") or r.get("id") or ""
                touched = True
            continue
        m = re.match(r"delete from [\"`]?todos[\"`]? where id\s*(=|in)\s*(.*)$", s, re.I)
        if m:
            for v in re.findall(r"'((?:[^']|'')*)'", m.group(2)):
                todos.pop(v.replace("''", "'"), None)
            touched = True
            continue
        if re.match(r"update [\"`]?todos[\"`]? ", s, re.I):
            touched = True
    return touched


def analyze(path: Path) -> Transcript:
    path = Path(path)
    records = _records(path)
    t = Transcript(path=path, harness="copilot", lines=len(records))
    results: dict[str, tuple[str, int]] = {}
    by_id: dict[str, Call] = {}
    todos: dict[str, str] = {}
    streamed: dict[str, int] = {}
    saw_usage = 0
    for n, r in records:
        typ = r.get("type")
        data = r.get("data") if isinstance(r.get("data"), dict) else {}
        agent = _agent(r)
        lane, group = (SIDE, agent) if agent else (MAIN, MAIN)
        if typ == "session.start" and t.cwd is None:
            cwd = (data.get("context") or {}).get("cwd") if isinstance(data.get("context"), dict) else None
            t.cwd = cwd if isinstance(cwd, str) else None
        elif typ == "user.message" and not agent:
            source = data.get("source")
            if (not isinstance(source, str) or source in ("", "user")) \
                    and data.get("isAutopilotContinuation") is not True:
                real = prompt_text(_str(data.get("content")))
                if real:
                    t.prompts.append((n, MAIN, real))
        elif typ == "assistant.message":
            if "outputTokens" in data and isinstance(data["outputTokens"], (int, float)):
                key = _str(data.get("apiCallId")) or _str(data.get("messageId")) or f"line:{n}"
                streamed[key] = _n(data["outputTokens"])
            for req in data.get("toolRequests") or []:
                if isinstance(req, dict) and _str(req.get("toolCallId")) and req["toolCallId"] not in by_id:
                    args = req.get("arguments")
                    by_id[req["toolCallId"]] = _call(req["toolCallId"], _str(req.get("name")),
                                                     args, n, lane, group, t.cwd, todos)
        elif typ == "tool.execution_start" and _str(data.get("toolCallId")) \
                and data["toolCallId"] not in by_id:
            by_id[data["toolCallId"]] = _call(data["toolCallId"], _str(data.get("toolName")),
                                              data.get("arguments"), n, lane, group, t.cwd, todos)
        elif typ == "tool.execution_complete" and _str(data.get("toolCallId")):
            results[data["toolCallId"]] = ("ok" if data.get("success") is True else "error", n)
        elif typ == "abort":
            for c in by_id.values():
                if c.group == group and c.line < n and c.id not in results:
                    c.interrupted = True
        elif typ == "session.shutdown":
            for c in by_id.values():
                if c.line < n and c.id not in results:
                    c.interrupted = True
            metrics = data.get("modelMetrics") if isinstance(data.get("modelMetrics"), dict) else {}
            for m in metrics.values():
                usage = m.get("usage") if isinstance(m, dict) and isinstance(m.get("usage"), dict) else {}
                t.input_tokens += _n(usage.get("inputTokens"))
                t.cache_read_tokens += _n(usage.get("cacheReadTokens"))
                t.cache_write_tokens += _n(usage.get("cacheWriteTokens"))
                t.output_tokens += _n(usage.get("outputTokens"))
                saw_usage += 1
            streamed = {}  # the shutdown's metrics cover this stretch's responses
    saw_usage += len(streamed)
    t.output_tokens += sum(streamed.values())
    t.usage_records = saw_usage
    t.calls = list(by_id.values())
    for c in t.calls:
        if c.id in results:
            c.status, c.result_line = results[c.id]
            c.interrupted = False
    _settle_plans(t)
    _mark_later(t)
    return t


def _call(tcid: str, name: str, args, n: int, lane: str, group: str, cwd, todos) -> Call:
    a = args if isinstance(args, dict) else {"input": args}
    c = Call(id=tcid, name=name, args=a, line=n, lane=lane, group=group, cwd=cwd)
    p = a.get("path") if isinstance(a.get("path"), str) else None
    if name in WRITE_TOOLS and p:
        c.writes = (p,)
    elif name in READ_TOOLS and p:
        c.reads = (p,)
    elif name == "str_replace_editor" and p:
        cmd = a.get("command")
        if cmd in ("create", "str_replace", "insert"):
            c.writes = (p,)
        elif cmd == "view":
            c.reads = (p,)
    elif name == "apply_patch":
        body = args if isinstance(args, str) else a.get("input") or a.get("patch")
        if isinstance(body, str):
            c.writes = tuple(patch_files(body))
    elif name == "update_todo":
        todo = a.get("todos")
        if isinstance(todo, str):
            c.plan = tuple(m.group(1) for m in map(_CHECK.match, todo.splitlines()) if m)
        elif isinstance(todo, list):
            c.plan = tuple(str(x.get("content") or x.get("title") or x.get("text") or "")
                           for x in todo if isinstance(x, dict))
    elif name == "sql" and isinstance(a.get("query"), str) and lane == MAIN:
        # the plan this call leaves, if it succeeds (a failed one is undone in _settle_plans)
        c.args = {**a, "_todos_before": dict(todos)}
        if _replay_sql(a["query"], todos):
            c.plan = tuple(todos.values())
        else:
            c.args = a
    return c


def _settle_plans(t: Transcript) -> None:
    """A failed sql call changed nothing: replay the todos table over the successful ones."""
    sql = [c for c in t.calls if c.name == "sql" and "_todos_before" in c.args]
    if not any(c.status == "error" for c in sql):
        for c in sql:
            c.args = {k: v for k, v in c.args.items() if k != "_todos_before"}
        return
    todos: dict[str, str] = {}
    for c in t.calls:
        if c.name == "update_todo" or c not in sql:
            continue
        c.args = {k: v for k, v in c.args.items() if k != "_todos_before"}
        if c.status != "error":
            _replay_sql(c.args["query"], todos)
        c.plan = tuple(todos.values())
