"""Reading history as a user: ctx show renders messages, ctx log filters and summarises tool
calls, ctx diff --stat and readable state lines, ctx grep finds what a session said or did."""

from __future__ import annotations

import json

import pytest

from ctxstore import ContextManager
from ctxstore.repo import Repository

from .clitools import Ctx


@pytest.fixture
def ctx(tmp_path):
    """A session written through the harness API: a prompt, a model turn with thinking and a
    Bash call, a big result (an artifact), an Edit call, and two bookkeeping events."""
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    repo = Repository.open(tmp_path / ".ctx")
    try:
        cm = ContextManager.start(repo, title="parser", goal="make the parser test pass")
        cm.add_user_message("The parser test fails, please fix it")
        cm.add_assistant_message("Running the tests.", tool_calls=[
            {"id": "c1", "name": "Bash", "args": {"command": "pytest -x\necho done"}}])
        cm.record_tool_result("c1", "E   AssertionError: whitespace token\n" * 400)
        cm.add_assistant_message("", tool_calls=[
            {"id": "c2", "name": "Edit", "args": {"file_path": "src/parser.py",
                                                  "old_string": "a", "new_string": "b"}}])
        cm.record_tool_result("c2", "ok")
    finally:
        repo.close()
    sid = c.json("sessions")[0]["id"]
    c("checkout", sid[:10])
    c("append", "claude-code:progress", "--actor", "system", "--payload", '{"hook": "x"}')
    c("append", "codex:turn_context", "--actor", "system", "--payload", '{"cwd": "/w"}')
    return c


def test_oneline_summarises_tool_calls_with_arguments(ctx):
    out = ctx("log", "--oneline").stdout
    assert "ToolCallRequested Bash: pytest -x …" in out
    assert "ToolCallRequested Edit src/parser.py" in out
    assert "ToolCallFinished Bash → E AssertionError: whitespace token" in out


def test_bookkeeping_hidden_by_default(ctx):
    types = [line.split()[1] for line in ctx("log", "--oneline").stdout.splitlines()]
    assert "claude-code:progress" not in types and "codex:turn_context" not in types
    shown = ctx("log", "--oneline", "--bookkeeping").stdout
    assert "claude-code:progress" in shown and "codex:turn_context" in shown
    assert "claude-code:progress" in ctx("log", "--oneline", "--type", "claude-code:*").stdout
    assert len(ctx.json("log", "--bookkeeping")) == len(ctx.json("log")) + 2


def test_log_filters(ctx):
    assert {e["type"] for e in ctx.json("log", "--type", "ToolCall*")} == \
        {"ToolCallRequested", "ToolCallFinished"}
    assert {e["actor"] for e in ctx.json("log", "--actor", "user")} == {"user"}
    grep = ctx.json("log", "--grep", "PARSER\\.py", "-i")
    assert [e["type"] for e in grep] == ["ToolCallRequested"]
    assert ctx.json("log", "--since", "2000-01-01", "--until", "2999-01-01")
    assert ctx.json("log", "--since", "2999-01-01") == []
    assert ctx.json("log", "--until", "1 day ago") == []
    newest_first = ctx.json("log", "-n", "3")
    oldest_first = ctx.json("log", "-n", "3", "--reverse")
    assert [e["id"] for e in oldest_first] == [e["id"] for e in reversed(newest_first)]
    assert len(ctx.json("log", "--type", "ToolCallRequested", "-n", "1")) == 1


def test_log_filter_errors(ctx):
    assert "cannot read time" in ctx.fails(10, "log", "--since", "soon")
    res = ctx("log", "--grep", "(", code=2)
    assert "not a regular expression" in res.stderr
    ctx("log", "--graph", "--reverse", code=2)


def test_filtered_graph_keeps_forks(ctx):
    ctx("fork", "alt", "--at", "HEAD~3")
    ctx("append", "FileRead", "--actor", "tool", "--payload", '{"path": "src/x.py"}')
    out = ctx("log", "--graph", "--all", "--type", "FileRead", "--type", "UserPromptSubmitted")
    lines = out.stdout.splitlines()
    assert any("FileRead" in ln for ln in lines) and any("UserPromptSubmitted" in ln for ln in lines)
    assert not any("ToolCall" in ln for ln in lines)
    ctx("append", "claude-code:progress", "--actor", "system", "--payload", "{}")
    out = ctx("log", "--graph", "--all").stdout  # alt's tip is hidden bookkeeping now
    assert "claude-code:progress" not in out
    assert "(HEAD -> alt) FileRead" in out  # its label moves to the nearest shown event


