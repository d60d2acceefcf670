"""Goose sessions: the corpus export document through the CLI (prompts, tool pairs, tokens,
title, export JSON-equal, re-import writes nothing, detection), the older JSONL session file and
the sessions.db SQLite store (built here with Goose's own schema) read-only, a locked and a
half-written database, a compaction, text_editor/todo tools, and hostile input (a malformed
document, a path in a record that is never read)."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from benchmarks.real_sessions import FAIL, PASS, evaluate
from ctxstore.errors import InvalidInput
from ctxstore.importers import export_session, import_paths
from ctxstore.importers import goose as goose_importer
from ctxstore.importers.detect import detect_format, walk
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.oracles import goose as oracle

EXPORT = "entire_goose_real_export_v1_46_0.json"
PROMPTS = ["I need to revert a change to my last commit message",
           "No I want to revert the extra amendment to the commit message where the new "
           "entire-checkpoint text was added",
           "it shouldn't have this one: Entire-Checkpoint: c81467b72ca0",
           "when error happens the footer should still show"]


def _export(repo: Repository, sid: str) -> str:
    out = io.StringIO()
    export_session(repo, sid, "goose", out)
    return out.getvalue()


def _events(repo: Repository, sid: str) -> list:
    tips = repo.branches(sid).values()
    return [repo.graph.event(e) for e in repo.graph.reachable_events(tips)]


# ---------------------------------------------------------------------------------------------
# hand-made messages, in the shapes of goose's conversation/message.rs

def _msg(i, role, content, created=1_760_000_000, **meta):
    out = {"id": f"msg_{i}", "role": role, "created": created + i, "content": content}
    if meta:
        out["metadata"] = {"userVisible": True, "agentVisible": True, **meta}
    return out


def _text(t):
    return {"type": "text", "text": t}


def _req(cid, name, args):
    return {"type": "toolRequest", "id": cid,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}


def _resp(cid, text, *, error=False, legacy=False):
    if legacy:  # older releases: the value is the Content list itself
        return {"type": "toolResponse", "id": cid,
                "toolResult": {"status": "success", "value": [_text(text)]}}
    if error == "status":
        return {"type": "toolResponse", "id": cid, "toolResult": {"status": "error", "error": text}}
    return {"type": "toolResponse", "id": cid,
            "toolResult": {"status": "success",
                           "value": {"content": [_text(text)], "isError": bool(error)}}}


TODO = "- [x] Read the config\n- [ ] Write the fix\n  - [ ] Sub-task\n"
CONVERSATION = [
    _msg(1, "user", [_text("Fix the config loader")]),
    _msg(2, "assistant", [{"type": "thinking", "thinking": "plan first", "signature": "sig"},
                          _req("t1", "todo__todo_write", {"content": TODO})]),
    _msg(3, "user", [_resp("t1", "Updated (60 chars)")]),
    _msg(4, "assistant", [_req("t2", "developer__text_editor", {"command": "view", "path": "/w/cfg.py"}),
                          _req("t3", "developer__text_editor",
                               {"command": "write", "path": "/w/cfg.py", "file_text": "x = 1\n"})]),
    _msg(5, "user", [_resp("t2", "x = 0", legacy=True), _resp("t3", "written")]),
    _msg(6, "assistant", [_req("t4", "developer__text_editor",
                               {"command": "str_replace", "path": "/w/other.py", "old_str": "a",
                                "new_str": "b"}),
                          _req("t5", "developer__shell", {"command": "pytest -q"})]),
    _msg(7, "user", [_resp("t4", "no match for old_str", error=True),
                     _resp("t5", "tool failed", error="status")]),
    _msg(8, "assistant", [_text("The write landed; the edit did not.")], agentVisible=False),
    _msg(9, "user", [_text("Summary: cfg.py was rewritten.")], userVisible=False),
    _msg(10, "assistant", [_text("Your context was compacted.")], userVisible=False),
    _msg(11, "user", [_text("Now run the tests")]),
    _msg(12, "assistant", [_req("t6", "write", {"path": "notes.md", "content": "done\n"})]),
    _msg(13, "user", [_resp("t6", "ok")]),
]


def _document(conversation=CONVERSATION, **extra):
    doc = {"id": "20260820_3", "working_dir": "/w", "name": "Fix config", "user_set_name": False,
           "session_type": "user", "created_at": "2026-08-20T10:00:00Z",
           "updated_at": "2026-08-20T10:10:00Z", "extension_data": {},
           "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940},
           "accumulated_usage": {"input_tokens": 5000, "output_tokens": 300, "total_tokens": 5300,
                                 "cache_read_input_tokens": 4000},
           "accumulated_cost": 0.25, "conversation": conversation,
           "message_count": len(conversation), "model_config": {"model_name": "claude-x"},
           "goose_mode": "auto"}
    doc.update(extra)
    return doc


# ---------------------------------------------------------------------------------------------
# the corpus


def test_corpus_export_through_the_cli(tmp_path):
    src = require_corpus() / "goose" / EXPORT
    ctx = Ctx(tmp_path)
    ctx("init")
    report = ctx.json("import", str(src))
    assert report["sessions"] == 1 and report["warnings"] == 0
    stats = report["session_stats"][0]
    assert stats["format"] == "goose" and stats["tool_pairs"] == 2
    assert stats["records"] == 14  # the document + its 13 messages
    sid = stats["session"]
    [listed] = ctx.json("sessions")
    assert listed["title"] == PROMPTS[0]
    log = ctx.json("log", f"{sid}/main")
    assert [e["payload"]["text"] for e in reversed(log) if e["type"] == "UserPromptSubmitted"] == PROMPTS
    usage = ctx.json("stats", f"{sid}/main")["token_usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"]) == \
        (124611, 394, 112820)
    t = oracle.analyze(src)
    assert [p for _, _, p in t.prompts] == PROMPTS
    assert (t.input_tokens, t.output_tokens) == (124611, 394)
    assert [c.status for c in t.calls] == ["ok", "ok"]
    out = ctx("export", sid, "--format", "goose").stdout
    assert json.loads(out) == json.loads(src.read_text(encoding="utf-8"))
    assert ctx.json("import", str(src))["new_events"] == 0


def test_detection_claims_the_goose_export_and_no_other_harness_file():
    root = require_corpus()
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name == "SOURCES.md":
            continue
        mine = p.parent.name == "goose"
        assert goose_importer.sniff(p) is mine, p
        assert oracle.detect(p) is mine, p
        if mine:
            assert detect_format(p) == "goose"
    assert goose_importer.session_units(root) == [root / "goose" / EXPORT]
    assert oracle.units(root) == [root / "goose" / EXPORT]


def test_default_dirs_follow_goose_path_root_then_xdg(tmp_path):
    home = tmp_path
    assert goose_importer.default_dirs({}, home) == [home / ".local/share/goose/sessions"]
    assert goose_importer.default_dirs({"XDG_DATA_HOME": "/x"}, home) == [Path("/x/goose/sessions")]
    assert goose_importer.default_dirs({"XDG_DATA_HOME": "rel"}, home) == \
        [home / ".local/share/goose/sessions"]  # a relative XDG dir is ignored, as etcetera does
    assert goose_importer.default_dirs({"GOOSE_PATH_ROOT": "/g", "XDG_DATA_HOME": "/x"}, home) == \
        [Path("/g/data/sessions")]
    assert goose_importer.default_dirs({"GOOSE_PATH_ROOT": "g"}, home) == \
        [home / ".local/share/goose/sessions"]  # Goose only honours an absolute root


# ---------------------------------------------------------------------------------------------
# an export document with what the corpus lacks


def test_document_with_tools_plan_compaction_and_failures(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_document(), indent=2), encoding="utf-8")
    repo = Repository.memory()
    report = import_paths(repo, [path])
    [s] = report.sessions
    assert not report.warnings
    assert s.tool_pairs == 6 and s.compactions == 1
    events = _events(repo, s.session)
    assert sum(e.type == "ToolCallFailed" for e in events) == 2
    prompts = [e.payload["text"] for e in events if e.type == "UserPromptSubmitted"]
    assert sorted(prompts) == ["Fix the config loader", "Now run the tests"]
    assert repo.session(s.session).title == "Fix the config loader"
    assert json.loads(_export(repo, s.session)) == _document()
    assert import_paths(repo, [path]).new_events == 0
    t = oracle.analyze(path)
    assert t.modified_files() == ["/w/cfg.py", "/w/notes.md"]
    assert t.read_files() == ["/w/cfg.py"]
    assert t.plan_steps() == ["Read the config", "Write the fix", "Sub-task"]
    verdicts = {r.check: r for r in evaluate(path)}
    for check in ("files.modified", "files.read", "plan.steps", "tokens.input", "tokens.output",
                  "title"):
        assert verdicts[check].verdict == PASS, verdicts[check]
    assert not [r for r in verdicts.values() if r.verdict == FAIL]


def test_a_document_that_does_not_parse_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"id": "x", "working_dir": "/w", "conversation": [', encoding="utf-8")
    with pytest.raises(InvalidInput, match="broken.json"):
        import_paths(Repository.memory(), [path], format="goose")
    ctx = Ctx(tmp_path)
    ctx("init")
    assert "broken.json" in ctx.fails(10, "import", "goose", str(path))


def test_odd_messages_are_kept_and_warned_about(tmp_path):
    conv = [_msg(1, "user", [_text("hi")]), "not a message", _msg(3, "system", [_text("?")]),
            _msg(4, "assistant", [{"type": "hologram", "x": 1}]),
            _msg(5, "user", [_resp("nope", "orphan")])]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(_document(conv)), encoding="utf-8")
    repo = Repository.memory()
    report = import_paths(repo, [path])
    lines = sorted(w["line"] for w in report.warnings)
    assert lines == [2, 3, 4, 5] and all(w["file"] == "odd.json" for w in report.warnings)
    assert json.loads(_export(repo, report.sessions[0].session)) == _document(conv)


# ---------------------------------------------------------------------------------------------
# the older JSONL session file


def _legacy(path: Path, bad: bool = False) -> Path:
    meta = {"working_dir": "/w", "description": "Fix config", "schedule_id": None,
            "message_count": 5, "total_tokens": 120, "input_tokens": 100, "output_tokens": 20,
            "accumulated_total_tokens": 700, "accumulated_input_tokens": 600,
            "accumulated_output_tokens": 100}
    msgs = [{k: v for k, v in m.items() if k not in ("id", "metadata")} for m in CONVERSATION[:7]]
    lines = [json.dumps(meta)] + [json.dumps(m) for m in msgs]
    if bad:
        lines.insert(3, "{half a line")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_legacy_jsonl_session(tmp_path):
    path = _legacy(tmp_path / "20250301_120000.jsonl", bad=True)
    assert goose_importer.sniff(path) and detect_format(path) == "goose"
    repo = Repository.memory()
    report = import_paths(repo, [path])
    [s] = report.sessions
    assert [(w["file"], w["line"]) for w in report.warnings] == [("20250301_120000.jsonl", 4)]
    assert s.source_id == "20250301_120000" and s.tool_pairs == 5
    out = _export(repo, s.session).splitlines()
    src = path.read_text(encoding="utf-8").splitlines()
    assert out[3] == "{half a line"
    assert [json.loads(x) for i, x in enumerate(out) if i != 3] == \
        [json.loads(x) for i, x in enumerate(src) if i != 3]
    assert import_paths(repo, [path]).new_events == 0
    good = _legacy(tmp_path / "20250301_130000.jsonl")
    verdicts = {r.check: r for r in evaluate(good)}
    assert verdicts["tokens.input"].measured == "600 vs 600"
    for check in ("files.modified", "files.read", "plan.steps", "title"):
        assert verdicts[check].verdict == PASS, verdicts[check]
    assert not [r for r in verdicts.values() if r.verdict == FAIL]


# ---------------------------------------------------------------------------------------------
# sessions.db


SESSIONS_DDL = """CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT,
    user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    goose_mode TEXT NOT NULL DEFAULT 'auto', archived_at TIMESTAMP, project_id TEXT,
    accumulated_cost REAL)"""
MESSAGES_DDL = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT,
    message_id TEXT)"""


