"""Cursor (format `cursor`): agent transcripts, the cursor-agent CLI `store.db`, the IDE's
`state.vscdb` composers and toolpath's composer dump. Import through the CLI, what the sessions
hold, export JSON-equal to the input (the rows, for databases), re-import writing nothing,
detection, locked / damaged databases, malformed and hostile input, and the oracle agreeing
with `ctx` on hand-made databases the corpus lacks."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from benchmarks.real_sessions import FAIL, PASS, evaluate
from ctxstore.errors import NotFound
from ctxstore.importers import cursor, export_session, harnesses, import_paths
from ctxstore.importers.follow import Follower
from ctxstore.repo import Repository
from ctxstore.state.tools import DENIED, ERROR, OK, call_effects
from ctxstore.state.toolsets.cursor import outcome
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.oracles import cursor as oracle

MAIN = "cursor/agentsessions_cursor_agent-transcript_synthetic.jsonl"
SUB = "cursor/agentsessions_cursor_agent-transcript-subagent_synthetic.jsonl"
STORE = "cursor/agentsessions_cursor_cli-store_synthetic.db"
DUMP = "cursor/toolpath_cursor_composer-dump_ad9f62d0.json"
KEYS = ("blobEncryptionKey", "speculativeSummarizationEncryptionKey")


def _write(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
                    encoding="utf-8")
    return path


def _sessions(ctx: Ctx) -> list[dict]:
    out: list[dict] = []

    def walk(items):
        for s in items:
            out.append(s)
            walk(s.get("children") or [])
    walk(ctx.json("sessions"))
    return out


def _imported(tmp: Path, *paths) -> tuple[Ctx, dict]:
    ctx = Ctx(tmp)
    ctx("init", str(tmp))
    rep = ctx.json("import", *map(str, paths))
    return ctx, rep


def _events(ctx: Ctx, sid: str) -> list[dict]:
    return list(reversed(ctx.json("log", "--bookkeeping", f"{sid}/main")))


def _export(ctx: Ctx, sid: str) -> str:
    return ctx("export", sid, "--format", "cursor").stdout


def _types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


# ---------------------------------------------------------------------------------------------
# builders: databases in the shapes Cursor writes


def build_vscdb(path: Path, composers: list[dict], heads: list | None = None,
                extra: tuple = ()) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    if heads is not None:
        con.execute("INSERT INTO ItemTable VALUES (?, ?)",
                    ("composer.composerHeaders", json.dumps({"allComposers": heads})))
    for doc in composers:
        cid = doc["data"]["composerId"]
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", json.dumps(doc["data"])))
        for b in doc.get("bubbles", []):
            con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                        (f"bubbleId:{cid}:{b['bubbleId']}", json.dumps(b)))
        for h, text in doc.get("content_blobs", {}).items():
            con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composer.content.{h}", text))
    for k, v in extra:
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (k, v))
    con.commit()
    con.close()
    return path


def _blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_store(path: Path, meta: dict, messages: list[dict], extra: tuple = ()) -> Path:
    """A cursor-agent chat store: each message a JSON blob; an inner linking blob names the first
    half, the root names the inner blob and the rest (protobuf field 1, 32-byte ids) plus an
    unrelated field."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    ids = []
    for m in messages:
        data = json.dumps(m).encode()
        ids.append(_blob_id(data))
        con.execute("INSERT INTO blobs VALUES (?, ?)", (ids[-1], data))
    half = len(ids) // 2
    inner = b"".join(b"\x0a\x20" + bytes.fromhex(i) for i in ids[:half])
    con.execute("INSERT INTO blobs VALUES (?, ?)", (_blob_id(inner), inner))
    root = b"\x0a\x20" + bytes.fromhex(_blob_id(inner)) + \
        b"".join(b"\x0a\x20" + bytes.fromhex(i) for i in ids[half:]) + b"\x12\x03abc"
    con.execute("INSERT INTO blobs VALUES (?, ?)", (_blob_id(root), root))
    for bid, data in extra:
        con.execute("INSERT INTO blobs VALUES (?, ?)", (bid, data))
    meta = dict(meta, latestRootBlobId=_blob_id(root))
    con.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps(meta).encode().hex(),))
    con.commit()
    con.close()
    return path


def _dump() -> dict:
    return json.loads((require_corpus() / DUMP).read_text(encoding="utf-8"))


SUB_CID = "64cc0e23-6dc6-46c4-a155-5b55fc9c30e9"


