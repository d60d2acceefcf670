"""Gemini CLI import (issue 31): the corpus files through the CLI, export JSON-equal, re-import
writing nothing, detection (ours, never another harness's), hostile and malformed input, and
hand-made records for what the corpus lacks ($rewindTo, $set.messages, same-id rewrites,
subagent folders, functionResponse turns, logs.json with several sessions, --follow)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchmarks.real_sessions import FAIL, PASS, evaluate
from ctxstore.importers import gemini, harnesses
from ctxstore.importers.detect import collect_files, default_locations, detect_format
from ctxstore.importers.follow import Follower
from ctxstore.importers.porcelain import import_paths
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.hostiletools import record_opens
from tests.oracles import gemini as oracle

JSONL = "toolpath_gemini_convo-2026-05-05_feature-elicit.jsonl"
#: file -> (prompts, tool pairs, failed calls, input, output, cache read, title start)
EXPECTED = {
    JSONL: (1, 9, 1, 81433, 837, 59438, "You're going to walk through a small set"),
    "toolpath_gemini_session-2026-04-17_main-with-tools.json":
        (2, 14, 1, 179695, 2904, None, "can you write a quick python parser"),
    "toolpath_gemini_session-2026-04-17_main-with-subagent-ref.json":
        (3, 4, 0, 51832, 1380, None, "Find where Gemini CLI stores conversations."),
    "toolpath_gemini_session-2026-04-17_subagent.json":
        (2, 6, 0, 44416, 905, None, "Your task is to answer the following question"),
    "vibecodingtracker_gemini_session-2026-03-27_readme-update.json":
        (1, 7, 0, 76348, 20941, None, "請幫我依照專案實際狀況更新"),
    "vibecodingtracker_gemini_session-2025-10-11.json":
        (1, 0, 0, 176179, 2397, None, "## 任務"),
    "codemie_gemini_logs.json": (3, 0, 0, 0, 0, None, "hi"),
}


def _corpus() -> Path:
    return require_corpus() / "gemini"


def _store(tmp_path: Path, name: str = "store") -> Ctx:
    ctx = Ctx(tmp_path / name)
    (tmp_path / name).mkdir(exist_ok=True)
    ctx("init", str(tmp_path / name))
    return ctx


def _jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def _export(ctx: Ctx, sid: str) -> str:
    return ctx("export", sid, "--format", "gemini").stdout


def _lines_equal(text: str, path: Path) -> None:
    got = [ln for ln in text.splitlines() if ln.strip()]
    want = [ln for ln in path.read_text().splitlines() if ln.strip()]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        try:
            assert json.loads(g) == json.loads(w)
        except ValueError:
            assert g == w  # a malformed line comes back as it was


def _session(ctx: Ctx, report: dict, file: str) -> dict:
    return next(s for s in report["session_stats"] if s["file"] == file)


# ---------------------------------------------------------------------------------------------
# The corpus


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_imports_exports_and_reimports(tmp_path, name):
    path = _corpus() / name
    prompts, pairs, failed, inp, out, cached, title = EXPECTED[name]
    assert detect_format(path) == "gemini"
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    assert report["warnings"] == 0 and len(report["session_stats"]) == 1
    s = report["session_stats"][0]
    sid = s["session"]
    assert s["format"] == "gemini" and s["tool_pairs"] == pairs
    log = ctx.json("log", sid + "/main")
    assert sum(e["type"] == "UserPromptSubmitted" for e in log) == prompts
    assert sum(e["type"] == "ToolCallFailed" for e in log) == failed
    tokens = ctx.json("stats", sid + "/main")["token_usage"]
    assert (tokens["input_tokens"], tokens["output_tokens"]) == (inp, out)
    if cached is not None:
        assert tokens["cache_read_tokens"] == cached
    listed = {x["id"]: x for x in ctx.json("sessions")}
    assert listed[sid]["title"].startswith(title)
    # the oracle agrees on what it counts
    t = oracle.analyze(path)
    assert (t.input_tokens, t.output_tokens) == (inp, out)
    assert len([p for p in t.prompts]) == prompts
    # export gives the source back
    text = _export(ctx, sid)
    if path.suffix == ".jsonl":
        _lines_equal(text, path)
    else:
        assert json.loads(text) == json.loads(path.read_text())
    # and importing it again writes nothing
    assert ctx.json("import", str(path))["new_events"] == 0


def test_corpus_folder_sessions_and_kinds(tmp_path):
    ctx = _store(tmp_path)
    report = ctx.json("import", str(_corpus()))
    assert report["files"] == 7 and report["warnings"] == 0
    kinds = sorted(s["kind"] for s in report["session_stats"])
    assert kinds == ["main"] * 6 + ["subagent"]
    sub = next(s for s in report["session_stats"] if s["kind"] == "subagent")
    assert sub["source_id"] == "qclszz" and sub["parent_session"] == ""  # no parent folder here
    assert ctx.json("import", str(_corpus()))["new_events"] == 0


def test_corpus_checks_hold_in_the_report():
    """The acceptance checks of benchmarks/real_sessions on every Gemini corpus file."""
    for path in sorted(_corpus().iterdir()):
        verdicts = {r.check: r for r in evaluate(path)}
        assert not [r for r in verdicts.values() if r.verdict == FAIL], path.name
        assert verdicts["title"].verdict == PASS
        if path.name != "codemie_gemini_logs.json":
            assert verdicts["tokens.input"].verdict == PASS


def test_detection_claims_gemini_files_only():
    root = require_corpus()
    ours = {p for p in _corpus().iterdir()}
    for p in root.rglob("*"):
        if not p.is_file() or p.name == "SOURCES.md":
            continue
        assert gemini.sniff(p) == (p in ours), p
        assert oracle.detect(p) == (p in ours), p
    assert {p.name for p in gemini.session_units(root)} == {p.name for p in ours if p.suffix == ".json"}
    assert set(oracle.units(root)) == {p for p in ours if p.suffix == ".json"}
    # harnesses asked before and after Gemini do not take these files
    for p in ours:
        assert harnesses.sniff(p) == "gemini"


def test_claude_and_qwen_shaped_lines_are_not_ours(tmp_path):
    claude = _jsonl(tmp_path / "c.jsonl", [{"type": "user", "sessionId": "s", "uuid": "u", "parentUuid": None,
                                             "message": {"role": "user", "content": "hi"}}])
    qwen = _jsonl(tmp_path / "q.jsonl", [{"uuid": "u", "parentUuid": None, "sessionId": "s", "type": "user",
                                          "message": {"role": "user", "parts": [{"text": "hi"}]}}])
    with_hash = _jsonl(tmp_path / "h.jsonl", [{"uuid": "u", "sessionId": "s", "projectHash": "p"}])
    for p in (claude, qwen, with_hash):
        assert not gemini.sniff(p) and not oracle.detect(p)


def test_default_dirs_follow_gemini_cli_home(tmp_path):
    home = tmp_path / "home"
    assert gemini.default_dirs({}, home) == [home / ".gemini" / "tmp"]
    assert gemini.default_dirs({"GEMINI_CLI_HOME": str(tmp_path / "g")}, home) == [tmp_path / "g" / ".gemini" / "tmp"]
    assert ("gemini", tmp_path / "g" / ".gemini" / "tmp") in default_locations(
        {"HOME": str(home), "GEMINI_CLI_HOME": str(tmp_path / "g")})


# ---------------------------------------------------------------------------------------------
# Hand-made records: rewinds, rewrites, history replacement


def _meta(sid: str, **kw) -> dict:
    return {"sessionId": sid, "projectHash": "p" * 64, "startTime": "2026-01-01T10:00:00.000Z",
            "lastUpdated": "2026-01-01T10:00:00.000Z", **kw}


def _user(mid: str, text: str, minute: int = 0) -> dict:
    return {"id": mid, "timestamp": f"2026-01-01T10:{minute:02d}:00.000Z", "type": "user",
            "content": [{"text": text}]}


def _tok(inp: int, out: int, cached: int = 0, thoughts: int = 0) -> dict:
    return {"input": inp, "output": out, "cached": cached, "thoughts": thoughts, "tool": 0,
            "total": inp + out + thoughts}


def _call(cid: str, name: str, args: dict, status: str = "success", output: str = "ok", **kw) -> dict:
    key = "output" if status == "success" else "error"
    return {"id": cid, "name": name, "args": args, "status": status,
            "timestamp": "2026-01-01T10:30:00.000Z",
            "result": [{"functionResponse": {"id": cid, "name": name, "response": {key: output}}}], **kw}


def _gem(mid: str, text: str, tokens: dict | None = None, calls: list | None = None, minute: int = 1) -> dict:
    rec = {"id": mid, "timestamp": f"2026-01-01T10:{minute:02d}:00.000Z", "type": "gemini",
           "content": text, "thoughts": [{"subject": "Plan", "description": "think", "timestamp": "x"}],
           "model": "gemini-2.5-pro"}
    if tokens is not None:
        rec["tokens"] = tokens
    if calls is not None:
        rec["toolCalls"] = calls
    return rec


def _rewind_file(tmp_path: Path) -> Path:
    g3 = _gem("g3", "writing c", _tok(300, 30, 60, 7),
              [_call("c3", "write_file", {"file_path": "c.txt", "content": "c"})], minute=8)
    return _jsonl(tmp_path / "chats" / "session-2026-01-01T10-00-rw000001.jsonl", [
        _meta("rw000001-0000", kind="main"),
        _user("u1", "Write a.txt please", 1),
        _gem("g1", "writing a", _tok(100, 10, 40, 5),
             [_call("c1", "write_file", {"file_path": "a.txt", "content": "a"})], minute=2),
        {"$set": {"lastUpdated": "2026-01-01T10:02:00.000Z"}},
        _user("u2", "now write b.txt", 3),
        _gem("g2", "writing b", _tok(200, 20, 50), [_call("c2", "write_file", {"file_path": "b.txt"})], 4),
        {"$rewindTo": "u2"},
        _user("u3", "instead write c.txt", 7),
        {k: v for k, v in g3.items() if k != "toolCalls"},  # first written without its calls
        g3,                                                 # then again under the same id
        {**g3, "toolCalls": g3["toolCalls"] + [_call("c4", "replace", {
            "file_path": "c.txt", "old_string": "c", "new_string": "C"})]},
        {"$set": {"summary": "Write some files"}},
    ])


def test_rewind_is_a_branch_and_rewrites_count_once(tmp_path):
    path = _rewind_file(tmp_path)
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    assert report["warnings"] == 0
    s = report["session_stats"][0]
    sid = s["session"]
    assert set(s["branches"]) == {"main", "rewind-0"}
    state = ctx.json("state", sid + "/main")
    assert sorted(f["path"] for f in state["files"]["modified"]) == ["a.txt", "c.txt"]
    # the session spent every message's tokens once; main's own share leaves the rewound turn out
    stats = ctx.json("stats", sid + "/main")
    whole, branch = stats["token_usage"], stats.get("branch_token_usage", stats["token_usage"])
    assert (branch["input_tokens"], branch["output_tokens"], branch["cache_read_tokens"]) == (400, 52, 100)
    if "branch_token_usage" in stats:
        assert (whole["input_tokens"], whole["output_tokens"], whole["cache_read_tokens"]) == (600, 72, 150)
    log = ctx.json("log", sid + "/main")
    prompts = [e["payload"]["text"] for e in log if e["type"] == "UserPromptSubmitted"][::-1]
    assert prompts == ["Write a.txt please", "instead write c.txt"]
    # the rewrites add only what is new: one text for g3, one request per call
    g3 = [e for e in log if e["type"] == "ModelResponseReceived" and e["payload"].get("response_id") == "g3"]
    assert sum(bool(e["payload"]["text"]) for e in g3) == 1
    assert sum(e["type"] == "ToolCallRequested" for e in log) == 3
    # the abandoned branch still holds the rewound turn
    old = ctx.json("state", f"{sid}/rewind-0")
    assert "b.txt" in [f["path"] for f in old["files"]["modified"]]
    # the title gemini-cli generated ($set.summary) is the session's
    assert next(x for x in ctx.json("sessions") if x["id"] == sid)["title"] == "Write some files"
    _lines_equal(_export(ctx, sid), path)
    assert ctx.json("import", str(path))["new_events"] == 0
    # the oracle reads the same, and every acceptance check holds
    t = oracle.analyze(path)
    assert (t.input_tokens, t.output_tokens, t.cache_read_tokens) == (600, 72, 150)
    assert sorted(t.modified_files()) == ["a.txt", "c.txt"]
    assert not [r for r in evaluate(path) if r.verdict == FAIL]


def test_rewind_to_an_unknown_id_rewinds_everything(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", [_meta("x1"), _user("u1", "first", 1), {"$rewindTo": "nope"},
                                         _user("u2", "second", 2)])
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    assert [w["line"] for w in report["warning_list"]] == [3]
    sid = report["session_stats"][0]["session"]
    log = ctx.json("log", sid + "/main")
    assert [e["payload"]["text"] for e in log if e["type"] == "UserPromptSubmitted"] == ["second"]
    _lines_equal(_export(ctx, sid), path)


def test_set_messages_rollback_is_a_branch_and_compression_a_compaction(tmp_path):
    u1, g1 = _user("u1", "Refactor x.py", 1), _gem("g1", "ok", _tok(100, 10),
                                                    [_call("c1", "replace", {"file_path": "x.py"})], 2)
    u2, g2 = _user("u2", "and y.py", 3), _gem("g2", "sure", _tok(200, 20), minute=4)
    snapshot = {"id": "s1", "timestamp": "2026-01-01T10:05:00.000Z", "type": "user",
                "content": [{"text": "<state_snapshot>x.py was refactored</state_snapshot>"}]}
    ack = {"id": "s2", "timestamp": "2026-01-01T10:05:00.000Z", "type": "gemini",
           "content": [{"text": "Got it. Thanks for the additional context!"}]}
    u3, g3 = _user("u3", "go on", 6), _gem("g3", "done", _tok(50, 5), minute=7)
    path = _jsonl(tmp_path / "s.jsonl", [
        _meta("cmp1"), u1, g1, u2, g2,
        {"$set": {"messages": [u1, g1], "lastUpdated": "2026-01-01T10:04:30.000Z"}},  # rolled back
        u2, g2,                                                                   # and asked again
        {"$set": {"messages": [snapshot, ack, u2, g2]}},                          # compressed
        u3, g3])
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    assert report["warnings"] == 0
    s = report["session_stats"][0]
    assert s["compactions"] == 1 and len(s["branches"]) == 2
    sid = s["session"]
    stats = ctx.json("stats", sid + "/main")
    branch = stats.get("branch_token_usage", stats["token_usage"])
    assert (branch["input_tokens"], branch["output_tokens"]) == (350, 35)  # g1 g2 g3
    if "branch_token_usage" in stats:  # the session: g2 counts once though both lines hold it
        assert (stats["token_usage"]["input_tokens"], stats["token_usage"]["output_tokens"]) == (350, 35)
    log = ctx.json("log", sid + "/main", "--bookkeeping")
    done = next(e for e in log if e["type"] == "CompactionCompleted")
    assert done["payload"]["summarizer"] == "gemini"
    assert ctx.json("state", sid + "/main")["files"]["modified"][0]["path"] == "x.py"
    _lines_equal(_export(ctx, sid), path)
    assert ctx.json("import", str(path))["new_events"] == 0
    t = oracle.analyze(path)
    assert (t.input_tokens, t.output_tokens) == (350, 35)
    assert not [r for r in evaluate(path) if r.verdict == FAIL]


def test_function_response_turns_plans_and_read_many_files(tmp_path):
    fc = {"id": "f1", "timestamp": "2026-01-01T10:01:00.000Z", "type": "gemini", "content": [
        {"text": "listing", "thought": True}, {"text": "I will list."},
        {"functionCall": {"id": "c1", "name": "list_directory", "args": {"dir_path": "."}}}]}
    resp = {"id": "r1", "timestamp": "2026-01-01T10:01:30.000Z", "type": "user", "content": [
        {"functionResponse": {"id": "c1", "name": "list_directory", "response": {"output": "a.py"}}}]}
    todos = {"todos": [{"description": "step one", "status": "completed"},
                       {"description": "step two", "status": "in_progress"}]}
    path = _jsonl(tmp_path / "s.jsonl", [
        _meta("fr1"), _user("u1", "plan it", 0), fc, resp,
        _gem("g2", "", _tok(10, 1), [_call("c2", "write_todos", todos),
                                     _call("c3", "read_many_files", {"include": ["src/a.py", "docs/*.md"]}),
                                     _call("c4", "read_file", {"absolute_path": "/w/old.py"}),
                                     _call("c5", "run_shell_command", {"command": "false"}, "cancelled", "no")]),
        {"id": "i1", "timestamp": "2026-01-01T10:03:00.000Z", "type": "info", "content": "Request cancelled."},
        {"id": "w1", "timestamp": "2026-01-01T10:03:00.000Z", "type": "warning", "content": "careful"},
    ])
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    s = report["session_stats"][0]
    assert report["warnings"] == 0 and s["tool_pairs"] == 5
    sid = s["session"]
    state = ctx.json("state", sid + "/main")
    assert [x["text"] for x in state["plan"]["steps"]] == ["step one", "step two"]
    assert sorted(f["path"] for f in state["files"]["read"]) == ["/w/old.py", "src/a.py"]
    log = ctx.json("log", sid + "/main", "--bookkeeping")
    assert sum(e["type"] == "UserPromptSubmitted" for e in log) == 1
    assert sum(e["type"] == "ToolCallFailed" for e in log) == 1
    assert {"gemini:info", "gemini:warning"} <= {e["type"] for e in log}
    _lines_equal(_export(ctx, sid), path)
    t = oracle.analyze(path)
    assert t.plan_steps() == ["step one", "step two"]
    assert not [r for r in evaluate(path) if r.verdict == FAIL]


def _project(tmp_path: Path) -> Path:
    """A project folder as gemini-cli lays it out: a chat, its subagent, logs.json."""
    proj = tmp_path / "tmp" / "proj"
    invoke = _call("inv1", "invoke_agent", {"agent_name": "codebase_investigator", "prompt": "look at x"},
                   agentId="agent-7")
    _jsonl(proj / "chats" / "session-2026-01-01T10-00-parent01.jsonl", [
        _meta("parent01-uuid"), _user("u1", "Investigate x", 1),
        _gem("g1", "delegating", _tok(100, 10), [invoke], 2)])
    _jsonl(proj / "chats" / "parent01-uuid" / "agent-7.jsonl", [
        _meta("agent-7", kind="subagent", directories=["/w"]), _user("a1", "look at x", 1),
        _gem("a2", "reading", _tok(30, 3), [_call("ac1", "read_file", {"file_path": "/w/x.py"})], 2)])
    (proj / "logs.json").write_text(json.dumps([
        {"sessionId": "parent01-uuid", "messageId": 0, "type": "user", "message": "Investigate x",
         "timestamp": "2026-01-01T10:01:00.000Z"},
        {"sessionId": "other-session", "messageId": 0, "type": "user", "message": "/help",
         "timestamp": "2026-01-02T10:01:00.000Z"},
        {"sessionId": "parent01-uuid", "messageId": 1, "type": "user", "message": "thanks",
         "timestamp": "2026-01-01T10:05:00.000Z"}], indent=2))
    return proj


def test_subagent_folder_and_logs_json(tmp_path):
    proj = _project(tmp_path)
    ctx = _store(tmp_path)
    report = ctx.json("import", str(tmp_path / "tmp"))
    assert report["warnings"] == 0
    by = {(s["source_id"], s["file"]): s for s in report["session_stats"]}
    parent = by[("parent01-uuid", "session-2026-01-01T10-00-parent01.jsonl")]
    child = by[("agent-7", "agent-7.jsonl")]
    assert child["kind"] == "subagent" and child["parent_session"] == parent["session"]
    spawn = ctx.json("show", child["spawn_event"])["content"]
    assert spawn["type"] == "ToolCallRequested" and spawn["payload"]["name"] == "invoke_agent"
    assert ctx.json("state", parent["session"] + "/main")["subagents"][0]["status"] == "done"
    # logs.json: one prompt-log session per sessionId, beside the chat of that id
    logs = {s["source_id"]: s for s in report["session_stats"] if s["file"] == "logs.json"}
    assert set(logs) == {"parent01-uuid", "other-session"}
    entries = json.loads((proj / "logs.json").read_text())
    assert json.loads(_export(ctx, logs["parent01-uuid"]["session"])) == [entries[0], entries[2]]
    assert json.loads(_export(ctx, logs["other-session"]["session"])) == [entries[1]]
    # the ids do not depend on which file is imported first
    other = _store(tmp_path, "other")
    other("import", str(proj / "logs.json"))
    other("import", str(tmp_path / "tmp"))
    assert {s["id"] for s in other.json("sessions")} == {s["id"] for s in ctx.json("sessions")}
    assert ctx.json("import", str(tmp_path / "tmp"))["new_events"] == 0


# ---------------------------------------------------------------------------------------------
# Bad and hostile input


def test_malformed_lines_are_named_and_kept(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", [_meta("bad1"), _user("u1", "hello", 1), "{not json",
                                         {"what": "is this"}, _gem("g1", "hi", _tok(5, 1), minute=2)])
    with open(path, "a") as fh:
        fh.write('{"id": "cut", "type": "gem')  # a last line still being written
    ctx = _store(tmp_path)
    report = ctx.json("import", str(path))
    found = {(w["file"], w["line"]) for w in report["warning_list"]}
    assert {("s.jsonl", 3), ("s.jsonl", 4), ("s.jsonl", 6)} <= found
    assert any("unknown record type" in w["message"] for w in report["warning_list"])
    _lines_equal(_export(ctx, report["session_stats"][0]["session"]), path)


def test_documents_that_do_not_parse_are_refused_naming_the_file(tmp_path):
    bad = tmp_path / "session-2026-01-01T10-00-broken01.json"
    bad.write_text('{"sessionId": "b", "projectHash": "p", "messages": [ {"id": ')
    ctx = _store(tmp_path)
    err = ctx.fails(10, "import", str(bad))
    assert bad.name in err
    logs = tmp_path / "logs.json"
    logs.write_text('[{"sessionId": "s", "messageId": 0,')
    assert "logs.json" in ctx.fails(10, "import", "gemini", str(logs))
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({**_meta("odd1"), "messages": [_user("u1", "hi"), 42, "text"]}))
    report = ctx.json("import", str(odd))
    assert sorted(w["line"] for w in report["warning_list"]) == [2, 3]
    assert json.loads(_export(ctx, report["session_stats"][0]["session"])) == json.loads(odd.read_text())


def test_paths_in_records_are_never_opened_and_symlinks_not_followed_out(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.json"
    secret.write_text(json.dumps({**_meta("secret"), "messages": [_user("s1", "secret prompt")]}))
    (outside / "logs.json").write_text(json.dumps([{"sessionId": "z", "messageId": 0, "type": "user",
                                                    "message": "secret", "timestamp": "x"}]))
    folder = tmp_path / "tmp" / "proj" / "chats"
    _jsonl(folder / "session-2026-01-01T10-00-hostile1.jsonl", [
        _meta("hostile1", directories=[str(outside)]),
        {"$set": {"directories": [str(outside), "../../outside"], "memoryScratchpad": {
            "touchedPaths": [str(secret)]}}},
        _user("u1", f"read @{secret}", 1),
        _gem("g1", "ok", _tok(1, 1), [_call("c1", "read_file", {"file_path": str(secret)},
                                            resultDisplay={"filePath": str(secret)}),
                                      _call("c2", "write_file", {"file_path": "../../outside/secret.json"})]),
    ])
    _jsonl(folder / "../outside" / "x.jsonl", [_meta("sub", kind="subagent", directories=[str(outside)])])
    (folder / "evil.json").symlink_to(secret)
    (folder.parent / "logs.json").symlink_to(outside / "logs.json")
    repo = Repository.init(tmp_path / "store")
    opened = record_opens(monkeypatch)
    try:
        report = import_paths(repo, [tmp_path / "tmp"])
    finally:
        monkeypatch.undo()
        repo.close()
    assert not [p for p in map(os.path.realpath, opened) if p.startswith(str(outside.resolve()))]
    assert {s.source_id for s in report.sessions} == {"hostile1", "sub"}
    assert not gemini.session_units(tmp_path / "tmp")
    assert [p for p, _ in collect_files([tmp_path / "tmp"], None) if p.name == "evil.json"] == []


# ---------------------------------------------------------------------------------------------
# --follow


def test_follow_feeds_the_recording_line_by_line(tmp_path, monkeypatch):
    src = _rewind_file(tmp_path / "src")
    ref = Repository.init(tmp_path / "ref")
    import_paths(ref, [src], format="gemini")
    want = {sid: ref.branches(sid) for sid in ref.session_ids()}
    ref.close()
    monkeypatch.setattr(Follower, "head_lines", 3)  # the in-memory reader from line 4 on
    lines = src.read_bytes().splitlines(keepends=True)
    grow = tmp_path / "grow" / src.name
    grow.parent.mkdir()
    grow.write_bytes(b"")
    repo = Repository.init(tmp_path / "live")
    f = Follower(repo, grow, "gemini")
    assert not f.whole
    for i in range(0, len(lines), 2):
        with open(grow, "ab") as fh:
            fh.write(b"".join(lines[i:i + 2]))
        f.poll()
    f.close()
    assert {sid: repo.branches(sid) for sid in repo.session_ids()} == want
    repo.close()


def test_follow_takes_documents_whole(tmp_path):
    doc = tmp_path / "session-x.json"
    doc.write_text(json.dumps({**_meta("doc1"), "messages": [_user("u1", "hi")]}, indent=2))
    repo = Repository.init(tmp_path / "store")
    f = Follower(repo, doc, "gemini")
    assert f.whole
    assert f.poll()["new_events"] > 0
    doc.write_text(json.dumps({**_meta("doc1"), "messages": [_user("u1", "hi"), _user("u2", "more", 2)]},
                              indent=2))
    os.utime(doc, ns=(1, 10**18))
    f.poll()
    f.close()
    sid = repo.session_ids()[0]
    assert len(repo.session_ids()) == 1 and repo.branches(sid)
    repo.close()


def test_a_migrated_document_is_left_to_its_recording(tmp_path):
    """Resuming a `session-x.json` makes gemini-cli write `session-x.jsonl` (metadata, every
    message, then the new ones) and read only that: a walk takes the recording alone."""
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    msgs = [_user("u1", "old question", 1), _gem("g1", "old answer", _tok(10, 1), minute=2)]
    (chats / "session-2025-10-01T10-00-mig00001.json").write_text(
        json.dumps({**_meta("mig00001-x"), "messages": msgs}, indent=2))
    _jsonl(chats / "session-2025-10-01T10-00-mig00001.jsonl",
           [_meta("mig00001-x"), *msgs, _user("u2", "new question", 3)])
    assert gemini.session_units(tmp_path) == [] and oracle.units(tmp_path) == []
    ctx = _store(tmp_path)
    report = ctx.json("import", str(tmp_path / "tmp"))
    assert [s["file"] for s in report["session_stats"]] == ["session-2025-10-01T10-00-mig00001.jsonl"]
    # named explicitly, the document still imports (as a session of its own form)
    doc = ctx.json("import", str(chats / "session-2025-10-01T10-00-mig00001.json"))
    assert doc["session_stats"][0]["session"] != report["session_stats"][0]["session"]