def _db(path: Path, wal: bool = False) -> Path:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)")
    con.execute("INSERT INTO schema_version (version) VALUES (13)")
    con.execute(SESSIONS_DDL)
    con.execute(MESSAGES_DDL)
    for sid, conv, acc in (("20260820_1", CONVERSATION, (5000, 300)),
                           ("20260820_2", CONVERSATION[:3], (70, 7))):
        con.execute("INSERT INTO sessions (id, name, working_dir, created_at, accumulated_input_tokens,"
                    " accumulated_output_tokens, input_tokens, output_tokens, model_config_json)"
                    " VALUES (?, ?, '/w', ?, ?, ?, 1, 1, ?)",
                    (sid, f"session {sid}", f"2026-08-20 10:0{sid[-1]}:00", *acc,
                     json.dumps({"model_name": "m"})))
        for m in conv:
            con.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp,"
                        " metadata_json, message_id) VALUES (?, ?, ?, ?, ?, ?)",
                        (sid, m["role"], json.dumps(m["content"]), m["created"],
                         json.dumps(m.get("metadata", {"userVisible": True, "agentVisible": True})),
                         m["id"]))
    con.commit()
    con.close()
    return path


def test_sessions_db_read_only(tmp_path):
    path = _db(tmp_path / "sessions.db")
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    assert goose_importer.sniff(path) and detect_format(path) == "goose"
    assert walk(tmp_path) == [path]
    repo = Repository.memory()
    report = import_paths(repo, [tmp_path])
    assert not report.warnings
    first, second = report.sessions
    assert (first.source_id, second.source_id) == ("20260820_1", "20260820_2")
    assert first.tool_pairs == 6 and first.compactions == 1 and second.tool_pairs == 1
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
    assert sorted(os.listdir(tmp_path)) == ["sessions.db"]  # no journal, no -wal/-shm left
    rows = [json.loads(x) for x in _export(repo, second.session).splitlines()]
    assert [r["table"] for r in rows] == ["sessions", "messages", "messages", "messages"]
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    want = [dict(r) for r in con.execute("SELECT * FROM messages WHERE session_id='20260820_2' "
                                         "ORDER BY id")]
    con.close()
    assert [r["row"] for r in rows[1:]] == want
    assert import_paths(repo, [path]).new_events == 0
    t = oracle.analyze(path)
    assert (t.input_tokens, t.output_tokens) == (5070, 307)
    verdicts = {r.check: r for r in evaluate(path)}
    for check in ("files.modified", "files.read", "plan.steps", "tokens.input", "title"):
        assert verdicts[check].verdict == PASS, verdicts[check]
    assert not [r for r in verdicts.values() if r.verdict == FAIL]