def _subagent_composer() -> dict:
    return {"data": {"composerId": SUB_CID, "name": "Count words", "createdAt": 1780338830000,
                     "fullConversationHeadersOnly": [{"bubbleId": "s2", "type": 2},
                                                     {"bubbleId": "s1", "type": 1}]},
            "bubbles": [
                {"bubbleId": "s2", "type": 2, "text": "11 words", "createdAt": "2026-06-01T18:33:51.000Z",
                 "tokenCount": {"inputTokens": 1200, "outputTokens": 30},
                 "modelInfo": {"modelName": "claude-4-sonnet"},
                 "toolFormerData": {"name": "todo_write", "status": "completed", "toolCallId": "t-todo",
                                    "params": json.dumps({"merge": False, "todos": [
                                        {"id": "1", "content": "Read notes.md", "status": "in_progress"},
                                        {"id": "2", "content": "Count words", "status": "pending"}]}),
                                    "result": "{}"}},
                {"bubbleId": "s1", "type": 1, "text": "Count the words in notes.md",
                 "createdAt": "2026-06-01T18:33:50.000Z"},
                {"bubbleId": "s0", "type": 2, "text": "", "createdAt": "2026-06-01T18:33:52.000Z",
                 "toolFormerData": {"name": "todo_write", "status": "completed", "toolCallId": "t-todo2",
                                    "params": json.dumps({"merge": True, "todos": [
                                        {"id": "1", "status": "completed"}]}), "result": "{}"}}]}


# ---------------------------------------------------------------------------------------------
# the corpus files


@pytest.fixture(scope="module")
def corpus_ctx(tmp_path_factory):
    root = require_corpus()
    tmp = tmp_path_factory.mktemp("cursor-corpus")
    ctx, rep = _imported(tmp, *(root / p for p in (MAIN, SUB, STORE, DUMP)))
    by_file = {s["file"]: s for s in rep["session_stats"]}
    return root, ctx, rep, by_file


def test_corpus_transcripts_prompts_calls_title_and_open_calls(corpus_ctx):
    root, ctx, rep, by_file = corpus_ctx
    assert rep["warnings"] == 0
    main = by_file[Path(MAIN).name]["session"]
    ev = _events(ctx, main)
    assert _types(ev).count("UserPromptSubmitted") == 2
    assert _types(ev).count("ToolCallRequested") == 2
    assert [e["payload"]["text"] for e in ev if e["type"] == "UserPromptSubmitted"] == \
        ["run ls command", "now show me the git status"]
    listed = {s["id"]: s for s in _sessions(ctx)}
    assert listed[main]["title"] == "run ls command"
    state = ctx.json("state", f"{main}/main")
    # no results are written: the call before the second prompt is abandoned, the last pending
    assert set(state["tool_calls"]["pending"]) == {"cursor-5-1"}
    assert set(state["tool_calls"]["abandoned"]) == {"cursor-2-1"}
    assert state["goal"]["user_goal"] == "run ls command"
    t = oracle.analyze(root / MAIN)
    assert [c.id for c in t.calls] == ["cursor-2-1", "cursor-5-1"]
    sub = by_file[Path(SUB).name]["session"]
    assert listed[sub]["title"] == "Run ls -la in the workspace directory and return the output."


@pytest.mark.parametrize("name", [MAIN, SUB, DUMP])
def test_corpus_export_is_json_equal_to_the_file(corpus_ctx, name):
    root, ctx, _rep, by_file = corpus_ctx
    text = _export(ctx, by_file[Path(name).name]["session"])
    src = root / name
    if src.suffix == ".jsonl":
        assert [json.loads(x) for x in text.splitlines()] == \
            [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines() if x.strip()]
    else:
        assert json.loads(text) == json.loads(src.read_text(encoding="utf-8"))


def test_corpus_store_db_imports_its_metadata_as_a_titled_session(corpus_ctx):
    root, ctx, rep, by_file = corpus_ctx
    s = by_file[Path(STORE).name]
    assert s["records"] == 1
    assert any("no messages" in n and Path(STORE).name in n for n in rep["notes"])
    listed = {x["id"]: x for x in _sessions(ctx)}
    assert listed[s["session"]]["title"] == "Test Session"
    con = sqlite3.connect(root / STORE)
    rows = [{"table": "meta", "key": k, "value": v} for k, v in con.execute("SELECT key, value FROM meta")]
    con.close()
    assert [json.loads(x) for x in _export(ctx, s["session"]).splitlines()] == rows