def test_show_renders_message_not_json(ctx):
    calls = ctx.json("log", "--type", "ToolCallRequested")
    bash = next(e for e in calls if e["payload"]["name"] == "Bash")
    out = ctx("show", bash["id"][:12]).stdout
    assert "tool call Bash: pytest -x" in out and "command:" in out
    assert "pytest -x\n" in out.replace("        ", "")  # the script as lines, not "\\n"
    assert "\\n" not in out and '"payload"' not in out
    result = ctx.json("log", "--type", "ToolCallFinished")[-1]
    shown = ctx("show", result["id"][:12]).stdout
    assert "Bash result" in shown and "AssertionError: whitespace token" in shown
    assert "more line(s)" in shown  # a preview, not 400 lines
    assert "artifact " in shown and "ctx cat " in shown
    assert ctx.json("show", result["id"])["artifacts"]


def test_show_thinking_and_text(ctx):
    prompt = ctx.json("log", "--type", "UserPromptSubmitted")[0]
    out = ctx("show", prompt["id"][:12]).stdout
    assert "The parser test fails, please fix it" in out and out.startswith("event ")


def test_show_source_provenance_only_with_verbose(ctx, tmp_path):
    line = {"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None,
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work",
            "message": {"role": "user", "content": "hello from claude"}}
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(line) + "\n")
    ctx("import", str(f))
    eid = ctx.json("grep", "--all", "hello from claude")[0]["event"]
    plain = ctx("show", eid).stdout
    assert "hello from claude" in plain and "t.jsonl" not in plain and "sessionId" not in plain
    verbose = ctx("show", eid, "-v").stdout
    assert "Source: claude-code t.jsonl:1" in verbose and "sessionId: s1" in verbose
    raw = ctx("show", eid, "--raw").stdout
    assert '"source"' in raw


def test_diff_stat_and_readable_state(ctx):
    ctx("fork", "alt", "--at", "HEAD~4")
    ctx("append", "StateUpdated", "--payload",
        json.dumps({"patch": {"facts_add": ["the lexer drops tabs"]}}))
    out = ctx("diff", "main", "alt").stdout
    assert "facts: + the lexer drops tabs" in out
    assert '{"added"' not in out
    stat = ctx("diff", "--stat", "main", "alt").stdout
    assert "only in alt (1 event):" in stat and "+     1 StateUpdated" in stat
    assert "facts: +1" in stat
    assert ctx.json("diff", "main", "alt")["state"]["facts"]["added"]


def test_grep_messages_calls_results_and_artifacts(ctx):
    hits = ctx.json("grep", "AssertionError")
    wheres = {h["where"] for h in hits}
    assert any(w.startswith("artifact") or w == "result" for w in wheres)
    eid = hits[0]["event"]
    assert ctx.json("show", eid[:10])["id"] == eid  # ids a user can open
    assert {h["where"] for h in ctx.json("grep", "src/parser")} >= {"tool call Edit"}
    assert ctx.json("grep", "please fix")[0]["where"] == "text"
    out = ctx("grep", "-l", "pytest").stdout.split()
    assert out and all(len(x) == 10 for x in out)
    assert ctx("grep", "-F", "pytest -x").stdout


def test_grep_no_match_exits_1_and_bad_regex_2(ctx):
    res = ctx("grep", "no-such-text-anywhere", code=1)
    assert res.stdout == ""
    ctx("grep", "(", code=2)
    ctx("grep", "x", "HEAD", "--all", code=2)


def test_grep_all_sessions(ctx):
    ctx("new", "--title", "other")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "zebra"}')
    ctx("checkout", "HEAD")
    hits = ctx.json("grep", "--all", "AssertionError|zebra")
    assert len({h["session"] for h in hits}) == 2
    assert "[" in ctx("grep", "--all", "zebra").stdout  # session shown beside the event


