"""Files, plan, errors, goal and title projected from real transcript lines (tests/data), and
the same tool calls written through ContextManager projecting the same state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxstore import ContextManager
from ctxstore.importers import import_paths
from ctxstore.objects.frozen import thaw
from ctxstore.repo import Repository
from ctxstore.state.prompts import COMMAND, PROMPT, SKIP, classify_prompt, title_of

DATA = Path(__file__).parent / "data"
CLAUDE = DATA / "claude_code_2.0.42_tools.jsonl"
CODEX = DATA / "codex_0.58_tools.jsonl"
PI = DATA / "pi_v1_tools.jsonl"
JSS = "/Users/dain/workspace/JSSoundRecorder/"
PIMONO = "/Users/badlogic/workspaces/pi-mono/packages/coding-agent/"


def imported(path: Path):
    repo = Repository.memory()
    report = import_paths(repo, [path])
    assert report.warnings == []
    sid = report.sessions[0].session
    return repo, sid, ContextManager(repo, sid, "main").project_state()


def test_claude_code_tools_project_files_plan_errors():
    _repo, _sid, st = imported(CLAUDE)
    assert st.read_paths == (JSS + "README.md",)
    (mod,) = st.files["modified"]  # Write then Edit of one file: listed once, newest change
    assert mod["path"] == JSS + "CLAUDE.md" and mod["tool"] == "Edit" and mod["diff_ref"]
    assert mod["change_summary"].startswith("edit: ")
    denied, failed = st.errors
    assert denied["kind"] == "denied" and denied["error"].startswith("user denied: ")
    assert denied["retried"] is True  # a later Edit of CLAUDE.md succeeded
    assert failed["kind"] == "error" and "String to replace not found" in failed["error"]
    assert failed["retried"] is False and failed["targets"] == (JSS + "CLAUDE.md",)
    steps = st.plan["steps"]  # the newest TodoWrite (line 206 of the source), whole
    assert len(steps) == 7 and steps[0]["text"].startswith("Create RecorderWorklet")
    assert st.plan["current_step_id"] == "6" and st.plan["status"] == "executing"
    # /init is a command, the interrupted marker nothing: the goal is the first real request
    assert st.goal["user_goal"].startswith("I have both Node and Python")
    assert st.tool_effects == {}


def test_codex_tools_project_patch_files_plan_and_exit_code_errors():
    _repo, _sid, st = imported(CODEX)
    (mod,) = st.files["modified"]
    assert mod["path"] == "components/chat/chat-helpers/index.ts" and mod["tool"] == "shell"
    assert mod["change_summary"].startswith("update: +")
    assert [s["status"] for s in st.plan["steps"]] == ["completed", "in_progress", "pending"]
    (err,) = st.errors  # `rg` found nothing: exit code 1
    assert err["name"] == "shell" and err["kind"] == "error" and err["retried"] is False
    assert st.goal["user_goal"].startswith("finish up the users work")  # not environment_context
    assert st.title.startswith("finish up the users work")


def test_pi_tools_project_files_and_failed_edit():
    _repo, _sid, st = imported(PI)
    assert st.read_paths == (PIMONO + "src/tui/tui-renderer.ts",)
    assert st.modified_paths == (PIMONO + "docs/refactor.md",)
    (err,) = st.errors
    assert err["name"] == "edit" and "Could not find the exact text" in err["error"]
    assert PIMONO + "src/core/index.ts" not in st.modified_paths  # the failed edit changed nothing


def _replay(path: Path) -> list[tuple]:
    """The prompts, calls and results of a transcript as (kind, ...) steps, read straight from
    the harness format, to write through ContextManager."""
    steps: list[tuple] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "payload" in rec:  # Codex
            p = rec["payload"]
            if p.get("type") == "message" and p.get("role") == "user":
                steps.append(("prompt", "\n".join(c["text"] for c in p["content"])))
            elif p.get("type") == "function_call":
                steps.append(("call", p["call_id"], p["name"], json.loads(p["arguments"])))
            elif p.get("type") == "function_call_output":
                steps.append(("result", p["call_id"], p["output"], False))
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict) or rec.get("isMeta"):
            continue
        content = msg.get("content")
        if isinstance(content, str):
            steps.append(("prompt", content))
            continue
        for b in content:
            t = b.get("type")
            if t == "text" and msg.get("role") == "user":
                steps.append(("prompt", b["text"]))
            elif t in ("tool_use", "toolCall"):
                steps.append(("call", b["id"], b["name"], b.get("input", b.get("arguments"))))
            elif t == "tool_result":
                out = b["content"] if isinstance(b["content"], str) else \
                    "\n".join(x.get("text", "") for x in b["content"])
                steps.append(("result", b["tool_use_id"], out, bool(b.get("is_error"))))
        if msg.get("role") == "toolResult":
            steps.append(("result", msg["toolCallId"],
                          "\n".join(x.get("text", "") for x in msg["content"]), bool(msg["isError"])))
    return steps


def _comparable(st):
    files = {k: [{x: e[x] for x in ("path", "change_summary", "tool", "op") if x in e}
                 for e in st.files[k]] for k in ("read", "modified")}
    errors = [(e["name"], e.get("kind"), e["retried"], e.get("targets"), e["error"][:200])
              for e in st.errors]
    return thaw(files), thaw(st.plan), errors, st.goal["user_goal"]


@pytest.mark.parametrize("path", [CLAUDE, CODEX, PI], ids=["claude-code", "codex", "pi"])
def test_context_manager_calls_project_like_the_import(path):
    _repo, _sid, imported_state = imported(path)
    cm = ContextManager.start(Repository.memory(), title="replay")
    for step in _replay(path):
        if step[0] == "prompt":
            cm.add_user_message(step[1])
        elif step[0] == "call":
            cm.add_assistant_message(tool_calls=[{"id": step[1], "name": step[2], "args": step[3]}])
        else:
            cm.record_tool_result(step[1], step[2], is_error=step[3])
    written = cm.project_state()
    assert _comparable(written) == _comparable(imported_state)
    assert written.files["modified"] and (written.plan["steps"] or path is PI) and written.errors


@pytest.mark.parametrize("text,kind,shown", [
    ("fix the parser", PROMPT, "fix the parser"),
    ("<command-message>init is analyzing your codebase…</command-message>\n"
     "<command-name>/init</command-name>", COMMAND, "/init"),
    ("<command-name>/review</command-name>\n<command-args>src/app.py</command-args>", COMMAND,
     "/review src/app.py"),
    ("<command-name>/exit</command-name>\n<command-message>exit</command-message>\n"
     "<command-args></command-args>", SKIP, ""),
    ("<local-command-stdout>See ya!</local-command-stdout>", SKIP, ""),
    ("<local-command-caveat>Caveat: The messages below were generated by the user while running "
     "local commands. DO NOT respond to these messages</local-command-caveat>", SKIP, ""),
    ("Caveat: The messages below were generated by the user while running local commands.", SKIP, ""),
    ("[Request interrupted by user for tool use]", SKIP, ""),
    ("<ide_opened_file>The user opened the file /a.js in the IDE.</ide_opened_file>\nmake it faster",
     PROMPT, "make it faster"),
    ("<system-reminder>be brief</system-reminder>", SKIP, ""),
    ("<bash-input>ls</bash-input>", SKIP, ""),
    ("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", SKIP, ""),
    ("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>be nice</INSTRUCTIONS>", SKIP, ""),
    ("<user_instructions>rules</user_instructions>", SKIP, ""),
    ("<turn_aborted>interrupted</turn_aborted>", SKIP, ""),
    ("This session is being continued from a previous conversation that ran out of context.",
     SKIP, ""),
])
def test_prompt_markup(text, kind, shown):
    assert classify_prompt(text) == (kind, shown)


def test_titles_are_one_clean_line():
    assert title_of("  first line\nsecond") == "first line"
    assert title_of("x" * 100).endswith("…") and len(title_of("x" * 100)) == 80
    assert title_of("") == ""


def test_goal_and_task_skip_markup_through_the_manager():
    cm = ContextManager.start(Repository.memory())
    cm.add_user_message("<command-name>/init</command-name>\n<command-args></command-args>")
    st = cm.project_state()
    assert st.goal["user_goal"] == "" and st.goal["current_task"] == "/init"
    cm.add_user_message("<ide_selection>line 3</ide_selection>\nAdd a CLI flag")
    cm.add_user_message("[Request interrupted by user]")
    cm.add_user_message("<local-command-stdout>done</local-command-stdout>")
    st = cm.project_state()
    assert st.goal["user_goal"] == "Add a CLI flag" and st.goal["current_task"] == "Add a CLI flag"


def test_subagent_spawns_are_listed_with_their_outcome():
    cm = ContextManager.start(Repository.memory())
    cm.add_assistant_message(tool_calls=[
        {"id": "t1", "name": "Task", "args": {"description": "Research X", "prompt": "go"}},
        {"id": "t2", "name": "spawn_agent", "args": {"message": "review it"}}])
    cm.record_tool_result("t1", "done")
    st = cm.project_state()
    assert [(a["name"], a["description"], a["status"]) for a in st.subagents] == [
        ("Task", "Research X", "done"), ("spawn_agent", "review it", "running")]
    cm.record_tool_result("t2", "boom", is_error=True)
    assert cm.project_state().subagents[1]["status"] == "error"


def test_a_failed_plan_call_leaves_the_plan_it_would_have_replaced():
    cm = ContextManager.start(Repository.memory())
    todo = [{"content": "one", "status": "in_progress", "activeForm": "One"}]
    cm.record_tool_call("p1", "TodoWrite", {"todos": todo})
    cm.record_tool_result("p1", "Todos have been modified successfully.")
    cm.record_tool_call("p2", "TodoWrite", {"todos": [{"content": "bad"}] * 2})
    assert [s["text"] for s in cm.project_state().plan["steps"]] == ["bad", "bad"]  # no result yet
    cm.record_tool_result("p2", "<tool_use_error>InputValidationError</tool_use_error>", is_error=True)
    st = cm.project_state()
    assert [s["text"] for s in st.plan["steps"]] == ["one"] and st.plan["current_step_id"] == "1"


def _rollout(tmp_path, items):
    lines = [{"timestamp": "2026-08-01T10:00:00.000Z", "type": "session_meta",
              "payload": {"id": "019f0000-0000-7000-8000-000000000001", "cwd": "/w",
                          "cli_version": "0.140.0", "originator": "codex_cli_rs"}}]
    for i, (kind, payload) in enumerate(items, 1):
        lines.append({"timestamp": f"2026-08-01T10:00:{i:02d}.000Z", "type": kind, "payload": payload})
    path = tmp_path / "rollout-2026-08-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_newer_codex_rollouts_custom_apply_patch_exec_command_and_thread_name(tmp_path):
    patch = "*** Begin Patch\n*** Add File: docs/x.md\n+hello\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch"
    path = _rollout(tmp_path, [
        ("response_item", {"type": "message", "role": "developer",
                           "content": [{"type": "input_text", "text": "<permissions instructions>…"}]}),
        ("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>"}]}),
        ("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Add the docs page"}]}),
        ("event_msg", {"type": "thread_name_updated", "thread_id": "t", "thread_name": "Docs page"}),
        ("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": patch}),
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c1",
                           "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA docs/x.md\nM src/a.rs\n"}),
        ("response_item", {"type": "function_call", "call_id": "c2", "name": "exec_command",
                           "arguments": json.dumps({"cmd": "cargo test", "workdir": "/w"})}),
        ("response_item", {"type": "function_call_output", "call_id": "c2",
                           "output": "Chunk ID: 9\nWall time: 3 seconds\nProcess exited with code 101\nOutput:\nerror"}),
        ("response_item", {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch",
                           "input": patch.replace("docs/x.md", "docs/y.md")}),
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c3",
                           "output": "apply_patch verification failed: Failed to find expected lines in src/a.rs"}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": 5000, "cached_input_tokens": 4000, "output_tokens": 300,
            "reasoning_output_tokens": 200, "total_tokens": 5300}}}),
    ])
    repo, _sid, st = imported(path)
    assert st.modified_paths == ("docs/x.md", "src/a.rs")  # the failed patch changed nothing
    assert [(e["name"], e["kind"]) for e in st.errors] == [("exec_command", "error"), ("apply_patch", "error")]
    assert st.errors[0]["targets"] == ("cargo test",)
    assert st.goal["user_goal"] == "Add the docs page" and st.title == "Docs page"


def test_the_files_segment_names_the_newest_files_only():
    from ctxstore.context.state_segments import MAX_FILES_MODIFIED, state_segments

    cm = ContextManager.start(Repository.memory())
    n = MAX_FILES_MODIFIED + 5
    for i in range(n):
        cm.record_tool_call(f"w{i}", "Write", {"file_path": f"/r/f{i}.py", "content": "x"})
        cm.record_tool_result(f"w{i}", "File created successfully")
    st = cm.project_state()
    assert len(st.files["modified"]) == n  # the state keeps every file
    (seg,) = [s for s in state_segments(st) if s.kind == "files"]
    assert "/r/f0.py" not in seg.text and f"/r/f{n - 1}.py" in seg.text and "and 5 more" in seg.text