def test_corpus_dump_calls_files_errors_subagent_and_keys_kept_only_in_the_record(corpus_ctx):
    root, ctx, _rep, by_file = corpus_ctx
    s = by_file[Path(DUMP).name]
    assert s["records"] == 23 and s["tool_pairs"] == 10
    listed = {x["id"]: x for x in _sessions(ctx)}
    assert listed[s["session"]]["title"] == "Tool usage exercise walkthrough"
    state = ctx.json("state", f"{s['session']}/main")
    cwd = "/Users/ben/projects/temp/cursortest2"
    assert sorted(f["path"] for f in state["files"]["modified"]) == [f"{cwd}/count.sh", f"{cwd}/notes.md"]
    assert [f["path"] for f in state["files"]["read"]] == [f"{cwd}/notes.md"]
    ev = _events(ctx, s["session"])
    assert _types(ev).count("ToolCallFailed") == 1
    assert {e["payload"]["name"] for e in ev if e["type"] == "ToolCallRequested"} >= {
        "edit_file_v2", "run_terminal_command_v2", "read_file_v2", "glob_file_search",
        "ripgrep_raw_search", "task_v2"}
    assert any(e["type"] == "ModelResponseReceived" and "thinking" not in e["payload"] for e in ev)
    # the composer's local blob keys stay in the stored record (payload.source, export) only
    data = _dump()["data"]
    outside = [{k: v for k, v in e.items() if k != "payload"} | {"payload": {
        k: v for k, v in e["payload"].items() if k != "source"}}
        for e in ctx.json("log", f"{s['session']}/main")]
    seen = json.dumps(outside) + ctx("state", f"{s['session']}/main", "--json").stdout
    exported = _export(ctx, s["session"])
    assert [data[k] in seen for k in KEYS] == [False, False]
    assert [data[k] in exported for k in KEYS] == [True, True]


def test_corpus_reimport_writes_nothing(corpus_ctx):
    root, ctx, _rep, _ = corpus_ctx
    again = ctx.json("import", *(str(root / p) for p in (MAIN, SUB, STORE, DUMP)))
    assert again["new_events"] == 0 and again["sessions"] == 4


def test_detection_claims_cursor_files_and_nothing_else():
    root = require_corpus()
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        mine = p.parent.name == "cursor"
        assert cursor.sniff(p) is mine, p
        assert oracle.detect(p) is mine, p
        if mine:
            assert harnesses.sniff(p) == "cursor", p
    assert [u.name for u in cursor.session_units(root)] == [Path(STORE).name, Path(DUMP).name]
    assert sorted(oracle.units(root)) == cursor.session_units(root)


def test_forced_format(tmp_path):
    root = require_corpus()
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    assert ctx.json("import", "cursor", str(root / DUMP))["sessions"] == 1
    claude = next((root / "claude-code").glob("*.jsonl"))
    assert "not a Cursor session" in ctx.fails(10, "import", "cursor", str(claude))


# ---------------------------------------------------------------------------------------------
# state.vscdb


@pytest.fixture
def vscdb(tmp_path):
    d = _dump()
    draft = {"data": {"composerId": "draft-1", "name": "", "fullConversationHeadersOnly": []}}
    path = build_vscdb(tmp_path / "state.vscdb", [d, _subagent_composer(), draft], heads=[d["head"]])
    return path, d


