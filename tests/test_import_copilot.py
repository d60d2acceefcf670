"""GitHub Copilot CLI `events.jsonl` (format `copilot`), and Codex's current rollouts
(`rollout-*.jsonl.zst`, the record types added in 2026): import through the CLI, what the
sessions hold, the token rule shared with the oracle, export JSON-equal to the input,
re-import writing nothing, detection, hostile and malformed input, `--follow`."""

from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path

import pytest
import zstandard

from ctxstore.importers import copilot, export_session, import_paths
from ctxstore.importers.detect import detect_format, walk
from ctxstore.importers.follow import Follower
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.oracles import copilot as oracle
from tests.oracles.transcripts import analyze

ELICIT = "copilot/toolpath_copilot_events_feature-elicit.jsonl"
CODEX = "codex/rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl"


def _write(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
                    encoding="utf-8")
    return path


def _sessions(ctx: Ctx) -> list[dict]:
    out = []

    def walk_(items):
        for s in items:
            if isinstance(s, dict):
                out.append(s)
                walk_(s.get("children") or [])
    listed = ctx.json("sessions")
    walk_(listed if isinstance(listed, list) else listed.get("sessions", []))
    return out


def _export(repo: Repository, sid: str, fmt: str) -> list:
    out = io.StringIO()
    export_session(repo, sid, fmt, out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def _source(path: Path) -> list:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _events(repo: Repository, sid: str) -> list:
    tip = repo.branches(sid)["main"]
    return [ev for _eid, ev in reversed(list(repo.graph.first_parents(tip)))]


# ---------------------------------------------------------------------------------------------
# the corpus session


@pytest.fixture(scope="module")
def elicit(tmp_path_factory):
    root = require_corpus()
    path = root / ELICIT
    tmp = tmp_path_factory.mktemp("elicit")
    ctx = Ctx(tmp)
    ctx("init", str(tmp))
    ctx("import", str(path))
    return path, ctx


def test_corpus_sessions_prompts_calls_tokens_and_title(elicit):
    path, ctx = elicit
    listed = _sessions(ctx)
    main = [s for s in listed if s.get("kind") == "main"]
    subs = [s for s in listed if s.get("kind") == "subagent"]
    assert len(main) == 1 and len(subs) == 1
    assert main[0]["title"].startswith("You're going to walk through a small set of tasks")
    assert subs[0]["title"] == "Count words in notes.md"  # the task call's description
    stats = {s["id"]: ctx.json("stats", s["id"] + "/main") for s in listed}
    tu = [v["token_usage"] for v in stats.values()]
    assert sum(t["input_tokens"] for t in tu) == 221936  # modelMetrics inputTokens
    assert sum(t["output_tokens"] for t in tu) == 3141  # modelMetrics outputTokens, once
    assert sum(t["cache_read_tokens"] for t in tu) == 198884
    t = analyze(path)  # the oracle, by the same written rule
    assert (t.input_tokens, t.output_tokens) == (221936, 3141)
    main_stats = stats[main[0]["id"]]
    assert main_stats["by_type"]["UserPromptSubmitted"] == 1
    assert main_stats["tools"]["tool_call_count"] == 10
    assert main_stats["tools"]["failed_tool_call_count"] == 1  # view of a missing file
    assert stats[subs[0]["id"]]["tools"]["tool_call_count"] == 1
    state = ctx.json("state", main[0]["id"] + "/main")
    assert {f["path"] for f in state["files"]["modified"]} == {
        "/tmp/elicit-scratch/notes.md", "/tmp/elicit-scratch/count.sh"}
    assert [a["status"] for a in state["subagents"]] == ["done"]
    assert state["tool_calls"]["pending"] == {}


def test_corpus_subagent_is_linked_to_its_task_call(tmp_path):
    path = require_corpus() / ELICIT
    repo = Repository.init(tmp_path / "s")
    report = import_paths(repo, [path])
    main, sub = report.sessions
    assert sub.kind == "subagent" and sub.parent_session == main.session
    spawn = repo.graph.event(sub.spawn_event)
    assert spawn.type == "ToolCallRequested" and spawn.payload["name"] == "task"
    assert not report.warnings


def test_corpus_export_is_json_equal_and_reimport_writes_nothing(tmp_path):
    path = require_corpus() / ELICIT
    repo = Repository.init(tmp_path / "s")
    first = import_paths(repo, [path])
    assert _export(repo, first.sessions[0].session, "copilot") == _source(path)
    again = import_paths(repo, [path])
    assert again.new_events == 0


def test_detection_is_ours_and_claims_no_other_corpus_file():
    root = require_corpus()
    assert detect_format(root / ELICIT) == "copilot"
    assert oracle.detect(root / ELICIT)
    for p in sorted(root.rglob("*")):
        if p.is_relative_to(root / "copilot"):
            continue
        assert not copilot.sniff(p), p
        assert not oracle.detect(p), p


# ---------------------------------------------------------------------------------------------
# hand-made records for what the corpus lacks

S = "11111111-2222-3333-4444-555555555555"


def ev(n: int, type_: str, data: dict, **extra) -> dict:
    return {"type": type_, "data": data, "id": f"e{n}", "timestamp": f"2026-07-02T10:00:{n:02d}.000Z",
            "parentId": f"e{n - 1}" if n > 1 else None, **extra}


def start(n=1, cwd="/w"):
    return ev(n, "session.start", {"sessionId": S, "version": 1, "producer": "copilot-agent",
                                   "copilotVersion": "1.0.70", "startTime": "2026-07-02T10:00:00Z",
                                   "context": {"cwd": cwd}})


def msg(n, content="", calls=(), out=None, model="gpt-5", api=None, **data):
    d = {"messageId": f"m{n}", "model": model, "content": content,
         "toolRequests": [{"toolCallId": c, "name": name, "arguments": args, "type": "function"}
                          for c, name, args in calls], **data}
    if out is not None:
        d["outputTokens"] = out
    if api:
        d["apiCallId"] = api
    return ev(n, "assistant.message", d)


def done(n, tcid, ok=True, content="ok"):
    d = {"toolCallId": tcid, "success": ok}
    d.update({"result": {"content": content}} if ok else {"error": {"message": content}})
    return ev(n, "tool.execution_complete", d)


def shutdown(n, metrics: dict):
    return ev(n, "session.shutdown", {"shutdownType": "routine", "totalPremiumRequests": 1,
                                      "totalApiDurationMs": 1, "sessionStartTime": 0,
                                      "codeChanges": {"linesAdded": 0, "linesRemoved": 0,
                                                      "filesModified": []},
                                      "modelMetrics": {m: {"requests": {"count": 1},
                                                           "usage": u} for m, u in metrics.items()}})


def usage(inp, out, read=0, write=0):
    return {"inputTokens": inp, "outputTokens": out, "cacheReadTokens": read,
            "cacheWriteTokens": write, "reasoningTokens": 0}


def _import(tmp_path, records, name="events.jsonl"):
    path = _write(tmp_path / "state" / S / name, records)
    repo = Repository.init(tmp_path / "store")
    report = import_paths(repo, [path])
    return path, repo, report


def test_token_rule_resumed_session_chunks_and_a_running_tail(tmp_path):
    """Two lifetimes closed by a shutdown (two models in the second) and a third still
    running: stats and the oracle agree on one rule; chunks of one API call count once."""
    records = [
        start(1),
        ev(2, "user.message", {"content": "Fix the bug"}),
        msg(3, "a", out=100, api="call-1"), msg(4, "b", out=100, api="call-1"),  # chunks
        msg(5, "c", out=50, api="call-2"),
        shutdown(6, {"gpt-5": usage(1000, 180, read=600, write=100)}),
        ev(7, "session.resume", {"eventCount": 6, "resumeTime": "2026-07-02T11:00:00Z"}),
        ev(8, "user.message", {"content": "And the test"}),
        msg(9, "d", out=70, api="call-3"),
        msg(10, "e", out=30, api="call-4", model="claude-sonnet-4.5"),
        shutdown(11, {"gpt-5": usage(500, 75), "claude-sonnet-4.5": usage(300, 40, read=200)}),
        ev(12, "session.resume", {"eventCount": 11, "resumeTime": "2026-07-02T12:00:00Z"}),
        ev(13, "user.message", {"content": "One more"}),
        msg(14, "f", out=9, api="call-5"),
    ]
    path, repo, report = _import(tmp_path, records)
    assert not report.warnings
    sid = report.sessions[0].session
    from ctxstore.trace import stats

    tu = stats(reversed(list(repo.graph.first_parents(repo.branches(sid)["main"]))))["token_usage"]
    t = oracle.analyze(path)
    assert (t.input_tokens, t.output_tokens, t.cache_read_tokens) == (1800, 180 + 115 + 9, 800)
    assert (tu["input_tokens"], tu["output_tokens"], tu["cache_read_tokens"]) == \
        (t.input_tokens, t.output_tokens, t.cache_read_tokens)
    assert tu["cache_write_tokens"] == 100
    by = tu["by_model"]
    assert by["claude-sonnet-4.5"]["input_tokens"] == 300 and by["claude-sonnet-4.5"]["output_tokens"] == 40
    assert _export(repo, sid, "copilot") == records


def test_calls_plans_compaction_abort_prompts_and_unknown_types(tmp_path):
    records = [
        start(1),
        ev(2, "system.message", {"role": "system", "content": "You are the GitHub Copilot CLI."}),
        ev(3, "user.message", {"content": "Plan and edit"}),
        ev(4, "user.message", {"content": "<skill>pdf</skill> use the skill", "source": "skill-pdf"}),
        msg(5, "planning", calls=[("t1", "update_todo", {"todos": "- [x] read code\n- [ ] fix bug\n"}),
                                  ("t2", "str_replace_editor", {"command": "create", "path": "/w/a.py",
                                                                "file_text": "x = 1\n"}),
                                  ("t3", "apply_patch", {"input": "*** Begin Patch\n*** Update File: /w/b.py\n"
                                                                  "@@\n-a\n+b\n*** End Patch\n"})]),
        done(6, "t1"), done(7, "t2"), done(8, "t3"),
        msg(9, "", calls=[("t4", "sql", {"description": "todos", "query":
                                         "INSERT INTO todos (id, title, description) VALUES "
                                         "('read-code', 'Reading code', 'look'), "
                                         "('fix-it', 'Fixing it', 'it''s broken')"})]),
        done(10, "t4"),
        msg(11, "", calls=[("t5", "sql", {"description": "done", "query":
                                          "UPDATE todos SET status = 'done' WHERE id = 'read-code'"})]),
        done(12, "t5"),
        ev(13, "session.compaction_start", {"currentTokens": 9000}),
        ev(14, "session.compaction_complete", {"success": True, "summaryContent": "Edited a.py and b.py",
                                               "preCompactionTokens": 9000,
                                               "checkpointPath": "/etc/passwd"}),
        msg(15, "", calls=[("t6", "bash", {"command": "sleep 100", "description": "wait"})]),
        ev(16, "abort", {"reason": "user initiated"}),
        ev(17, "session.future_thing", {"x": 1}),
    ]
    path, repo, report = _import(tmp_path, records)
    sid = report.sessions[0].session
    assert [w["line"] for w in report.warnings] == [17]
    assert "unknown record type 'session.future_thing'" in report.warnings[0]["message"]
    evs = _events(repo, sid)
    types = [e.type for e in evs]
    assert types.count("UserPromptSubmitted") == 1  # the skill injection is not a prompt
    assert "CompactionCompleted" in types and "copilot:session.future_thing" in types
    ctx = Ctx(tmp_path / "store")
    st = ctx.json("state", sid + "/main")
    assert {f["path"] for f in st["files"]["modified"]} == {"/w/a.py", "/w/b.py"}
    steps = st["plan"]["steps"]
    assert [(s["id"], s["text"], s["status"]) for s in steps][-2:] == [
        ("read-code", "Reading code", "completed"), ("fix-it", "Fixing it", "pending")]
    assert st["tool_calls"]["pending"] == {}  # the abort abandoned t6
    assert "t6" in st["tool_calls"]["abandoned"]
    t = oracle.analyze(path)
    assert t.plan_steps() == ["Reading code", "Fixing it"]
    assert set(t.modified_files()) == {"/w/a.py", "/w/b.py"}
    assert [c.id for c in t.abandoned()] == ["t6"]
    assert _export(repo, sid, "copilot") == records


def test_snapshot_rewind_starts_a_branch(tmp_path):
    records = [start(1), ev(2, "user.message", {"content": "first try"}), msg(3, "one"),
               ev(4, "session.snapshot_rewind", {"upToEventId": "e2", "eventsRemoved": 2}),
               ev(5, "user.message", {"content": "second try"}), msg(6, "two")]
    _path, repo, report = _import(tmp_path, records)
    sid = report.sessions[0].session
    branches = repo.branches(sid)
    assert set(branches) == {"main", "rewind-e2"}
    texts = [e.payload.get("text") for e in _events(repo, sid) if e.type == "UserPromptSubmitted"]
    assert texts == ["second try"]
    assert _export(repo, sid, "copilot") == records


def test_malformed_and_truncated_lines_are_named_and_kept(tmp_path):
    good = [start(1), ev(2, "user.message", {"content": "hi"})]
    path = tmp_path / "state" / S / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(good[0]) + "\n{not json\n" + json.dumps(good[1]) + "\n"
                    + '{"type": "assistant.mess', encoding="utf-8")
    repo = Repository.init(tmp_path / "store")
    report = import_paths(repo, [path])
    lines = {(w["file"], w["line"]) for w in report.warnings}
    assert lines == {("events.jsonl", 2), ("events.jsonl", 4)}
    out = io.StringIO()
    export_session(repo, report.sessions[0].session, "copilot", out)

    def norm(text: str):
        try:
            return json.loads(text)
        except ValueError:
            return text  # a bad line comes back as its raw text

    assert [norm(x) for x in out.getvalue().splitlines()] == \
        [norm(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_paths_named_by_the_data_are_never_opened(tmp_path, monkeypatch):
    """A workspace.yaml beside the file that is a symlink out of the session folder, a
    compaction checkpoint path and tool arguments naming files elsewhere: none is opened."""
    secret = tmp_path / "outside" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("summary: stolen title\n")
    records = [start(1), ev(2, "user.message", {"content": "read it"}),
               msg(3, "", calls=[("t1", "view", {"path": str(secret)})]), done(4, "t1"),
               ev(5, "session.compaction_complete", {"success": True, "summaryContent": "s",
                                                     "checkpointPath": str(secret)})]
    path = _write(tmp_path / "state" / S / "events.jsonl", records)
    os.symlink(secret, path.parent / "workspace.yaml")
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *a, **kw):
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    repo = Repository.init(tmp_path / "store")
    report = import_paths(repo, [path])
    monkeypatch.undo()
    assert str(path) in opened  # the spy sees what the import reads
    assert not any("outside" in p for p in opened), opened
    assert repo.session(report.sessions[0].session).title == "read it"


def test_default_dirs_honour_copilot_home(tmp_path):
    home = tmp_path / "home"
    assert copilot.default_dirs({"COPILOT_HOME": str(tmp_path / "ch")}, home) == \
        [tmp_path / "ch" / "session-state"]
    assert copilot.default_dirs({}, home) == [home / ".copilot" / "session-state"]


def test_follow_feeds_new_lines_including_a_subagent(tmp_path, monkeypatch):
    """`--follow` on a growing events.jsonl ends where `ctx import` of the whole file does,
    at every poll, the inline sub-agent session included (fed line by line after line 4)."""
    path = require_corpus() / ELICIT
    monkeypatch.setattr(Follower, "head_lines", 4)
    lines = path.read_bytes().splitlines(keepends=True)
    store = Repository.init(tmp_path / "live")
    growing = tmp_path / "grow" / "events.jsonl"
    growing.parent.mkdir()
    growing.write_bytes(b"")
    f = Follower(store, growing, "copilot")
    for i in range(0, len(lines), 9):
        with open(growing, "ab") as fh:
            fh.write(b"".join(lines[i:i + 9]))
        f.poll()
        ref = Repository.init(tmp_path / f"ref-{i}")
        (tmp_path / f"ref-{i}" / "events.jsonl").write_bytes(growing.read_bytes())
        import_paths(ref, [tmp_path / f"ref-{i}" / "events.jsonl"], format="copilot")
        assert {s: store.branches(s) for s in store.session_ids()} == \
            {s: ref.branches(s) for s in ref.session_ids()}, f"after {i + 9} lines"
        ref.close()
    assert len(store.session_ids()) == 2
    f.close()
    store.close()


# ---------------------------------------------------------------------------------------------
# Codex: compressed rollouts and the 2026 record types


def _zst(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(zstandard.ZstdCompressor(level=3).compress(src.read_bytes()))
    return dest


def test_codex_zst_file_and_folder_import_export_and_reimport(tmp_path):
    src = require_corpus() / CODEX
    zst = _zst(src, tmp_path / "sessions" / "2026" / "01" / "01" /
               "rollout-2026-01-01T00-00-00-019a93b9.jsonl.zst")
    assert detect_format(zst) == "codex"
    assert walk(tmp_path / "sessions") == [zst]
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    ctx("import", str(tmp_path / "sessions"))
    repo = Repository.open(tmp_path / "store")
    sid = repo.session_ids()[0]
    assert _export(repo, sid, "codex") == _source(src)
    repo.close()
    again = ctx.json("import", str(zst))
    assert again["new_events"] == 0 and again["warnings"] == 0
    # the oracle reads it too, as it reads the plain file
    a, b = analyze(zst), analyze(src)
    assert (a.input_tokens, a.output_tokens, a.modified_files(), a.plan_steps()) == \
        (b.input_tokens, b.output_tokens, b.modified_files(), b.plan_steps())


def test_codex_plain_rollout_beside_its_zst_wins_and_bad_zst_is_refused(tmp_path):
    src = require_corpus() / CODEX
    plain = tmp_path / "d" / "rollout-x.jsonl"
    plain.parent.mkdir()
    plain.write_bytes(src.read_bytes())
    _zst(src, tmp_path / "d" / "rollout-x.jsonl.zst")
    assert walk(tmp_path / "d") == [plain]
    bad = tmp_path / "bad" / "rollout-y.jsonl.zst"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not zstd at all\n" * 4)
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    err = ctx.fails(10, "import", "codex", str(bad))
    assert "rollout-y.jsonl.zst" in err
    # a stream cut short: the lines before the cut, the half line kept raw with a warning
    whole = zstandard.ZstdCompressor().compress(src.read_bytes())
    cut = tmp_path / "cut" / "rollout-z.jsonl.zst"
    cut.parent.mkdir()
    cut.write_bytes(whole[:len(whole) // 2])
    report = import_paths(Repository.init(tmp_path / "s2"), [cut])
    assert [w["message"].split(" (")[0] for w in report.warnings] == ["truncated last line"]


def test_codex_session_meta_named_by_session_id(tmp_path):
    head = {"timestamp": "2026-03-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"session_id": "0199bbbb-0000-7000-8000-000000000002", "cwd": "/w",
                        "timestamp": "2026-03-01T00:00:00.000Z"}}
    path = _write(tmp_path / "rollout-a.jsonl", [head])
    report = import_paths(Repository.init(tmp_path / "s"), [path])
    assert report.sessions[0].source_id == "0199bbbb-0000-7000-8000-000000000002"


NEW_CODEX_TYPES = {
    "inter_agent_communication": {"author": "/root", "recipient": "/root/worker",
                                  "other_recipients": [], "content": "do the tests",
                                  "trigger_turn": True},
    "inter_agent_communication_metadata": {"trigger_turn": False},
    "world_state": {"agents_md": {"path": "/w/AGENTS.md", "hash": "abc"}},
    "retained_context": {"items": [{"kind": "user_instructions", "text": "be brief"}]},
    "token_usage_record": {"total_token_usage": {"input_tokens": 10, "output_tokens": 2}},
    "security_risk_score": {"score": 0.1, "label": "low"},
    "realtime_item": {"type": "transcript", "text": "hello"},
    "agent_response_observation": {"agent": "/root/worker", "status": "completed"},
}


def test_codex_2026_record_types_are_bookkeeping_without_warnings(tmp_path):
    head = {"timestamp": "2026-03-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": "0199aaaa-0000-7000-8000-000000000001", "timestamp":
                        "2026-03-01T00:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs",
                        "cli_version": "0.150.0"}}
    user = {"timestamp": "2026-03-01T00:00:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "hello"}]}}
    lines = [head, user] + [{"timestamp": f"2026-03-01T00:00:{i + 2:02d}.000Z", "ordinal": i + 2,
                             "type": t, "payload": p}
                            for i, (t, p) in enumerate(NEW_CODEX_TYPES.items())]
    path = _write(tmp_path / "rollout-2026-03-01T00-00-00-0199aaaa.jsonl", lines)
    repo = Repository.init(tmp_path / "store")
    report = import_paths(repo, [path])
    assert report.warnings == []
    sid = report.sessions[0].session
    kinds = [e.type for e in _events(repo, sid)]
    for t in NEW_CODEX_TYPES:
        assert f"codex:{t}" in kinds
    assert _export(repo, sid, "codex") == lines
    # the same lines compressed, in a store of their own: the same records come back
    zst = _zst(path, tmp_path / "z" / (path.name + ".zst"))
    other = Repository.init(tmp_path / "store2")
    zreport = import_paths(other, [zst])
    assert zreport.warnings == []
    assert _export(other, zreport.sessions[0].session, "codex") == lines
