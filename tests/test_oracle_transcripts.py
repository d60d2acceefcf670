"""The transcript oracle (tests/oracles/transcripts.py) checked on small hand-written lines per
harness, so the judge of issue 12's acceptance is itself judged."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.oracles import transcripts as oracle
from tests.oracles.transcripts import MAIN, OFF, SIDE, analyze


def write(tmp_path: Path, name: str, records: list[dict]) -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def test_oracle_imports_nothing_from_ctxstore():
    tree = ast.parse(Path(oracle.__file__).read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] in ("ctxstore", "cli")], names


# ---------------------------------------------------------------------------------------------
# Claude Code

CWD = "/home/u/proj"


class CC:
    """Builds Claude Code lines: each new line's parent is the previous one unless given."""

    def __init__(self):
        self.lines: list[dict] = []
        self.n = 0

    def _add(self, typ: str, message: dict | None, parent="prev", **extra) -> str:
        self.n += 1
        uuid = f"u{self.n}"
        if parent == "prev":
            parent = self.lines[-1]["uuid"] if self.lines else None
        rec = {"type": typ, "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "cwd": CWD,
               "isSidechain": False, "timestamp": f"2025-01-01T00:00:{self.n:02d}Z", **extra}
        if message is not None:
            rec["message"] = message
        self.lines.append(rec)
        return uuid

    def user(self, text, **kw) -> str:
        return self._add("user", {"role": "user", "content": text}, **kw)

    def tool_use(self, tid, name, inp, msg_id=None, usage=None, **kw) -> str:
        m = {"id": msg_id or f"msg_{tid}", "role": "assistant", "model": "claude",
             "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]}
        if usage:
            m["usage"] = usage
        return self._add("assistant", m, **kw)

    def result(self, tid, text="ok", is_error=None, **kw) -> str:
        block = {"type": "tool_result", "tool_use_id": tid, "content": text}
        if is_error is not None:
            block["is_error"] = is_error
        return self._add("user", {"role": "user", "content": [block]}, **kw)

    def say(self, text, msg_id=None, usage=None, **kw) -> str:
        m = {"id": msg_id or f"msg_t{self.n}", "role": "assistant", "model": "claude",
             "content": [{"type": "text", "text": text}]}
        if usage:
            m["usage"] = usage
        return self._add("assistant", m, **kw)


def test_claude_files_of_successful_writes_and_reads(tmp_path):
    cc = CC()
    cc.user("Fix the parser")
    cc.tool_use("t1", "Write", {"file_path": f"{CWD}/a.py", "content": "x"})
    cc.result("t1", "File created successfully")
    cc.tool_use("t2", "Edit", {"file_path": f"{CWD}/b.py", "old_string": "a", "new_string": "b"})
    cc.result("t2", "String not found", is_error=True)
    cc.tool_use("t3", "MultiEdit", {"file_path": "c.py", "edits": []})
    cc.result("t3", "ok")
    cc.tool_use("t4", "NotebookEdit", {"notebook_path": f"{CWD}/n.ipynb", "new_source": ""})
    cc.result("t4", "ok")
    cc.tool_use("t5", "Read", {"file_path": f"{CWD}/r.py"})
    cc.result("t5", "1→x")
    cc.tool_use("t6", "Read", {"file_path": f"{CWD}/missing.py"})
    cc.result("t6", "<tool_use_error>File does not exist.</tool_use_error>")
    cc.tool_use("t7", "Bash", {"command": "echo > d.py"})
    cc.result("t7", "")
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    assert t.harness == "claude-code"
    assert t.modified_files() == [f"{CWD}/a.py", f"{CWD}/c.py", f"{CWD}/n.ipynb"]
    assert t.read_files() == [f"{CWD}/r.py"]
    assert {c.id: c.status for c in t.calls}["t6"] == "error"


def test_claude_newest_successful_todowrite_is_the_plan(tmp_path):
    cc = CC()
    cc.user("Plan it")
    todos = [{"content": "one", "status": "completed", "activeForm": "One"},
             {"content": "two", "status": "in_progress", "activeForm": "Two"}]
    cc.tool_use("t1", "TodoWrite", {"todos": todos[:1]})
    cc.result("t1")
    cc.tool_use("t2", "TodoWrite", {"todos": todos})
    cc.result("t2")
    cc.tool_use("t3", "TodoWrite", {"todos": [{"content": "bad", "status": "pending"}]})
    cc.result("t3", "invalid", is_error=True)
    assert analyze(write(tmp_path, "s.jsonl", cc.lines)).plan_steps() == ["one", "two"]


def test_claude_tokens_count_each_message_id_once_with_its_newest_usage(tmp_path):
    cc = CC()
    cc.user("Go")
    early = {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": 1}
    final = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
             "output_tokens": 40}
    cc.say("thinking…", msg_id="msg_A", usage=early)
    cc.tool_use("t1", "Bash", {"command": "ls"}, msg_id="msg_A", usage=final)
    cc.result("t1")
    cc.say("done", msg_id="msg_B", usage={"input_tokens": 5, "cache_read_input_tokens": 1100,
                                          "output_tokens": 7})
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    assert (t.input_tokens, t.output_tokens) == (3 + 100 + 1000 + 5 + 1100, 47)
    assert (t.cache_write_tokens, t.cache_read_tokens) == (100, 2100)


def test_claude_markup_lines_are_not_real_prompts(tmp_path):
    cc = CC()
    cc.user("Caveat: The messages below were generated by the user while running local commands.",
            isMeta=True)
    cc.user("<command-name>/init</command-name>\n<command-message>init is analyzing…</command-message>")
    cc.user("<local-command-stdout>See ya!</local-command-stdout>")
    cc.user("[Request interrupted by user]")
    assert not analyze(write(tmp_path, "a.jsonl", cc.lines)).has_real_prompt
    cc.user("<system-reminder>be brief</system-reminder>\nPlease add a README")
    t = analyze(write(tmp_path, "b.jsonl", cc.lines))
    assert t.first_prompt == "Please add a README"


def test_claude_unanswered_call_followed_by_a_prompt_is_abandoned(tmp_path):
    cc = CC()
    cc.user("Do it")
    cc.tool_use("t1", "Bash", {"command": "sleep 100"})
    cc.user("[Request interrupted by user for tool use]")
    cc.user("Never mind, do something else")
    cc.tool_use("t2", "Bash", {"command": "ls"})
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    calls = {c.id: c for c in t.calls}
    assert calls["t1"].abandoned and calls["t1"].later_prompt and calls["t1"].interrupted
    assert calls["t2"].status is None and not calls["t2"].abandoned  # still pending
    assert [c.id for c in t.unresolved()] == ["t1", "t2"]
    assert [c.id for c in t.abandoned()] == ["t1"]


def test_claude_resume_chain_follows_the_newest_branch_and_crosses_compact_boundaries(tmp_path):
    cc = CC()
    root = cc.user("First request")                                      # u1
    a1 = cc.tool_use("t1", "Write", {"file_path": f"{CWD}/old.py"})       # u2
    cc.result("t1")                                                       # u3 (abandoned branch)
    cc.user("Rewound request", parent=root)                              # u4: rewind fork
    cc.tool_use("t2", "Write", {"file_path": f"{CWD}/new.py"})            # u5
    last = cc.result("t2")                                                # u6
    cc.lines.append({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                     "parentUuid": None, "logicalParentUuid": last, "isSidechain": False})
    cc.user("Summary of earlier", parent="b1", isCompactSummary=True)    # u7
    cc.say("Continuing")                                                  # u8
    side = cc.user("subagent task", parent=None, isSidechain=True)        # u9
    cc.tool_use("t3", "Write", {"file_path": f"{CWD}/side.py"}, parent=side, isSidechain=True)
    cc.result("t3", isSidechain=True)
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    assert t.chain_uuids == {"u1", "u4", "u5", "u6", "u7", "u8"}
    assert a1 not in t.chain_uuids
    lanes = {c.id: c.lane for c in t.calls}
    assert lanes == {"t1": OFF, "t2": MAIN, "t3": SIDE}
    assert t.modified_files() == [f"{CWD}/new.py", f"{CWD}/side.py"]
    assert t.modified_files([MAIN]) == [f"{CWD}/new.py"]
    assert t.first_prompt == "First request"


def test_claude_parent_written_after_its_child_still_links(tmp_path):
    cc = CC()
    cc.user("Go")                                                         # u1
    cc.lines.append({"type": "attachment", "uuid": "late", "parentUuid": "ahead", "isSidechain": False})
    cc.lines.append({"type": "attachment", "uuid": "ahead", "parentUuid": "u1", "isSidechain": False})
    cc.say("ok", parent="late")                                           # u2
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    assert t.chain_uuids == {"u1", "u2"}


def test_claude_parallel_tool_uses_of_a_chain_message_count_as_main(tmp_path):
    cc = CC()
    cc.user("Write both")                                                 # u1
    a = cc.tool_use("t1", "Write", {"file_path": f"{CWD}/x.py"}, msg_id="m1")   # u2
    b = cc.tool_use("t2", "Write", {"file_path": f"{CWD}/y.py"}, msg_id="m1")   # u3 child of u2
    cc.result("t2", parent=b)                                             # u4
    r1 = cc.result("t1", parent=a)                                        # u5: sibling of u3
    cc.say("both written", parent=r1)                                     # u6
    t = analyze(write(tmp_path, "s.jsonl", cc.lines))
    assert "u3" not in t.chain_uuids                                      # the walk passes it by
    assert sorted(t.modified_files([MAIN])) == [f"{CWD}/x.py", f"{CWD}/y.py"]


# ---------------------------------------------------------------------------------------------
# Codex


def cx(typ: str, payload: dict) -> dict:
    return {"timestamp": "2025-11-17T00:00:00Z", "type": typ, "payload": payload}


def codex_call(cid, name, args, output, custom=False) -> list[dict]:
    if custom:
        return [cx("response_item", {"type": "custom_tool_call", "call_id": cid, "name": name,
                                     "input": args}),
                cx("response_item", {"type": "custom_tool_call_output", "call_id": cid,
                                     "output": output})]
    return [cx("response_item", {"type": "function_call", "call_id": cid, "name": name,
                                 "arguments": json.dumps(args)}),
            cx("response_item", {"type": "function_call_output", "call_id": cid, "output": output})]


def exec_out(code: int, text: str = "") -> str:
    return json.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.1}})