def test_vscdb_composers_subagent_link_tokens_plan_and_drafts(tmp_path, vscdb):
    path, d = vscdb
    ctx, rep = _imported(tmp_path / "s", path)
    assert rep["warnings"] == 0 and rep["sessions"] == 2
    assert any("1 composer(s) without any message" in n for n in rep["notes"])
    stats = {s["source_id"]: s for s in rep["session_stats"]}
    parent, child = stats[d["data"]["composerId"]], stats[SUB_CID]
    assert child["kind"] == "subagent" and child["parent_session"] == parent["session"]
    spawn = [e for e in _events(ctx, parent["session"]) if e["type"] == "ToolCallRequested"
             and e["payload"]["name"] == "task_v2"]
    assert child["spawn_event"] == spawn[0]["id"]
    tu = ctx.json("stats", f"{child['session']}/main")["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (1200, 30)
    plan = ctx.json("state", f"{child['session']}/main")["plan"]
    assert [(s["text"], s["status"]) for s in plan["steps"]] == [
        ("Read notes.md", "completed"), ("Count words", "pending")]
    # bubbles follow fullConversationHeadersOnly, then the rest by createdAt
    texts = [e["payload"].get("text") for e in _events(ctx, child["session"])
             if e["type"] in ("UserPromptSubmitted", "ModelResponseReceived")]
    assert texts == ["11 words", "Count the words in notes.md", ""]
    # the composer read from the database exports as the dump it was made from
    text = _export(ctx, parent["session"])
    assert json.loads(text) == d
    again = ctx.json("import", str(path))
    assert again["new_events"] == 0
    # the exported document is a dump: it imports again, as a session of its own store
    (tmp_path / "out.json").write_text(text, encoding="utf-8")
    assert cursor.kind_of(tmp_path / "out.json") == cursor.DUMP
    back = ctx.json("import", str(tmp_path / "out.json"))
    assert back["sessions"] == 1 and back["session_stats"][0]["records"] == 23


def test_vscdb_oracle_agrees_with_ctx(vscdb):
    path, _d = vscdb
    results = {r.check: r for r in evaluate(path)}
    assert not [r for r in results.values() if r.verdict == FAIL], results
    for check in ("files.modified", "files.read", "tokens.input", "tokens.output", "title"):
        assert results[check].verdict == PASS, results[check]


def test_vscdb_rows_that_are_not_json_and_composers_without_head(tmp_path):
    doc = {"data": {"composerId": "c-1", "createdAt": 1780338796904, "name": "",
                    "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2}]},
           "bubbles": [{"bubbleId": "b1", "type": 1, "text": "Fix the parser"}]}
    path = build_vscdb(tmp_path / "state.vscdb", [doc], extra=[
        ("bubbleId:c-1:b2", "{not json"), ("composerData:c-2", "garbage")])
    ctx, rep = _imported(tmp_path / "s", path)
    msgs = [w["message"] for w in rep["warning_list"]]
    assert any("bubbleId:c-1:b2" in m and "not JSON" in m for m in msgs)
    assert any("composerData:c-2" in m for m in msgs)
    sid = rep["session_stats"][0]["session"]
    listed = {x["id"]: x for x in _sessions(ctx)}
    assert listed[sid]["title"] == "Fix the parser"  # no composer name: the first request
    out = json.loads(_export(ctx, sid))
    assert out["bubbles"][1] == {cursor.RAW: "{not json"} and "head" not in out


def test_vscdb_tool_outcomes_exit_code_rejection_and_running(tmp_path):
    def call(bid, name, params, status, result=None):
        tf = {"name": name, "status": status, "toolCallId": f"t-{bid}", "params": json.dumps(params)}
        if result is not None:
            tf["result"] = json.dumps(result)
        return {"bubbleId": bid, "type": 2, "text": "", "toolFormerData": tf}

    doc = {"data": {"composerId": "c-9", "name": "outcomes", "fullConversationHeadersOnly": [
        {"bubbleId": b} for b in "uabcde"]},
           "bubbles": [{"bubbleId": "u", "type": 1, "text": "go"},
                       call("a", "run_terminal_command_v2", {"command": "false"}, "completed",
                            {"output": "", "exitCode": 1, "rejected": False}),
                       call("b", "run_terminal_command_v2", {"command": "rm -rf x"}, "completed",
                            {"output": "", "rejected": True}),
                       call("c", "edit_file", {"target_file": "/w/a.py", "code_edit": "x = 1\n"},
                            "completed", {"diff": {}}),
                       call("d", "delete_file", {"target_file": "/w/b.py"}, "completed", {}),
                       call("e", "read_file", {"target_file": "/w/c.py"}, "running")]}
    path = build_vscdb(tmp_path / "state.vscdb", [doc])
    ctx, rep = _imported(tmp_path / "s", path)
    sid = rep["session_stats"][0]["session"]
    state = ctx.json("state", f"{sid}/main")
    assert sorted(f["path"] for f in state["files"]["modified"]) == ["/w/a.py", "/w/b.py"]
    assert set(state["tool_calls"]["pending"]) == {"t-e"}
    assert [(e["tool_call_id"], e["kind"]) for e in state["errors"]] == [("t-a", "error"), ("t-b", "denied")]
    t = oracle.analyze(path)
    assert {c.id: c.status for c in t.calls} == {"t-a": "error", "t-b": "error", "t-c": "ok",
                                                 "t-d": "ok", "t-e": None}
    assert outcome('{"output":"","exitCode":1}', False) == ERROR
    assert outcome('{"rejected":true}', False) == DENIED
    assert outcome("Exit code: 2\n\nCommand output:\nboom", False) == ERROR
    assert outcome("Exit code: 0\n\nCommand output:\nok", False) == OK


# ---------------------------------------------------------------------------------------------
# the cursor-agent CLI store.db


CLI_MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "<user_info>OS: linux</user_info>\n<user_query>\nWrite hello.txt\n</user_query>"},
    {"id": "1", "role": "assistant", "content": [
        {"type": "reasoning", "text": "A file write.", "signature": "c2ln"},
        {"type": "tool-call", "toolCallId": "toolu_1", "toolName": "Write",
         "args": {"path": "/w/hello.txt", "contents": "hi\n"},
         "providerOptions": {"cursor": {"modelName": "claude-4.5-opus-high-thinking"}}},
        {"type": "tool-call", "toolCallId": "toolu_2", "toolName": "Shell", "args": {"command": "make"}}]},
    {"role": "tool", "id": "toolu_1", "content": [
        {"type": "tool-result", "toolName": "Write", "toolCallId": "toolu_1", "result": "Wrote 1 line"},
        {"type": "tool-result", "toolName": "Shell", "toolCallId": "toolu_2",
         "result": "Exit code: 2\n\nCommand output:\nmake: *** No rule"}]},
    {"id": "1", "role": "assistant", "content": [{"type": "text", "text": "Done."}]},
]