def test_a_locked_database_is_read_without_waiting_for_goose(tmp_path):
    path = _db(tmp_path / "sessions.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # Goose in the middle of a write
    try:
        repo = Repository.memory()
        report = import_paths(repo, [path])
        assert len(report.sessions) == 2
        assert any("write-ahead log" in n for n in report.notes)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_wal_database_with_a_live_writer(tmp_path):
    path = _db(tmp_path / "sessions.db", wal=True)
    writer = sqlite3.connect(path)
    writer.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp) "
                   "VALUES ('20260820_2', 'user', ?, 1760000100)",
                   (json.dumps([_text("one more question")]),))
    writer.commit()  # committed into the -wal, not checkpointed
    try:
        report = import_paths(Repository.memory(), [path])
        assert report.sessions[1].records == 5
    finally:
        writer.close()


def test_a_half_written_database_is_refused_or_warned_about(tmp_path):
    data = _db(tmp_path / "sessions.db").read_bytes()
    for cut in (len(data) // 2, len(data) - 1024):
        d = tmp_path / f"cut-{cut}"
        d.mkdir()
        (d / "sessions.db").write_bytes(data[:cut])
        try:
            report = import_paths(Repository.memory(), [d / "sessions.db"])
        except InvalidInput as exc:  # its schema or its sessions are past the cut
            assert "sessions.db" in str(exc) and "malformed" in str(exc)
        else:  # read as far as it goes, and said so
            assert report.sessions
            assert any("half-written" in w["message"] and w["file"] == "sessions.db"
                       for w in report.warnings)


def test_a_path_in_a_message_is_never_opened(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("do not read\n")
    unit = tmp_path / "unit"
    unit.mkdir()
    conv = [_msg(1, "user", [_text("read it"), {"type": "image", "mimeType": "image/png",
                                                  "data": "", "uri": f"file://{secret}"}]),
            _msg(2, "assistant", [_req("x", "developer__text_editor",
                                       {"command": "view", "path": str(secret)})]),
            _msg(3, "user", [_resp("x", "...")])]
    doc = _document(conv, working_dir=str(secret.parent), recipe={"instructions": str(secret)})
    path = unit / "h.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    opened: list[str] = []

    def hook(event, args):
        if event in ("open", "sqlite3.connect") and args and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(args[0]))

    _watch(hook)
    try:
        report = import_paths(Repository.memory(), [path])
    finally:
        _watch(None)
    assert report.sessions
    assert not [p for p in opened if "outside" in p], opened
    assert any(p.endswith("h.json") for p in opened)


_HOOK: list = [None]


def _watch(fn) -> None:
    if not getattr(sys, "_goose_test_hook", False):
        sys.addaudithook(lambda e, a: _HOOK[0] and _HOOK[0](e, a))
        sys._goose_test_hook = True
    _HOOK[0] = fn


def test_a_declined_call_is_a_denial_not_a_write(tmp_path):
    declined = ("The user has declined to run this tool. DO NOT attempt to call this tool again. "
                "If there are no alternative methods to proceed, clearly explain the situation "
                "and STOP.")
    conv = [_msg(1, "user", [_text("Write the file")]),
            _msg(2, "assistant", [_req("d1", "developer__text_editor",
                                       {"command": "write", "path": "/w/x.py", "file_text": "1"})]),
            _msg(3, "user", [_resp("d1", declined)])]  # Goose records it as a success
    path = tmp_path / "d.json"
    path.write_text(json.dumps(_document(conv)), encoding="utf-8")
    ctx = Ctx(tmp_path)
    ctx("init")
    sid = ctx.json("import", str(path))["session_stats"][0]["session"]
    state = ctx.json("state", f"{sid}/main")
    assert state["files"]["modified"] == []
    assert [(e["name"], e["kind"]) for e in state["errors"]] == [("developer__text_editor", "denied")]
    assert [c.status for c in oracle.analyze(path).calls] == ["error"]


def test_import_with_no_path_reads_the_default_folder(tmp_path, monkeypatch):
    sessions = tmp_path / "xdg" / "goose" / "sessions"
    sessions.mkdir(parents=True)
    _db(sessions / "sessions.db")
    _legacy(sessions / "20250301_120000.jsonl")
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    ctx = Ctx(tmp_path)
    ctx("init")
    report = ctx.json("import", "goose")
    assert sorted(s["source_id"] for s in report["session_stats"]) == \
        ["20250301_120000", "20260820_1", "20260820_2"]


def test_follow_reimports_a_rewritten_document(tmp_path):
    from ctxstore.importers.follow import Follower

    path = tmp_path / "s.json"
    path.write_text(json.dumps(_document(CONVERSATION[:3])), encoding="utf-8")
    store = Repository.init(tmp_path / "live")
    f = Follower(store, path, "goose")
    assert f.poll()["lines"] == 4
    [sid] = store.session_ids()
    before = {e for e in store.graph.reachable_events(store.branches(sid).values())
              if store.graph.event(e).payload.get("source", {}).get("line", 0) > 0}
    path.write_text(json.dumps(_document(CONVERSATION)), encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a new modification time, whatever the clock's resolution
    res = f.poll()
    assert res["lines"] == len(CONVERSATION) + 1 and res["new_events"] > 0
    # the messages already imported keep their events: only the new ones and the session
    # record (rewritten by Goose as the session grows, so written last) are new
    now = store.graph.reachable_events([store.branches(sid)["main"]])
    assert before and before <= now
    assert json.loads(_export(store, sid)) == _document(CONVERSATION)
    f.close()
    store.close()


def test_a_symlink_out_of_the_walked_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.json").write_text(json.dumps(_document()), encoding="utf-8")
    _db(outside / "sessions.db")
    walked = tmp_path / "walked"
    walked.mkdir()
    (walked / "s.json").symlink_to(outside / "s.json")
    (walked / "sessions.db").symlink_to(outside / "sessions.db")
    (walked / "dir").symlink_to(outside, target_is_directory=True)
    assert goose_importer.session_units(walked) == []
    assert oracle.units(walked) == []