def test_help_of_every_command_has_examples():
    from ctxstore.cli.docgen import _walk
    from ctxstore.cli.main import cli

    root = cli.make_context("ctx", [], resilient_parsing=True)
    missing = [name for name, cmd, sub in _walk(cli, root, "ctx")
               if "Examples:" not in cmd.get_help(sub)]
    assert not missing, f"--help without an Examples section: {missing}"


def test_show_artifact_previews_its_content(ctx):
    result = ctx.json("log", "--type", "ToolCallFinished")[-1]
    [aid] = ctx.json("show", result["id"])["artifacts"]
    out = ctx("show", aid[:12]).stdout
    assert out.startswith(f"artifact {aid}") and "kind: tool_output" in out
    assert out.count("AssertionError: whitespace token") >= 20
    assert f"ctx cat {aid[:12]}" in out and "14,800 bytes in all" in out


def test_tool_call_summaries_of_each_harness():
    from ctxstore.cli.render import _unwrap_output, tool_call_summary

    assert tool_call_summary("Bash", {"command": "pytest -x", "description": "run"}) == \
        "Bash: pytest -x"
    assert tool_call_summary("Edit", {"file_path": "/w/src/parser.py", "old_string": "a"},
                             cwd="/w") == "Edit src/parser.py"
    assert tool_call_summary("shell", {"command": ["bash", "-lc", "rg -n foo"]}) == "shell: rg -n foo"
    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a/b.ts\n@@\n-x\n+y\n"
    assert tool_call_summary("shell", {"command": ["bash", "-lc", patch]}) == \
        "shell: apply_patch a/b.ts"
    assert tool_call_summary("read", {"path": "/w/x.py", "offset": 3}, cwd="/w/") == "read x.py"
    assert tool_call_summary("Grep", {"pattern": "TODO", "path": "src"}) == "Grep TODO in src"
    assert tool_call_summary("Glob", {"pattern": "**/*.py"}) == "Glob **/*.py"
    assert tool_call_summary("TodoWrite", {"todos": [1, 2, 3]}) == "TodoWrite (todos: 3 items)"
    assert tool_call_summary("noargs", {}) == "noargs"
    assert len(tool_call_summary("Bash", {"command": "x" * 500}, width=40)) == 40
    assert _unwrap_output('{"output":"a.txt\\n","metadata":{"exit_code":0}}') == "a.txt\n"
    assert _unwrap_output('{"output":"","metadata":{"exit_code":1}}') == "(no output, exit 1)"
    assert _unwrap_output('{"output":"line one\\nline tw') == "line one\nline tw"
    assert _unwrap_output("plain") == "plain"


def test_show_long_call_args_whole_and_list_scripts_indented(ctx, tmp_path):
    # Codex's shell call is a list ["bash", "-lc", SCRIPT]: an imported event keeps args cut at
    # 1,000 characters (args_truncated); `ctx show` cut the patch mid-word with no mark and
    # printed its lines flush left. It shows the message's whole args, every line indented.
    script = "apply_patch <<'PATCH'\n" + "".join(f"+line {i:04d}\n" for i in range(150)) + "PATCH"
    lines = [
        {"type": "user", "sessionId": "s2", "uuid": "u1", "parentUuid": None,
         "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work",
         "message": {"role": "user", "content": "patch it"}},
        {"type": "assistant", "sessionId": "s2", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-01-01T00:00:01.000Z", "cwd": "/work",
         "message": {"id": "m1", "role": "assistant", "model": "claude", "content": [
             {"type": "tool_use", "id": "t1", "name": "shell",
              "input": {"command": ["bash", "-lc", script]}}]}},
    ]
    f = tmp_path / "long.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ctx("import", str(f))
    sid = next(s["id"] for s in ctx.json("sessions") if s["title"] == "patch it")
    ctx("checkout", sid)
    call = ctx.json("log", "--type", "ToolCallRequested")[0]
    assert call["payload"].get("args_truncated") is True  # the case this test is about
    out = ctx("show", call["id"][:12]).stdout
    assert "+line 0149" in out and out.rstrip().endswith("PATCH")  # whole, not cut at 1,000
    body = out[out.index("- apply_patch <<'PATCH'"):].splitlines()
    assert all(ln.startswith("          ") for ln in body[1:]), body[:3]  # under the "- "