def test_store_db_tree_walk_calls_results_and_row_export(tmp_path):
    agent = "93d7b323-695c-4b84-8b69-d48bb88ae780"
    ws = "e4e90b7bcae743c9a1a1a045a49e1b1d"
    path = build_store(tmp_path / "chats" / ws / agent / "store.db",
                       {"agentId": agent, "name": "New Agent", "mode": "auto-run",
                        "createdAt": 1767396459642, "lastUsedModel": "gpt-5"},
                       CLI_MESSAGES, extra=[("f" * 64, b'{"role":"user","content":"an older state"}')])
    ctx, rep = _imported(tmp_path / "s", tmp_path / "chats")  # found by the walk
    s = rep["session_stats"][0]
    assert rep["sessions"] == 1 and s["records"] == 9 and s["tool_pairs"] == 2
    listed = {x["id"]: x for x in _sessions(ctx)}
    assert listed[s["session"]]["title"] == "Write hello.txt"  # "New Agent" is no title
    ev = _events(ctx, s["session"])
    assert [e["payload"]["text"] for e in ev if e["type"] == "UserPromptSubmitted"] == ["Write hello.txt"]
    assert _types(ev).count("ToolCallFailed") == 0
    state = ctx.json("state", f"{s['session']}/main")
    assert [f["path"] for f in state["files"]["modified"]] == ["/w/hello.txt"]
    model = [e["payload"].get("model") for e in ev if e["type"] == "ModelResponseReceived"]
    assert model[0] == "claude-4.5-opus-high-thinking"
    # the rows come back as JSON documents: meta as stored, JSON blobs parsed, others as hex
    con = sqlite3.connect(path)
    want = {("meta", k): v for k, v in con.execute("SELECT key, value FROM meta")}
    want.update({("blobs", k): v for k, v in con.execute("SELECT id, data FROM blobs")})
    con.close()
    rows = [json.loads(x) for x in _export(ctx, s["session"]).splitlines()]
    assert len(rows) == len(want)
    for r in rows:
        if r["table"] == "meta":
            assert want[("meta", r["key"])] == r["value"]
        elif "data" in r:
            assert json.loads(want[("blobs", r["id"])]) == r["data"]
        else:
            assert want[("blobs", r["id"])] == bytes.fromhex(r["data_hex"])
    # children first: the inner linking blob's messages, then the root's, the root last
    order = [r.get("data", {}).get("role") for r in rows[1:]]
    assert order == ["system", "user", None, "assistant", "tool", "assistant", None, "user"]
    assert ctx.json("import", str(path))["new_events"] == 0
    results = {r.check: r for r in evaluate(path)}
    assert not [r for r in results.values() if r.verdict == FAIL], results
    assert results["files.modified"].verdict == PASS and results["title"].verdict == PASS


