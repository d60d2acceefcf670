"""`ctx sessions` (title, format, cwd, subagent tree, filters) and `ctx stats --json` tokens."""

from __future__ import annotations

import json
import shutil

import pytest

from ctxstore import ContextManager, Repository

from .clitools import Ctx
from .test_state_from_transcripts import CODEX, PI


def _claude_with_subagent(root):
    """A Claude Code 2.1.x layout: a session whose Agent call ran a subagent in its own file."""
    base = {"sessionId": "s1", "cwd": "/work/app", "isSidechain": False, "version": "2.1.114"}
    main = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": "<command-name>/init</command-name>"}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-03-01T10:00:01.000Z",
         "message": {"role": "user", "content": "Review the parser module"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u2", "timestamp": "2026-03-01T10:00:02.000Z",
         "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                     "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 9},
                     "content": [{"type": "tool_use", "id": "t1", "name": "Agent",
                                  "input": {"description": "Check the lexer", "prompt": "go"}}]}},
        {**base, "type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "2026-03-01T10:00:09.000Z",
         "toolUseResult": {"agentId": "ax1", "status": "completed"},
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "done"}]}},
        {"type": "ai-title", "sessionId": "s1", "aiTitle": "Parser review"},
    ]
    sub = [
        {**base, "isSidechain": True, "agentId": "ax1", "type": "user", "uuid": "x1", "parentUuid": None,
         "timestamp": "2026-03-01T10:00:03.000Z", "message": {"role": "user", "content": "go"}},
        {**base, "isSidechain": True, "agentId": "ax1", "type": "assistant", "uuid": "x2",
         "parentUuid": "x1", "timestamp": "2026-03-01T10:00:04.000Z",
         "message": {"id": "m2", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "text", "text": "ok"}]}},
    ]
    proj = root / "projects" / "app"
    (proj / "s1" / "subagents").mkdir(parents=True)
    (proj / "s1.jsonl").write_text("\n".join(json.dumps(x) for x in main) + "\n")
    (proj / "s1" / "subagents" / "agent-ax1.jsonl").write_text("\n".join(json.dumps(x) for x in sub) + "\n")
    (proj / "s1" / "subagents" / "agent-ax1.meta.json").write_text(
        json.dumps({"agentType": "general-purpose", "description": "Check the lexer"}))
    return proj


@pytest.fixture
def ctx(tmp_path):
    store = Repository.init(tmp_path / "store")
    ContextManager.start(store, title="native work", goal="Ship it", ts="2026-01-01T00:00:00.000Z")
    store.close()
    c = Ctx(tmp_path / "store")
    data = tmp_path / "in"
    data.mkdir()
    for f in (CODEX, PI):
        shutil.copy(f, data / f.name)
    c("import", str(data))
    c("import", str(_claude_with_subagent(tmp_path)))
    return c


def test_sessions_json_fields_and_tree(ctx):
    rows = ctx.json("sessions")
    by_format = {}
    for r in rows:
        for key in ("id", "title", "format", "cwd", "kind", "parent", "children", "depth",
                    "events", "branches", "last_activity"):
            assert key in r
        by_format.setdefault(r["format"], []).append(r)
    assert set(by_format) == {"claude-code", "codex", "pi", "native"}
    main, sub = by_format["claude-code"]  # tree order: the subagent right under its parent
    assert main["title"] == "Parser review" and main["cwd"] == "/work/app"
    assert sub["parent"] == main["id"] and main["children"] == [sub["id"]]
    assert sub["depth"] == 1 and sub["kind"] == "subagent" and sub["title"] == "Check the lexer"
    (codex,) = by_format["codex"]
    assert codex["title"].startswith("finish up the users work")
    assert codex["cwd"] == "/home/user/projects/temp/chatbot-ui"
    (pi,) = by_format["pi"]
    assert pi["title"].startswith("alright, read @packages/coding-agent")
    assert by_format["native"][0]["title"] == "native work"
    assert all("<" not in r["title"] for r in rows)


def test_sessions_text_shows_tree_format_and_cwd(ctx):
    out = ctx("sessions").stdout
    lines = out.splitlines()
    i = next(n for n, x in enumerate(lines) if "Parser review" in x)
    assert "claude-code" in lines[i] and "/work/app" in lines[i]
    assert "└ subagent: Check the lexer" in lines[i + 1]
    assert any("codex" in x and "chatbot-ui" in x for x in lines)


def test_sessions_filters(ctx):
    assert [r["format"] for r in ctx.json("sessions", "--format", "pi")] == ["pi"]
    rows = ctx.json("sessions", "--cwd", "/work")
    assert {r["title"] for r in rows} == {"Parser review", "Check the lexer"}
    assert [r["depth"] for r in rows] == [0, 1]
    assert {r["format"] for r in ctx.json("sessions", "--grep", "LMSTUDIO|lexer")} == {"codex", "claude-code"}
    assert {r["format"] for r in ctx.json("sessions", "--since", "2026-02-01")} == {"claude-code"}
    assert ctx.json("sessions", "--since", "1d") == []
    assert "No sessions match." in ctx("sessions", "--format", "nope").stdout
    err = ctx.fails(10, "sessions", "--since", "the day after tomorrow")
    assert "--since" in err and "3d" in err
    err = ctx.fails(10, "sessions", "--grep", "(")
    assert "--grep" in err


def test_stats_json_token_usage(ctx):
    rows = ctx.json("sessions", "--format", "claude-code")
    tu = ctx.json("stats", f"{rows[0]['id']}/main")["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (103, 9)
    assert tu["cache_read_tokens"] == 100 and tu["cache_write_tokens"] == 0
    assert tu["by_model"] == {"claude-x": {"input_tokens": 103, "output_tokens": 9,
                                           "cache_read_tokens": 100, "cache_write_tokens": 0,
                                           "cost_usd": None}}
    (pi,) = ctx.json("sessions", "--format", "pi")
    tu = ctx.json("stats", f"{pi['id']}/main")["token_usage"]
    assert tu["input_tokens"] > tu["cache_read_tokens"] > 0 and tu["cost_usd"] > 0
    out = ctx("stats", f"{pi['id']}/main").stdout
    assert "cache read" in out and "claude-opus-4-5" in out


def test_a_pi_fork_is_listed_under_the_session_it_branched_from(tmp_path):
    def session(sid, extra=None):
        head = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-05-01T10:00:00.000Z",
                "cwd": "/p", **(extra or {})}
        msg = {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-05-01T10:00:01.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": f"task {sid}"}]}}
        return "\n".join(json.dumps(x) for x in (head, msg)) + "\n"

    d = tmp_path / "sessions" / "--p--"
    d.mkdir(parents=True)
    (d / "2026-05-01T10-00-00-000Z_aaaa.jsonl").write_text(session("aaaa"))
    (d / "2026-05-01T11-00-00-000Z_bbbb.jsonl").write_text(session("bbbb", {
        "parentSession": str(d / "2026-05-01T10-00-00-000Z_aaaa.jsonl")}))
    Repository.init(tmp_path / "store").close()
    c = Ctx(tmp_path / "store")
    c("import", str(tmp_path / "sessions"))
    parent, child = c.json("sessions")
    assert (parent["title"], child["title"]) == ("task aaaa", "task bbbb")
    assert child["parent"] == parent["id"] and child["kind"] == "fork" and child["depth"] == 1
