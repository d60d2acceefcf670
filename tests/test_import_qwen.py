"""Qwen Code chat recordings: the corpus files through the CLI (sessions, prompts, tool pairs,
tokens, title, export JSON-equal, re-import writes nothing, detection), and hand-made records
for what the corpus lacks: a /rewind branch, a title anchor that does not fork, a compression,
an inline subagent, todo_write, a failed write, a malformed line, --follow, and a record naming
a file outside the session's folder (never read)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from benchmarks.real_sessions import FAIL, PASS, evaluate
from ctxstore.importers import export_session, import_paths
from ctxstore.importers import qwen as qwen_importer
from ctxstore.importers.detect import detect_format
from ctxstore.importers.follow import Follower
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.oracles import qwen as oracle

REAL = "entire_qwen_real_session_v0_21_14_mock-model.jsonl"
SYNTH = "agentsessions_qwen_chat_synthetic.jsonl"
SID = "5e551011-0000-4000-8000-000000000001"


# ---------------------------------------------------------------------------------------------
# hand-made records, in the shapes chatRecordingService.ts writes

def _rec(uuid, parent, typ, n, **kw):
    out = {"uuid": uuid, "parentUuid": parent, "sessionId": SID,
           "timestamp": f"2026-08-20T10:00:{n:02d}.000Z", "type": typ, "cwd": "/w",
           "version": "0.21.14"}
    out.update(kw)
    return out


def _user(uuid, parent, n, text, **kw):
    return _rec(uuid, parent, "user", n, message={"role": "user", "parts": [{"text": text}]}, **kw)


def _model(uuid, parent, n, parts, usage=None, **kw):
    extra = {"usageMetadata": usage} if usage else {}
    return _rec(uuid, parent, "assistant", n, model="qwen3-coder",
                message={"role": "model", "parts": parts}, **extra, **kw)


def _call(cid, name, args):
    return {"functionCall": {"id": cid, "name": name, "args": args}}


def _result(uuid, parent, n, cid, name, *, error=None, **kw):
    resp = {"error": error} if error else {"output": "ok"}
    return _rec(uuid, parent, "tool_result", n,
                message={"role": "user", "parts": [{"functionResponse": {"id": cid, "name": name,
                                                                          "response": resp}}]},
                toolCallResult={"callId": cid, "status": "error" if error else "success"}, **kw)


def _usage(prompt, cand, thoughts=0, cached=0):
    return {"promptTokenCount": prompt, "candidatesTokenCount": cand, "thoughtsTokenCount": thoughts,
            "cachedContentTokenCount": cached, "totalTokenCount": prompt + cand + thoughts}


def _system(uuid, parent, n, subtype, payload):
    return _rec(uuid, parent, "system", n, subtype=subtype, systemPayload=payload)


TODOS = [{"id": "1", "content": "Write c.py", "status": "in_progress"},
         {"id": "2", "content": "Test it", "status": "pending"}]
SIDE = {"isSidechain": True, "agentId": "explore-1", "agentName": "Explore"}

#: u1 a1 r1 a2 | u2 a3 r2 (rewound) | rw u3 a4 r3 r4 title a5 compression, then a subagent
RECORDS = [
    _user("u1", None, 1, "Write a.py"),
    _model("a1", "u1", 2, [{"text": "thinking…", "thought": True},
                           _call("c1", "write_file", {"file_path": "/w/a.py", "content": "x\n"})],
           _usage(100, 10, 5, 40)),
    _result("r1", "a1", 3, "c1", "write_file"),
    _model("a2", "r1", 4, [{"text": "done"}], _usage(200, 20, 0, 150)),
    _user("u2", "a2", 5, "Now b.py"),
    _model("a3", "u2", 6, [_call("c2", "write_file", {"file_path": "/w/b.py", "content": "y"})],
           _usage(300, 30)),
    _result("r2", "a3", 7, "c2", "write_file"),
    _system("rw", "a2", 8, "rewind", {"truncatedCount": 3}),
    _user("u3", "rw", 9, "Instead c.py"),
    _model("a4", "u3", 10, [_call("c3", "todo_write", {"todos": TODOS}),
                            _call("c4", "write_file", {"file_path": "/w/c.py", "content": "z"})],
           _usage(400, 40, 10, 100)),
    _result("r3", "a4", 11, "c3", "todo_write"),
    _result("r4", "r3", 12, "c4", "write_file", error="permission denied by policy"),
    _system("t1", "r4", 13, "custom_title", {"customTitle": "Rewrite c", "titleSource": "auto"}),
    _model("a5", "r4", 14, [{"text": "c.py could not be written."}], _usage(50, 5)),
    _system("cc", "a5", 15, "chat_compression",
            {"info": {"originalTokenCount": 5000, "newTokenCount": 800, "compressionStatus": 1},
             "compressedHistory": [{"role": "user", "parts": [{"text": "<state_snapshot>a.py "
                                                                      "written</state_snapshot>"}]},
                                   {"role": "model", "parts": [{"text": "Got it."}]}]}),
    _user("s1", None, 16, "Look at the README", **SIDE),
    _model("s2", "s1", 17, [_call("c5", "read_file", {"file_path": "/w/README.md"})],
           _usage(60, 6), **SIDE),
    _result("s3", "s2", 18, "c5", "read_file", **SIDE),
    _model("s4", "s3", 19, [{"text": "It says hello."}], _usage(70, 7), **SIDE),
]


def _write(path: Path, records, extra: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + extra, encoding="utf-8")
    return path


def _lines(path: Path) -> list:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _export(repo: Repository, sid: str) -> str:
    out = io.StringIO()
    export_session(repo, sid, "qwen", out)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# the corpus


@pytest.mark.parametrize("name, prompts, pairs, tokens, title", [
    (REAL, ["write hello.txt"], 1, (2468, 112), "write hello.txt"),
    (SYNTH, ["Inspect the synthetic fixture."], 1, (0, 0), "Inspect the synthetic fixture."),
])
def test_corpus_file_through_the_cli(tmp_path, name, prompts, pairs, tokens, title):
    src = require_corpus() / "qwen" / name
    ctx = Ctx(tmp_path)
    ctx("init")
    report = ctx.json("import", str(src))
    assert report["sessions"] == 1 and report["warnings"] == 0
    stats = report["session_stats"][0]
    assert stats["format"] == "qwen" and stats["tool_pairs"] == pairs
    assert stats["records"] == len(_lines(src))
    sid = stats["session"]
    [listed] = ctx.json("sessions")
    assert listed["title"] == title
    log = ctx.json("log", f"{sid}/main")
    said = [e["payload"]["text"] for e in log if e["type"] == "UserPromptSubmitted"]
    assert list(reversed(said)) == prompts
    usage = ctx.json("stats", f"{sid}/main")["token_usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == tokens
    # the oracle reads the same numbers off the file
    t = oracle.analyze(src)
    assert [p for _, _, p in t.prompts] == prompts
    assert (t.input_tokens, t.output_tokens) == tokens
    # export gives the file back, JSON-equal line by line
    out = ctx("export", sid, "--format", "qwen").stdout
    assert [json.loads(x) for x in out.splitlines()] == _lines(src)
    # and importing it again writes nothing
    assert ctx.json("import", str(src))["new_events"] == 0


def test_the_real_file_keeps_its_failed_call_and_telemetry(tmp_path):
    src = require_corpus() / "qwen" / REAL
    repo = Repository.memory()
    report = import_paths(repo, [src])
    sid = report.sessions[0].session
    types = [repo.graph.event(e).type for e in repo.graph.reachable_events(repo.branches(sid).values())]
    assert types.count("ToolCallFailed") == 1 and types.count("ToolCallFinished") == 0
    assert types.count("qwen:system") == 4  # attribution_snapshot + 3 ui_telemetry
    assert types.count("ModelResponseReceived") == 2
    session = repo.session(sid)
    assert session.origin == {"format": "qwen", "id": "5111125b-e311-42be-8e4d-93942aaaacf4",
                              "version": "0.21.14"}
    assert session.cwd == "/repo"


def test_detection_claims_qwen_files_and_no_other_harness_file():
    root = require_corpus()
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name == "SOURCES.md":
            continue
        mine = p.parent.name == "qwen"
        assert qwen_importer.sniff(p) is mine, p
        assert oracle.detect(p) is mine, p
        if mine:
            assert detect_format(p) == "qwen"


def test_detection_of_hand_made_claude_and_gemini_lines(tmp_path):
    claude = _write(tmp_path / "c.jsonl", [
        {"type": "system", "subtype": "local_command", "uuid": "x", "parentUuid": None,
         "sessionId": "s", "content": "hi"},
        {"type": "user", "uuid": "y", "parentUuid": "x", "sessionId": "s",
         "message": {"role": "user", "content": "hello"}}])
    gemini = _write(tmp_path / "g.jsonl", [
        {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"},
        {"id": "m1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": "hi"}])
    assert not qwen_importer.sniff(claude) and detect_format(claude) == "claude-code"
    assert not qwen_importer.sniff(gemini) and not oracle.detect(gemini)
    assert qwen_importer.sniff(_write(tmp_path / "q.jsonl", RECORDS))


def test_default_dirs_follow_qwen_runtime_dir_then_qwen_home(tmp_path):
    home = tmp_path
    assert qwen_importer.default_dirs({}, home) == [home / ".qwen" / "projects"]
    assert qwen_importer.default_dirs({"QWEN_HOME": "/q"}, home) == [Path("/q/projects")]
    assert qwen_importer.default_dirs({"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}, home) == \
        [Path("/r/projects")]


# ---------------------------------------------------------------------------------------------
# hand-made records


def test_rewind_branch_title_anchor_compression_and_subagent(tmp_path):
    path = _write(tmp_path / f"{SID}.jsonl", RECORDS)
    repo = Repository.memory()
    report = import_paths(repo, [path])
    assert not report.warnings
    main, child = report.sessions
    assert main.kind == "main" and child.kind == "subagent"
    assert repo.session(child.session).parent_session == main.session
    assert repo.session(child.session).origin["layout"] == "inline"
    branches = repo.branches(main.session)
    assert set(branches) == {"main", "rewind-0"}  # the rewound line; the title anchor does not fork
    assert main.compactions == 1 and main.tool_pairs == 4 and child.tool_pairs == 1
    assert repo.session(main.session).title == "Write a.py"
    on_main = [repo.graph.event(e) for e in repo.graph.reachable_events([branches["main"]])]
    lines = {ev.payload["source"]["line"] for ev in on_main if "source" in ev.payload}
    assert lines == set(range(1, 16)) - {5, 6, 7}  # u2 a3 r2 sit on the dead branch only
    title = [ev for ev in on_main if ev.type == "qwen:system" and ev.payload.get("title")]
    assert title[0].payload["title"] == "Rewrite c"
    # export of the main session writes every line back, its subagent's included
    assert [json.loads(x) for x in _export(repo, main.session).splitlines()] == RECORDS
    assert import_paths(repo, [path]).new_events == 0


def test_hand_made_file_is_judged_by_the_oracle(tmp_path):
    path = _write(tmp_path / f"{SID}.jsonl", RECORDS)
    t = oracle.analyze(path)
    assert t.modified_files() == ["/w/a.py"]          # b.py is rewound, c.py failed
    assert t.read_files() == ["/w/README.md"]         # the subagent's read
    assert t.plan_steps() == ["Write c.py", "Test it"]
    # the whole session: the rewound turn (a3) was spent too
    assert (t.input_tokens, t.output_tokens) == (100 + 200 + 300 + 400 + 50 + 60 + 70,
                                                 15 + 20 + 30 + 50 + 5 + 6 + 7)
    assert t.cache_read_tokens == 290
    verdicts = {r.check: r for r in evaluate(path)}
    for check in ("files.modified", "files.read", "plan.steps", "tokens.input",
                  "tokens.output", "title"):
        assert verdicts[check].verdict == PASS, verdicts[check]
    assert not [r for r in verdicts.values() if r.verdict == FAIL]


def test_stats_count_every_branch_and_the_subagent(tmp_path):
    path = _write(tmp_path / f"{SID}.jsonl", RECORDS)
    (tmp_path / "store").mkdir()
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    ctx("import", str(path))
    stats = {s["kind"]: ctx.json("stats", f"{s['id']}/main") for s in ctx.json("sessions")}
    got = {k: v["token_usage"] for k, v in stats.items()}
    assert (got["main"]["input_tokens"], got["main"]["output_tokens"]) == (1050, 120)
    assert got["main"]["cache_read_tokens"] == 290
    mine = stats["main"]["branch_token_usage"]  # the main line alone: a3 was rewound
    assert (mine["input_tokens"], mine["output_tokens"]) == (750, 90)
    assert (got["subagent"]["input_tokens"], got["subagent"]["output_tokens"]) == (130, 13)
    state = ctx.json("state", f"{[s['id'] for s in ctx.json('sessions') if s['kind'] == 'main'][0]}/main")
    assert [f["path"] if isinstance(f, dict) else f for f in state["files"]["modified"]] == ["/w/a.py"]
    assert [s["text"] for s in state["plan"]["steps"]] == ["Write c.py", "Test it"]


def test_malformed_and_unknown_records_are_kept_and_named(tmp_path):
    good = RECORDS[:4]
    odd = _rec("z1", "a2", "checkpoint", 20, note="a record type Qwen may add later")
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good[:2]) + "{not json\n"
                    + "".join(json.dumps(r) + "\n" for r in good[2:]) + json.dumps(odd) + "\n"
                    + '{"uuid": "half', encoding="utf-8")
    repo = Repository.memory()
    report = import_paths(repo, [path], format="qwen")
    where = [(w["file"], w["line"]) for w in report.warnings]
    assert ("bad.jsonl", 3) in where and ("bad.jsonl", 6) in where and ("bad.jsonl", 7) in where
    assert any("unknown record type 'checkpoint'" in w["message"] for w in report.warnings)
    out = _export(repo, report.sessions[0].session).splitlines()
    src = path.read_text(encoding="utf-8").splitlines()
    assert len(out) == len(src)
    for a, b in zip(out, src, strict=True):  # JSON-equal; the bad lines as they were written
        assert a == b if b in ("{not json", '{"uuid": "half') else json.loads(a) == json.loads(b)


def test_a_path_in_a_record_is_never_opened(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("do not read\n")
    unit = tmp_path / "unit"
    unit.mkdir()
    hostile = [
        _user("h1", None, 1, "read it", cwd=str(secret.parent)),
        _model("h2", "h1", 2, [_call("x1", "read_file", {"file_path": str(secret)}),
                               _call("x2", "read_many_files", {"paths": [str(secret), "../*"]})]),
        _result("h3", "h2", 3, "x1", "read_file"),
        _system("h4", "h3", 4, "at_command", {"filesRead": [str(secret), "../../etc/passwd"]}),
        _system("h5", "h4", 5, "file_history_snapshot",
                {"snapshots": [{"filePath": str(secret), "backupFileName": "../secret.txt"}]}),
    ]
    path = _write(unit / "h.jsonl", hostile)
    opened: list[str] = []

    def hook(event, args):
        if event in ("open", "os.open") and args and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(args[0]))

    _watch(hook)
    try:
        repo = Repository.memory()
        report = import_paths(repo, [path])
    finally:
        _watch(None)
    assert report.sessions and not report.warnings
    assert not [p for p in opened if "outside" in p or "passwd" in p], opened
    assert any(p.endswith("h.jsonl") for p in opened)


_HOOK: list = [None]


def _watch(fn) -> None:
    """Route audit events to FN (None: stop); the hook is installed once per process."""
    if not getattr(sys, "_qwen_test_hook", False):
        sys.addaudithook(lambda e, a: _HOOK[0] and _HOOK[0](e, a))
        sys._qwen_test_hook = True
    _HOOK[0] = fn


def test_follow_equals_import_at_every_poll(tmp_path, monkeypatch):
    monkeypatch.setattr(Follower, "head_lines", 5)  # the line-fed reader from line 6
    full = "".join(json.dumps(r) + "\n" for r in RECORDS).encode()
    lines = full.splitlines(keepends=True)
    store = Repository.init(tmp_path / "live")
    growing = tmp_path / "grow" / f"{SID}.jsonl"
    growing.parent.mkdir()
    growing.write_bytes(b"")
    f = Follower(store, growing, "qwen")
    for i in range(0, len(lines), 3):
        chunk = b"".join(lines[i:i + 3])
        with open(growing, "ab") as fh:
            fh.write(chunk[:-3])
        f.poll()
        with open(growing, "ab") as fh:
            fh.write(chunk[-3:])
        f.poll()
        ref = Repository.init(tmp_path / f"ref-{i}")
        copy = tmp_path / f"ref-{i}" / growing.name
        copy.write_bytes(growing.read_bytes())
        import_paths(ref, [copy], format="qwen")
        want = {sid: ref.branches(sid) for sid in ref.session_ids()}
        ref.close()
        assert {sid: store.branches(sid) for sid in store.session_ids()} == want, f"line {i + 3}"
    f.close()
    store.close()


def test_a_forced_format_that_does_not_fit_is_refused(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    src = require_corpus() / "codex" / "rollout-genuine-redacted_v0.135.0_exec-smoke_019e9625.jsonl"
    err = ctx.fails(10, "import", "qwen", str(src))
    assert "qwen" in err


def test_a_refused_call_is_a_denial(tmp_path):
    refused = [
        _user("d1", None, 1, "Write x.py"),
        _model("d2", "d1", 2, [_call("k1", "write_file", {"file_path": "/w/x.py", "content": "1"})]),
        _rec("d3", "d2", "tool_result", 3,
             message={"role": "user", "parts": [{"functionResponse": {
                 "id": "k1", "name": "write_file",
                 "response": {"error": "[Operation Cancelled] Reason: User did not allow tool call"}}}]},
             toolCallResult={"callId": "k1", "status": "cancelled"}),
    ]
    path = _write(tmp_path / "d.jsonl", refused)
    ctx = Ctx(tmp_path)
    ctx("init")
    sid = ctx.json("import", str(path))["session_stats"][0]["session"]
    state = ctx.json("state", f"{sid}/main")
    assert state["files"]["modified"] == []
    assert [(e["name"], e["kind"]) for e in state["errors"]] == [("write_file", "denied")]
    assert [c.status for c in oracle.analyze(path).calls] == ["error"]


def test_import_with_no_path_reads_the_default_folder(tmp_path, monkeypatch):
    runtime = tmp_path / "runtime"
    chats = runtime / "projects" / "-w" / "chats"
    chats.mkdir(parents=True)
    _write(chats / f"{SID}.jsonl", RECORDS[:4])
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(runtime))
    ctx = Ctx(tmp_path)
    ctx("init")
    report = ctx.json("import", "qwen")
    assert report["sessions"] == 1 and report["session_stats"][0]["source_id"] == SID


def test_qwen_s_own_title_names_a_session_without_a_prompt(tmp_path):
    records = [_system("n1", None, 1, "session_source", {"sourceType": "acp"}),
               _model("n2", "n1", 2, [{"text": "hello"}]),
               _system("n3", "n2", 3, "custom_title", {"customTitle": "Greeting", "titleSource": "auto"})]
    repo = Repository.memory()
    report = import_paths(repo, [_write(tmp_path / "n.jsonl", records)])
    assert repo.session(report.sessions[0].session).title == "Greeting"


def test_a_record_written_again_under_its_uuid_does_not_fork(tmp_path):
    records = [_user("w1", None, 1, "Go"),
               _model("w2", "w1", 2, [{"text": "thinking", "thought": True}]),
               _model("w2", "w1", 3, [{"text": "thinking", "thought": True}, {"text": "Done."}],
                      _usage(10, 2)),
               _system("w3", "w2", 4, "ui_telemetry", {"uiEvent": {"event.name": "x"}})]
    repo = Repository.memory()
    report = import_paths(repo, [_write(tmp_path / "w.jsonl", records)])
    sid = report.sessions[0].session
    assert list(repo.branches(sid)) == ["main"]
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("import", str(tmp_path / "w.jsonl"))
    [s] = ctx.json("sessions")
    usage = ctx.json("stats", f"{s['id']}/main")["token_usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (10, 2)
    assert (oracle.analyze(tmp_path / "w.jsonl").input_tokens) == 10