def test_store_db_shell_exit_code_fails_the_call(tmp_path):
    path = build_store(tmp_path / "store.db", {"agentId": "x", "name": "Make"}, CLI_MESSAGES)
    ctx, rep = _imported(tmp_path / "s", path)
    sid = rep["session_stats"][0]["session"]
    state = ctx.json("state", f"{sid}/main")
    assert state["tool_calls"]["completed"] == 2  # both answered; the exit code fails one
    assert [(e["tool_call_id"], e["name"]) for e in state["errors"]] == [("toolu_2", "Shell")]
    assert {c.id: c.status for c in oracle.analyze(path).calls} == {"toolu_1": "ok", "toolu_2": "error"}


def test_linking_blob_read_without_protobuf_framing():
    a, b = "ab" * 32, "cd" * 32
    data = b"\x0a\x20" + bytes.fromhex(a) + b"\x0a\x20" + bytes.fromhex(b) + b"\xff\xff{\"role\":\"user\",\"content\":\"x\"}"
    kids, msgs = cursor.links(data)
    assert kids == [a, b] and msgs == [{"role": "user", "content": "x"}]


# ---------------------------------------------------------------------------------------------
# locked, damaged, foreign databases


def test_locked_database_is_an_error_naming_the_file(tmp_path, monkeypatch):
    path = build_vscdb(tmp_path / "state.vscdb", [{"data": {"composerId": "c"}, "bubbles": [
        {"bubbleId": "b", "type": 1, "text": "hi"}]}])
    monkeypatch.setattr(cursor, "BUSY_TIMEOUT", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        ctx = Ctx(tmp_path / "s")
        ctx("init", str(tmp_path / "s"))
        err = ctx.fails(7, "import", str(path))
        assert str(path) in err and "locked" in err
        assert ctx.json("sessions") == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_damaged_database_is_an_error_naming_the_file(tmp_path):
    good = build_store(tmp_path / "good.db", {"agentId": "x"},
                       [{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(100)])
    bad = tmp_path / "chat" / "store.db"
    bad.parent.mkdir()
    data = good.read_bytes()
    bad.write_bytes(data[:4096 + 100])  # the header page and a torn second page
    ctx = Ctx(tmp_path / "s")
    ctx("init", str(tmp_path / "s"))
    err = ctx.fails(10, "import", str(bad))
    assert str(bad) in err


def test_other_sqlite_databases_are_not_cursor(tmp_path):
    con = sqlite3.connect(tmp_path / "opencode.db")
    con.execute("CREATE TABLE session (id TEXT, data TEXT)")
    con.execute("CREATE TABLE meta (k TEXT, v TEXT)")
    con.commit()
    con.close()
    assert not cursor.sniff(tmp_path / "opencode.db")
    assert not oracle.detect(tmp_path / "opencode.db")


# ---------------------------------------------------------------------------------------------
# transcripts: layout, malformed lines, hostile paths, follow


def test_subagent_transcript_links_to_its_parent_and_spawning_task(tmp_path):
    base = tmp_path / ".cursor" / "projects" / "Users-me-proj" / "agent-transcripts"
    pid, cid = "a1b2c3d4-e5f6-7890-abcd-ef1234567890", "d88b213c-84e1-427d-bb5e-3859c1011087"
    _write(base / pid / f"{pid}.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nRun a subagent.\n</user_query>"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "delegate"},
            {"type": "tool_use", "name": "Task", "input": {"description": "files", "prompt": "List files"}}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "[REDACTED]"}]}}])
    _write(base / pid / "subagents" / f"{cid}.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "List files"}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "a.txt"}]}}])
    ctx, rep = _imported(tmp_path / "s", tmp_path / ".cursor" / "projects")
    stats = {s["source_id"]: s for s in rep["session_stats"]}
    assert stats[cid]["kind"] == "subagent" and stats[cid]["parent_session"] == stats[pid]["session"]
    task = [e for e in _events(ctx, stats[pid]["session"]) if e["type"] == "ToolCallRequested"]
    assert stats[cid]["spawn_event"] == task[0]["id"]
    state = ctx.json("state", f"{stats[pid]['session']}/main")
    assert state["subagents"][0]["description"] == "files"


def test_malformed_lines_are_named_kept_and_written_back(tmp_path):
    path = _write(tmp_path / "t.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>hi</user_query>"}]}},
        '{"role": "assistant", "message": {',
        {"type": "turn_ended", "status": "success"},
        {"type": "mystery"},
        {"role": "user", "message": {"content": [
            {"type": "tool_result", "name": "read_file", "content": [{"type": "text", "text": "x"}]}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}])
    ctx, rep = _imported(tmp_path / "s", path)
    msgs = {(w["file"], w["line"]): w["message"] for w in rep["warning_list"]}
    assert "malformed JSON" in msgs[("t.jsonl", 2)]
    assert "unknown record type 'mystery'" in msgs[("t.jsonl", 4)]
    assert "tool result without its call" in msgs[("t.jsonl", 5)]
    sid = rep["session_stats"][0]["session"]
    out = _export(ctx, sid).splitlines()
    assert out[1] == '{"role": "assistant", "message": {'
    assert [json.loads(x) for i, x in enumerate(out) if i != 1] == \
        [json.loads(x) for i, x in enumerate(path.read_text().splitlines()) if i != 1]