PATCH = ("*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: src/app.py\n*** Move to: "
         "src/main.py\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch")


def codex_head(cwd="/w/repo") -> list[dict]:
    return [cx("session_meta", {"id": "019a", "cwd": cwd, "cli_version": "0.58.0"}),
            cx("response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>\n  <cwd>/w/repo</cwd>\n"
                                                "</environment_context>"}]}),
            cx("response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "# AGENTS.md instructions for /w/repo\n\nbe nice"}]})]


def test_codex_apply_patch_in_all_three_forms(tmp_path):
    lines = codex_head()
    lines += codex_call("c1", "apply_patch", PATCH, "Success. Updated the following files:\nA new.txt",
                        custom=True)
    lines += codex_call("c2", "shell", {"command": ["apply_patch", PATCH.replace("new.txt", "n2.txt")]},
                        exec_out(0, "Success."))
    heredoc = "apply_patch <<'PATCH'\n" + PATCH.replace("new.txt", "n3.txt") + "\nPATCH\n"
    lines += codex_call("c3", "shell", {"command": ["bash", "-lc", heredoc], "workdir": "/w/other"},
                        exec_out(0, "Success. Updated the following files:\nA n3.txt"))
    lines += codex_call("c4", "shell", {"command": ["apply_patch", PATCH.replace("new.txt", "bad.txt")]},
                        exec_out(1, "apply_patch verification failed"))
    lines += codex_call("c5", "apply_patch", PATCH.replace("new.txt", "bad2.txt"),
                        "apply_patch verification failed: context not found", custom=True)
    t = analyze(write(tmp_path, "rollout.jsonl", lines))
    assert t.harness == "codex"
    mod = t.modified_files()
    for f in ("/w/repo/new.txt", "/w/repo/src/app.py", "/w/repo/src/main.py", "/w/repo/old.txt",
              "/w/repo/n2.txt", "/w/other/n3.txt"):
        assert f in mod
    assert not [f for f in mod if "bad" in f]
    assert t.read_files() == []
    assert not t.has_real_prompt  # environment context and AGENTS.md are not prompts


def test_codex_exit_codes_decide_success():
    assert oracle.codex_output_ok(exec_out(0))
    assert not oracle.codex_output_ok(exec_out(2))
    assert oracle.codex_output_ok("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok")
    assert not oracle.codex_output_ok("Exit code: 1\nWall time: 0.1 seconds\nOutput:\nboom")
    assert not oracle.codex_output_ok("Chunk ID: 1\nProcess exited with code 127\nOutput:\n")
    assert oracle.codex_output_ok("Success. Updated the following files:\nM a", patch=True)
    assert not oracle.codex_output_ok("error: no such file", patch=True)
    assert oracle.codex_output_ok("Plan updated")


def test_codex_plan_tokens_and_prompt(tmp_path):
    lines = codex_head()
    lines.append(cx("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "finish the LM Studio work"}]}))
    plan1 = {"plan": [{"step": "inspect", "status": "in_progress"}]}
    plan2 = {"plan": [{"step": "inspect", "status": "completed"},
                      {"step": "implement", "status": "in_progress"}]}
    lines += codex_call("p1", "update_plan", plan1, "Plan updated")
    lines.append(cx("event_msg", {"type": "token_count", "info": {"total_token_usage": {
        "input_tokens": 100, "cached_input_tokens": 80, "output_tokens": 10, "total_tokens": 110}}}))
    lines += codex_call("p2", "update_plan", plan2, "Plan updated")
    lines.append(cx("event_msg", {"type": "token_count", "info": {"total_token_usage": {
        "input_tokens": 250, "cached_input_tokens": 200, "output_tokens": 30, "total_tokens": 280}}}))
    lines.append(cx("event_msg", {"type": "token_count", "info": None}))
    t = analyze(write(tmp_path, "rollout.jsonl", lines))
    assert t.plan_steps() == ["inspect", "implement"]
    assert (t.input_tokens, t.output_tokens, t.cache_read_tokens) == (250, 30, 200)
    assert t.first_prompt == "finish the LM Studio work"


def test_codex_turn_aborted_abandons_unanswered_calls(tmp_path):
    lines = codex_head()
    lines.append(cx("response_item", {"type": "function_call", "call_id": "c1", "name": "shell",
                                      "arguments": json.dumps({"command": ["sleep", "9"]})}))
    lines.append(cx("event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
    lines.append(cx("response_item", {"type": "function_call", "call_id": "c2", "name": "shell",
                                      "arguments": json.dumps({"command": ["ls"]})}))
    t = analyze(write(tmp_path, "rollout.jsonl", lines))
    assert [c.id for c in t.unresolved()] == ["c1", "c2"]
    assert [c.id for c in t.abandoned()] == ["c1"]


# ---------------------------------------------------------------------------------------------
# pi


def pi_msg(message: dict, **ids) -> dict:
    return {"type": "message", "timestamp": "2025-12-01T00:00:00Z", **ids, "message": message}


def pi_assistant(calls: list[tuple[str, str, dict]], usage=None, stop="toolUse", **ids) -> dict:
    content = [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return pi_msg({"role": "assistant", "content": content, "stopReason": stop,
                   "usage": usage or {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 20,
                                      "totalTokens": 135, "cost": {"total": 0.01}}}, **ids)


def pi_result(cid: str, name: str, is_error=False, **ids) -> dict:
    return pi_msg({"role": "toolResult", "toolCallId": cid, "toolName": name, "isError": is_error,
                   "content": [{"type": "text", "text": "ok"}]}, **ids)


def pi_user(text: str, **ids) -> dict:
    return pi_msg({"role": "user", "content": [{"type": "text", "text": text}]}, **ids)


def test_pi_v1_files_tokens_and_aborted_calls(tmp_path):
    lines = [{"type": "session", "id": "p1", "cwd": "/Users/me/proj", "timestamp": "t"},
             pi_user("read @src/a.ts and fix it"),
             pi_assistant([("r1", "read", {"path": "src/a.ts"}), ("w1", "write", {"path": "/tmp/x.ts",
                                                                                  "content": ""})]),
             pi_result("r1", "read"), pi_result("w1", "write"),
             pi_assistant([("e1", "edit", {"path": "src/b.ts", "oldText": "a", "newText": "b"})]),
             pi_result("e1", "edit", is_error=True),
             pi_assistant([("e2", "edit", {"path": "src/c.ts", "oldText": "a", "newText": "b"})],
                          stop="aborted"),
             pi_user("stop, use another approach"),
             pi_assistant([("b1", "bash", {"command": "ls"})])]
    t = analyze(write(tmp_path, "pi.jsonl", lines))
    assert t.harness == "pi"
    assert t.modified_files() == ["/tmp/x.ts"]
    assert t.read_files() == ["/Users/me/proj/src/a.ts"]
    assert (t.input_tokens, t.output_tokens) == (4 * 130, 4 * 5)
    calls = {c.id: c for c in t.calls}
    assert calls["e2"].abandoned and calls["e2"].aborted_message
    assert calls["b1"].status is None and not calls["b1"].abandoned
    assert t.first_prompt == "read @src/a.ts and fix it"


def test_pi_v3_counts_only_the_path_to_the_newest_entry(tmp_path):
    lines = [{"type": "session", "version": 3, "id": "p3", "cwd": "/w", "timestamp": "t"},
             pi_user("start", id="a1", parentId=None),
             pi_assistant([("w1", "write", {"path": "old.ts", "content": ""})], id="a2", parentId="a1"),
             pi_result("w1", "write", id="a3", parentId="a2"),
             pi_assistant([("w2", "write", {"path": "new.ts", "content": ""})], id="b2", parentId="a1"),
             pi_result("w2", "write", id="b3", parentId="b2")]
    t = analyze(write(tmp_path, "pi.jsonl", lines))
    assert t.modified_files() == ["/w/new.ts"]
    # the whole session's cost counts the abandoned branch too; the branch's share does not
    assert (t.input_tokens, t.output_tokens) == (260, 10)
    assert (t.branch_input_tokens, t.branch_output_tokens) == (130, 5)


# ---------------------------------------------------------------------------------------------
# helpers


@pytest.mark.parametrize("text, markup", [
    ("<command-message>init is analyzing…</command-message>", True),
    ("<local-command-stdout>See ya!</local-command-stdout>", True),
    ("[Request interrupted by user]", True),
    ("Add a GitHub action", False),
    ("Use a <div> here", False),
])
def test_has_markup(text, markup):
    assert oracle.has_markup(text) is markup


def test_patch_files_and_same_file():
    assert oracle.patch_files(PATCH) == ["new.txt", "src/app.py", "old.txt", "src/main.py"]
    assert oracle.same_file("/w/repo/src/a.py", "src/a.py")
    assert oracle.same_file("./src/a.py", "/w/repo/src/a.py")
    assert not oracle.same_file("/w/repo/src/a.py", "a.py/x")
    assert not oracle.same_file("/w/repo/src/ba.py", "a.py")
    assert oracle.normalize_path("a.py", "rel/cwd") == "a.py"  # anonymised relative cwd: kept


def test_detect_rejects_other_jsonl(tmp_path):
    with pytest.raises(ValueError):
        analyze(write(tmp_path, "x.jsonl", [{"hello": 1}]))


# ---------------------------------------------------------------------------------------------
# Unseen transcripts: odd but valid JSON must never crash the oracle

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(
    ["", "x", "u1", "u2", "tool_use", "tool_result", "text", "toolCall", "user", "assistant",
     "Write", "apply_patch", "shell", "update_plan", "TodoWrite", "message", "function_call",
     "function_call_output", "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"]))
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["type", "id", "name", "input", "arguments", "content",
                                     "message", "payload", "role", "uuid", "parentUuid",
                                     "call_id", "output", "usage", "is_error", "toolCallId",
                                     "isError", "todos", "plan", "command", "path", "info"]),
                    inner, max_size=5)), max_leaves=12)


@pytest.mark.parametrize("head", [
    {"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
    {"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}},
    {"type": "session", "id": "p", "cwd": "/w"},
])
@given(body=st.lists(st.dictionaries(st.sampled_from(["type", "message", "payload", "uuid",
                                                       "parentUuid", "isSidechain", "id",
                                                       "parentId", "cwd"]), _json, max_size=5),
                     max_size=6))
def test_odd_records_never_crash_the_oracle(tmp_path_factory, head, body):
    """Odd but valid JSON lines after a harness's first line: the oracle still judges the file
    as that harness's, and every answer it gives is consistent with its own calls and lines."""
    p = tmp_path_factory.mktemp("odd") / "s.jsonl"
    known = _KNOWN_WRITE[head["type"]]  # a successful write after the odd lines: ids of its own
    p.write_text("".join(json.dumps(r) + "\n" for r in [head, *body, *known]))
    t = analyze(p)
    assert t.harness == _HARNESS_OF[head["type"]] and t.lines == 1 + len(body) + len(known)
    assert [f for f in t.modified_files() if f.endswith("/kept.txt")], t.calls
    for c in t.calls:
        assert 1 <= c.line <= t.lines and c.lane in (MAIN, SIDE, OFF)
        assert c.status in ("ok", "error", None)
        assert c.result_line is None or c.line <= c.result_line <= t.lines
    assert all(1 <= line <= t.lines and isinstance(text, str) for line, _g, text in t.prompts)
    counted = [c for c in t.calls if c.lane != OFF]
    ok = [c for c in counted if c.status == "ok"]
    assert set(t.modified_files()) == {oracle.normalize_path(w, c.cwd) for c in ok
                                       for w in c.writes}
    assert set(t.read_files()) == {oracle.normalize_path(r, c.cwd) for c in ok for r in c.reads}
    unresolved = t.unresolved()
    assert [c for c in counted if c.status is None] == unresolved
    assert all(c in unresolved for c in t.abandoned())
    steps = t.plan_steps()
    assert steps is None or all(isinstance(s, str) for s in steps)
    assert t.has_real_prompt == (t.first_prompt is not None)


_HARNESS_OF = {"user": "claude-code", "session_meta": "codex", "session": "pi"}
_KNOWN_WRITE = {
    "user": [{"type": "assistant", "uuid": "kw-call", "parentUuid": "u0", "message": {
                 "id": "msg_kw", "role": "assistant", "content": [
                     {"type": "tool_use", "id": "kw", "name": "Write",
                      "input": {"file_path": "/w/kept.txt", "content": "x"}}]}},
             {"type": "user", "uuid": "kw-result", "parentUuid": "kw-call", "message": {
                 "role": "user", "content": [{"type": "tool_result", "tool_use_id": "kw",
                                              "content": "File created successfully"}]}}],
    "session_meta": codex_call("kw", "apply_patch",
                               "*** Begin Patch\n*** Add File: kept.txt\n+x\n*** End Patch",
                               "Success. Updated the following files:\nA kept.txt", custom=True),
    "session": [pi_assistant([("kw", "write", {"path": "/w/kept.txt", "content": "x"})],
                             id="kw-call", parentId=None),
                pi_result("kw", "write", id="kw-result", parentId="kw-call")],
}