def test_tool_results_pair_by_id_or_by_tool_name(tmp_path):
    path = _write(tmp_path / "t.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "read it"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "r1", "name": "Read", "input": {"path": "/w/a.md"}},
            {"type": "tool_use", "name": "Grep", "input": {"pattern": "x"}}]}},
        {"role": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "r1", "content": "text of a"},
            {"type": "tool_result", "name": "Grep", "content": "none", "is_error": True}]}}])
    ctx, rep = _imported(tmp_path / "s", path)
    sid = rep["session_stats"][0]["session"]
    state = ctx.json("state", f"{sid}/main")
    assert [f["path"] for f in state["files"]["read"]] == ["/w/a.md"]
    assert state["tool_calls"]["failed"] == 1 and not state["tool_calls"]["pending"]
    assert {c.id: c.status for c in oracle.analyze(path).calls} == {"r1": "ok", "cursor-2-1": "error"}


_OPENED: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _OPENED is not None and event in ("open", "sqlite3.connect") and args and \
            isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


def test_paths_in_records_are_never_opened(tmp_path):
    global _OPENED
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    unit = tmp_path / "unit"
    t = _write(unit / "t.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": f"read {secret}"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Read", "input": {"path": str(secret)}},
            {"type": "tool_use", "name": "Read", "input": {"path": "../secret.txt"}}]}}])
    doc = {"head": {"composerId": "c", "workspaceIdentifier": {"uri": {"fsPath": str(tmp_path)}}},
           "data": {"composerId": "c", "fullConversationHeadersOnly": [{"bubbleId": "b"}]},
           "bubbles": [{"bubbleId": "b", "type": 2, "toolFormerData": {
               "name": "edit_file_v2", "status": "completed", "toolCallId": "t1",
               "params": json.dumps({"relativeWorkspacePath": str(secret)}),
               "result": json.dumps({"afterContentId": f"composer.content.{secret}"})}}],
           "content_blobs": {}}
    (unit / "dump.json").write_text(json.dumps(doc))
    db = build_vscdb(unit / "state.vscdb", [doc])
    store = build_store(unit / "store.db", {"agentId": "a", "latestRootBlobId": str(secret)}, [])
    link = tmp_path / "walked"
    link.mkdir()
    (link / "store.db").symlink_to(store)  # a symlink out of the walked folder is not followed
    ctx = Ctx(tmp_path / "s")
    ctx("init", str(tmp_path / "s"))
    _OPENED = []
    try:
        rep = ctx.json("import", str(t), str(unit / "dump.json"), str(db), str(store))
    finally:
        opened, _OPENED = _OPENED, None
    assert rep["sessions"] == 4
    assert not [p for p in opened if "secret" in p], opened
    paths = [p.removeprefix("file://").split("?")[0] for p in opened]
    assert not [p for p in paths if p.startswith(str(tmp_path)) and not p.startswith(
        (str(unit), str(tmp_path / "s")))], opened
    with pytest.raises(NotFound):
        import_paths(Repository.init(tmp_path / "x"), [link])


def test_follow_reimports_a_growing_transcript(tmp_path):
    path = _write(tmp_path / "t.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>one</user_query>"}]}}])
    repo = Repository.init(tmp_path / "s")
    f = Follower(repo, path, "cursor")
    first = f.poll()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"role": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}) + "\n")
    second = f.poll()
    assert first["new_events"] == 1 and second["new_events"] == 1 and second["session"] == first["session"]
    out = io.StringIO()
    export_session(repo, f.session, "cursor", out)
    assert [json.loads(x) for x in out.getvalue().splitlines()] == \
        [json.loads(x) for x in path.read_text().splitlines()]
    f.close()
    repo.close()


# ---------------------------------------------------------------------------------------------
# tools and default folders


def test_tool_effects_for_documented_names():
    def kinds(name, args):
        return [(e.kind, e.path or e.summary) for e in call_effects(name, args, "cursor")]

    assert kinds("edit_file", {"target_file": "a.py", "code_edit": "x"}) == [("modify", "a.py")]
    assert kinds("edit_file_v2", {"relativeWorkspacePath": "/w/a.py"}) == [("modify", "/w/a.py")]
    assert kinds("StrReplace", {"path": "/w/b", "old_string": "a", "new_string": "b"}) == [("modify", "/w/b")]
    assert kinds("read_file_v2", {"targetFile": "/w/c"}) == [("read", "/w/c")]
    assert kinds("Read", {"path": "/w/c"}) == [("read", "/w/c")]
    assert kinds("run_terminal_cmd", {"command": "ls"}) == [("exec", "ls")]
    assert kinds("web_search", {"search_term": "q"}) == [("fetch", "q")]
    assert kinds("task_v2", {"description": "d", "prompt": "p"}) == [("spawn", "d")]
    assert kinds("delete_file", {"target_file": "/w/x"}) == [("modify", "/w/x")]
    plan = call_effects("todo_write", {"merge": False, "todos": [{"id": "1", "content": "A", "status": "pending"}]},
                        "cursor")
    assert plan[0].kind == "plan" and plan[0].steps[0]["text"] == "A"
    merged = call_effects("TodoWrite", {"merge": True, "todos": [{"id": "1", "status": "completed"}]}, "cursor")
    assert [(e.kind, e.path, e.op) for e in merged] == [("plan_status", "1", "completed")]
    # Claude Code's own Read keeps its own description
    assert [(e.kind, e.path) for e in call_effects("Read", {"file_path": "/a"}, "claude-code")] == [("read", "/a")]


def test_default_dirs_follow_the_platform_and_variables(tmp_path):
    home = tmp_path
    linux = cursor.default_dirs({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, home, "linux")
    assert linux == [home / ".cursor" / "projects", home / ".cursor" / "chats",
                     tmp_path / "xdg" / "Cursor" / "User" / "globalStorage"]
    mac = cursor.default_dirs({"CURSOR_CONFIG_DIR": str(tmp_path / "cfg")}, home, "darwin")
    assert tmp_path / "cfg" / "chats" in mac
    assert mac[-1] == home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage"
    assert cursor.default_dirs({}, home, "linux")[-1] == home / ".config" / "Cursor" / "User" / "globalStorage"
    assert ("cursor", home / ".cursor" / "chats") in harnesses.default_dirs({"HOME": str(home)})


def test_composer_document_without_data_is_refused(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"composerId": "x", "bubbles": [{"bubbleId": "b"}]}))
    assert cursor.sniff(bad)
    ctx = Ctx(tmp_path / "s")
    ctx("init", str(tmp_path / "s"))
    assert str(bad) in ctx.fails(10, "import", str(bad))
    cut = tmp_path / "d.json"
    cut.write_text(json.dumps(copy.deepcopy({"data": {"composerId": "x"}, "bubbles": [{"bubbleId": "b"}]}))[:-5])
    assert str(cut) in ctx.fails(10, "import", str(cut))


def test_older_composer_with_its_conversation_inline(tmp_path):
    data = {"composerId": "old-1", "name": "Older chat", "createdAt": 1740000000000,
            "conversation": [{"bubbleId": "x1", "type": 1, "text": "What does main.py do?"},
                             {"bubbleId": "x2", "type": 2, "text": "It prints hello."}]}
    path = build_vscdb(tmp_path / "state.vscdb", [{"data": data}])
    ctx, rep = _imported(tmp_path / "s", path)
    s = rep["session_stats"][0]
    assert s["records"] == 1
    ev = _events(ctx, s["session"])
    assert _types(ev) == ["SessionStarted", "cursor:composer", "UserPromptSubmitted", "ModelResponseReceived"]
    assert json.loads(_export(ctx, s["session"])) == {"data": data, "bubbles": [], "content_blobs": {}}


def test_user_query_is_the_request():
    from ctxstore.state.prompts import classify_prompt

    assert classify_prompt("<user_info>OS</user_info>\n<user_query>\nFix it\n</user_query>") == ("prompt", "Fix it")
    assert classify_prompt("<user_query>\n</user_query>")[0] == "skip"
    assert oracle.request("<rules>r</rules><user_query>a</user_query><user_query>b</user_query>") == "a\n\nb"


def test_oracle_imports_nothing_from_ctxstore():
    import ast

    tree = ast.parse(Path(oracle.__file__).read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] in ("ctxstore", "cli")], names
