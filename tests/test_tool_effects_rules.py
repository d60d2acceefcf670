"""What a tool call does to the projected state, rule by rule (ctxstore/state/effects.py and
the harness descriptions of ctxstore/state/tools.py): which file a call read or wrote and
when that counts, what the plan becomes, which failure a later call retried, what the goal
and title say. Each expectation is written out by hand from the harnesses' documented tool
schemas, not computed by the code under test (the group `tool-effects` of tests/mutation.py).
"""

from __future__ import annotations

import pytest

from ctxstore.objects import Event, Message
from ctxstore.objects.frozen import thaw
from ctxstore.objects.message import ToolCallBlock, ToolResultBlock
from ctxstore.state import project
from ctxstore.state.effects import GOAL_TEXT_LIMIT
from ctxstore.state.tools import (
    DENIED,
    ERROR,
    OK,
    Effect,
    call_effects,
    command_outcome,
    default_outcome,
    exit_code,
    is_ambiguous,
    is_denial,
    patch_files,
    register_tool,
    registered_tools,
    tool_spec,
    unregister_tool,
)


def ev(type_, payload=None, **causality):
    return Event(type_, payload=payload or {}, causality=causality)


def run(*events, messages=None):
    pairs = [(f"e{i}", e) for i, e in enumerate(events, 1)]
    return project(pairs, **({"messages": messages} if messages else {}))


def call(tcid, name, args=None, **causality):
    payload = {"tool_call_id": tcid, "name": name}
    if args is not None:
        payload["args"] = args
    return ev("ToolCallRequested", payload, **causality)


def ok(tcid, preview="", message_id=None, **payload):
    cause = {"message_id": message_id} if message_id else {}
    return ev("ToolCallFinished", {"tool_call_id": tcid, "preview": preview, **payload}, **cause)


def failed(tcid, error="", **payload):
    return ev("ToolCallFailed", {"tool_call_id": tcid, "error": error, **payload})


# ---------------------------------------------------------------------------------------------
# files: a call's file effects count only once its result says it succeeded


def test_a_successful_write_lists_the_file_with_its_tool_change_and_message():
    st = run(call("w1", "Write", {"file_path": "/r/a.py", "content": "x\ny\n"}, message_id="M1"),
             ok("w1", "File created successfully"))
    assert thaw(st.files["modified"]) == [{"path": "/r/a.py", "change_summary": "write: 2 lines",
                                           "event": "e2", "tool": "Write", "diff_ref": "M1",
                                           "op": "write"}]
    assert st.files["read"] == () and st.tool_effects == {}


def test_a_successful_read_lists_the_path_and_the_result_event():
    st = run(call("r1", "Read", {"file_path": "/r/a.py"}), ok("r1", "1\tx"))
    assert thaw(st.files["read"]) == [{"path": "/r/a.py", "event": "e2"}]
    assert st.files["modified"] == ()


def test_a_call_without_a_message_has_no_diff_ref():
    st = run(call("e1", "Edit", {"file_path": "f", "old_string": "a", "new_string": "b"}), ok("e1"))
    assert "diff_ref" not in st.files["modified"][0]


def test_file_effects_wait_for_the_result_and_a_failure_drops_them():
    pending = run(call("w1", "Write", {"file_path": "/r/a.py", "content": "x"}))
    assert pending.modified_paths == ()
    assert thaw(pending.tool_effects["w1"]["effects"]) == [
        {"kind": "modify", "path": "/r/a.py", "summary": "write: 1 lines", "op": "write"}]
    st = run(call("w1", "Write", {"file_path": "/r/a.py", "content": "x"}),
             failed("w1", "EACCES"))
    assert st.modified_paths == () and st.tool_effects == {}


def test_a_file_written_twice_is_listed_once_with_its_newest_change_last():
    st = run(call("a", "Write", {"file_path": "one", "content": "x"}), ok("a"),
             call("b", "Write", {"file_path": "two", "content": "x"}), ok("b"),
             call("c", "Edit", {"file_path": "one", "old_string": "x", "new_string": "y\nz"}),
             ok("c"))
    assert st.modified_paths == ("two", "one")
    assert st.files["modified"][-1]["change_summary"] == "edit: -1 +2 lines"
    assert st.files["modified"][-1]["tool"] == "Edit" and st.files["modified"][-1]["event"] == "e6"


def test_a_codex_patch_lists_every_file_it_touched_with_its_operation():
    patch = ("*** Begin Patch\n*** Add File: n.md\n+a\n+b\n*** Delete File: gone.txt\n"
             "*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch")
    st = run(call("p", "apply_patch", {"input": patch}), ok("p", "Success. Updated the following files:"))
    assert [(f["path"], f["op"], f["change_summary"]) for f in st.files["modified"]] == [
        ("n.md", "add", "add: +2 -0 lines"), ("gone.txt", "delete", "delete: +0 -0 lines"),
        ("b.py", "move", "move: +1 -1 lines")]
    st = run(call("p", "apply_patch", {"input": patch}), ok("p", "error: no such file a.py"))
    assert st.modified_paths == ()  # apply_patch reports "Success." when it wrote anything


def test_a_patch_result_is_read_from_the_whole_message_not_the_preview():
    patch = "*** Begin Patch\n*** Add File: n.md\n+a\n*** End Patch"
    whole = Message("tool", (ToolResultBlock(tool_call_id="p", text="Success. Updated n.md"),))
    st = run(call("p", "apply_patch", {"input": patch}),
             ok("p", "Succ", message_id="R1"), messages={"R1": whole}.get)
    assert st.modified_paths == ("n.md",)
    preview_only = Message("tool", (ToolResultBlock(tool_call_id="p", preview="Success. (cut)"),))
    st = run(call("p", "apply_patch", {"input": patch}),
             ok("p", "nothing", message_id="R1"), messages={"R1": preview_only}.get)
    assert st.modified_paths == ("n.md",)
    st = run(call("p", "apply_patch", {"input": patch}), ok("p", "Success.", message_id="R9"),
             messages={"R1": whole}.get)
    assert st.modified_paths == ("n.md",)  # the message is gone: the preview decides


def test_a_failed_codex_command_is_an_error_even_without_is_error():
    st = run(call("c", "shell", {"command": ["bash", "-lc", "cargo test"]}),
             ok("c", "Exit code: 101\nOutput:\nfailed"))
    (err,) = st.errors
    assert (err["name"], err["kind"], err["targets"], err["event"]) == (
        "shell", "error", ("bash -lc cargo test",), "e2")
    assert err["error"] == "Exit code: 101 Output: failed" and err["retried"] is False


def test_truncated_arguments_are_read_from_the_calls_message():
    whole = {"file_path": "/r/long.py", "content": "a\nb\nc\n"}
    msg = Message("assistant", (ToolCallBlock(tool_call_id="other", name="Write",
                                              args={"file_path": "/r/wrong.py"}),
                                ToolCallBlock(tool_call_id="w1", name="Write", args=whole)))
    st = run(call("w1", "Write", {"file_path": "/r/lo"}, message_id="M1"), ok("w1"),
             messages={"M1": msg}.get)
    assert st.modified_paths == ("/r/lo",)  # not marked truncated: the preview is the args
    st = run(ev("ToolCallRequested", {"tool_call_id": "w1", "name": "Write", "args_truncated": True,
                                      "args": {"file_path": "/r/lo"}}, message_id="M1"),
             ok("w1"), messages={"M1": msg}.get)
    assert st.modified_paths == ("/r/long.py",)
    assert st.files["modified"][0]["change_summary"] == "write: 3 lines"


def test_an_ambiguous_tool_name_is_read_with_its_messages_harness():
    # pi and a harness of ours both describe `read`: the message's provenance picks
    register_tool("myharness", "read", lambda a: (Effect("read", "own:" + a["path"]),))
    try:
        assert is_ambiguous("read") and not is_ambiguous("ExitPlanMode")  # Read: Cursor too
        for prov, path in (({"harness": "myharness"}, "own:x"), ({"source": "myharness"}, "own:x"),
                           ({"harness": "pi"}, "x"), ({"source": 3}, "x")):
            msg = Message("assistant", (), provenance=prov)
            st = run(call("c", "read", {"path": "x"}, message_id="M"), ok("c"),
                     messages={"M": msg}.get)
            assert st.read_paths == (path,), prov
            assert st.tool_effects == {}
    finally:
        unregister_tool("myharness", "read")


def test_the_result_names_its_call_when_the_request_is_unknown():
    st = run(ok("x", "ok", name="Read"))
    assert st.read_paths == () and st.errors == ()
    st = run(failed("x", "The user doesn't want to proceed with this tool use.", name="Bash"))
    assert [(e["name"], e["kind"]) for e in st.errors] == [("Bash", "denied")]


# ---------------------------------------------------------------------------------------------
# errors and retries


def test_a_retry_marks_only_earlier_failures_of_the_same_tool_on_the_same_file():
    edit = {"old_string": "a", "new_string": "b"}
    st = run(call("1", "Edit", {"file_path": "a.py", **edit}), failed("1", "not found"),
             call("2", "Edit", {"file_path": "b.py", **edit}), failed("2", "not found"),
             call("3", "Write", {"file_path": "a.py", "content": "x"}), ok("3"))
    assert [e["retried"] for e in st.errors] == [False, False]  # another tool
    st = run(call("1", "Edit", {"file_path": "a.py", **edit}), failed("1", "not found"),
             call("2", "Edit", {"file_path": "b.py", **edit}), failed("2", "not found"),
             call("3", "Edit", {"file_path": "a.py", **edit}), ok("3"))
    assert [(e["targets"], e["retried"]) for e in st.errors] == [(("a.py",), True),
                                                                 (("b.py",), False)]


def test_a_retry_of_a_command_is_the_same_command():
    st = run(call("1", "Bash", {"command": "make"}), failed("1", "exit 2"),
             call("2", "Bash", {"command": "make test"}), ok("2"))
    assert st.errors[0]["retried"] is False and st.errors[0]["targets"] == ("make",)
    st = run(call("1", "Bash", {"command": "make"}), failed("1", "exit 2"),
             call("2", "Bash", {"command": "make"}), ok("2"))
    assert st.errors[0]["retried"] is True


def test_a_call_that_names_no_target_retries_any_failure_of_its_tool():
    st = run(call("1", "Bash", {"command": "make"}), failed("1", "exit 2"),
             call("2", "Bash", {}), ok("2"))
    assert st.errors[0]["retried"] is True
    st = run(call("1", "Bash", {}), failed("1", "exit 2"),
             call("2", "Bash", {"command": "make"}), ok("2"))
    assert st.errors[0]["retried"] is True


def test_an_error_entry_keeps_one_line_of_the_failure_cut_at_1000_characters():
    st = run(call("1", "Bash", {"command": "x"}), failed("1", "line one\n\n  line   two"))
    assert st.errors[0]["error"] == "line one line two"
    assert len(st.errors) == 1  # the Failed fold's entry enriched, not a second one
    st = run(call("1", "Bash", {"command": "x"}), failed("1", "y" * 1500))
    assert st.errors[0]["error"] == "y" * 1000 + "…"


def test_a_refusal_by_the_user_is_a_denied_error_and_a_denied_approval():
    text = "The user doesn't want to proceed with this tool use. The tool use was rejected"
    st = run(call("1", "Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}),
             failed("1", text))
    (err,) = st.errors
    assert err["kind"] == DENIED and err["error"] == "user denied: " + text
    assert err["targets"] == ("a.py",)
    (entry,) = st.approvals["log"]
    assert (entry["status"], entry["tool_call_id"], entry["name"], entry["source"]) == (
        "denied", "1", "Edit", "tool_result")
    assert st.approvals["denied"] == 1
    # an ApprovalDenied event said so already: not recorded twice
    st = run(call("1", "Bash", {"command": "rm -rf /"}),
             ev("ApprovalDenied", {"tool_call_id": "1", "reason": "no"}), failed("1", text))
    assert st.approvals["denied"] == 1 and len(st.approvals["log"]) == 1


def test_a_failure_reported_in_a_finished_event_gets_its_own_error_entry():
    st = run(call("1", "shell", {"command": ["ls"]}), ok("1", "Exit code: 2"),
             call("2", "shell", {"command": ["ls"]}), ok("2", "Exit code: 0"))
    (err,) = st.errors
    assert (err["tool_call_id"], err["kind"], err["event"], err["retried"]) == ("1", ERROR, "e2", True)


# ---------------------------------------------------------------------------------------------
# plan


def _steps(st):
    return [(s["id"], s["text"], s["status"]) for s in st.plan["steps"]]


def test_the_plan_status_follows_its_steps():
    def todo(*statuses):
        return call("t", "TodoWrite", {"todos": [{"content": f"s{i}", "status": s}
                                                 for i, s in enumerate(statuses)]})

    st = run(todo("pending", "pending"))
    assert (st.plan["status"], st.plan["current_step_id"]) == ("planning", "")
    st = run(todo("completed", "pending"))
    assert (st.plan["status"], st.plan["current_step_id"]) == ("executing", "")
    st = run(todo("completed", "in_progress"))
    assert (st.plan["status"], st.plan["current_step_id"]) == ("executing", "2")
    st = run(todo("completed", "cancelled", "completed"))
    assert (st.plan["status"], st.plan["current_step_id"]) == ("done", "")
    st = run(todo("cancelled"))
    assert st.plan["status"] == "planning"


def test_tasks_are_added_numbered_and_updated_by_id():
    st = run(call("1", "TaskCreate", {"subject": "Write the parser"}),
             call("2", "TaskCreate", {"description": "Test it"}),
             call("3", "TaskUpdate", {"taskId": "#1", "status": "in_progress"}))
    assert _steps(st) == [("1", "Write the parser", "in_progress"), ("2", "Test it", "pending")]
    assert st.plan["current_step_id"] == "1"
    st = run(call("1", "TaskCreate", {"subject": "a"}), call("2", "TaskCreate", {"subject": "b"}),
             call("3", "TaskUpdate", {"id": 1, "status": "deleted"}),
             call("4", "TaskUpdate", {"taskId": "2", "status": "done"}))
    assert _steps(st) == [("2", "b", "completed")] and st.plan["status"] == "done"


def test_an_exit_plan_mode_plan_fills_only_an_empty_plan():
    plan = "## Plan\n1. Read the parser\n2) Fix it\n* [x] Ship\nnot a step"
    st = run(call("1", "ExitPlanMode", {"plan": plan}))
    assert _steps(st) == [("1", "Read the parser", "pending"), ("2", "Fix it", "pending"),
                          ("3", "Ship", "pending")]
    st = run(call("0", "TodoWrite", {"todos": [{"content": "mine", "status": "pending"}]}),
             call("1", "ExitPlanMode", {"plan": plan}))
    assert _steps(st) == [("1", "mine", "pending")]
    st = run(call("1", "ExitPlanMode", {"plan": "just prose"}))
    assert st.plan["steps"] == ()


def test_a_failed_plan_call_is_undone_unless_a_newer_plan_replaced_it():
    first = {"todos": [{"content": "one", "status": "in_progress"}]}
    second = {"todos": [{"content": "two", "status": "pending"}]}
    third = {"todos": [{"content": "three", "status": "pending"}]}
    st = run(call("1", "TodoWrite", first), ok("1"), call("2", "TodoWrite", second),
             failed("2", "InputValidationError"))
    assert _steps(st) == [("1", "one", "in_progress")] and st.plan["current_step_id"] == "1"
    st = run(call("1", "TodoWrite", first), ok("1"), call("2", "TodoWrite", second),
             call("3", "TodoWrite", third), failed("2", "InputValidationError"))
    assert _steps(st) == [("1", "three", "pending")]
    st = run(call("1", "TodoWrite", first), ok("1"), call("2", "TodoWrite", second), ok("2"))
    assert _steps(st) == [("1", "two", "pending")]


def test_codex_plans_take_their_steps_in_order():
    st = run(call("1", "update_plan", {"explanation": "why", "plan": [
        {"step": "Inspect", "status": "completed"}, "Write", {"text": "Fix", "status": "Active"},
        {"step": "Drop", "status": "canceled"}, {"step": "Later", "status": "blocked"}, 7]}))
    assert _steps(st) == [("1", "Inspect", "completed"), ("2", "Write", "pending"),
                          ("3", "Fix", "in_progress"), ("4", "Drop", "cancelled"),
                          ("5", "Later", "blocked")]
    assert st.plan["current_step_id"] == "3"


# ---------------------------------------------------------------------------------------------
# subagents


def test_a_spawned_subagent_is_running_until_its_result():
    st = run(call("t", "Task", {"description": "Research", "prompt": "go"}))
    assert thaw(st.subagents) == [{"tool_call_id": "t", "name": "Task", "description": "Research",
                                   "status": "running", "event": "e1"}]
    st = run(call("t", "Task", {"description": "Research"}), call("u", "Task", {"prompt": "p"}),
             ok("t", "done"))
    assert [(a["tool_call_id"], a["status"], a["description"]) for a in st.subagents] == [
        ("t", "done", "Research"), ("u", "running", "p")]
    st = run(call("t", "Task", {"description": "R"}),
             failed("t", "The user doesn't want to proceed with this tool use."))
    assert st.subagents[0]["status"] == DENIED


# ---------------------------------------------------------------------------------------------
# goal and title


def test_a_long_goal_is_cut_with_an_ellipsis():
    text = "g" * (GOAL_TEXT_LIMIT + 5)
    st = run(ev("UserPromptSubmitted", {"text": text}))
    assert st.goal["user_goal"] == "g" * GOAL_TEXT_LIMIT + "…"
    assert st.goal["current_task"] == st.goal["user_goal"]
    exact = "h" * GOAL_TEXT_LIMIT
    assert run(ev("UserPromptSubmitted", {"text": exact})).goal["user_goal"] == exact


def test_a_slash_command_is_the_task_never_the_goal():
    st = run(ev("UserPromptSubmitted", {"text": "<command-name>/review</command-name>"}),
             ev("UserPromptSubmitted", {"text": "fix it"}))
    assert st.goal["user_goal"] == "fix it"
    st = run(ev("UserPromptSubmitted", {"text": "fix it"}),
             ev("UserPromptSubmitted", {"text": "<command-name>/review</command-name>"}))
    assert (st.goal["user_goal"], st.goal["current_task"]) == ("fix it", "/review")


@pytest.mark.parametrize("type_,key", [
    ("claude-code:summary", "text"), ("claude-code:custom-title", "title"),
    ("claude-code:ai-title", "title"), ("pi:session_info", "name"), ("SessionStarted", "title")])
def test_each_harness_title_record_sets_the_title(type_, key):
    st = run(ev(type_, {key: "  Fix   the\nparser  "}))
    assert st.title == "Fix the parser"
    assert run(ev(type_, {key: "old"}), ev(type_, {key: "new"})).title == "new"
    assert run(ev(type_, {key: "old"}), ev(type_, {key: "   "})).title == "old"
    assert run(ev(type_, {key: "t" * 300})).title == "t" * 200 + "…"


def test_a_codex_title_is_only_a_thread_rename():
    rename = {"subtype": "thread_name_updated", "title": "Docs page"}
    assert run(ev("codex:event_msg", rename)).title == "Docs page"
    assert run(ev("codex:event_msg", {**rename, "subtype": "token_count"})).title == ""
    assert run(ev("codex:event_msg", {"title": "Docs page"})).title == ""


# ---------------------------------------------------------------------------------------------
# the harness descriptions (state/tools.py)


def test_each_change_summary_counts_lines_as_an_editor_would():
    def summary(name, args, harness=""):
        (e,) = call_effects(name, args, harness)
        return e.summary, e.op

    assert summary("Write", {"file_path": "f", "content": ""}) == ("write: 0 lines", "write")
    assert summary("Write", {"file_path": "f", "content": "a"}) == ("write: 1 lines", "write")
    assert summary("Write", {"file_path": "f", "content": "a\n"}) == ("write: 1 lines", "write")
    assert summary("Write", {"file_path": "f", "content": "a\n\nb"}) == ("write: 3 lines", "write")
    assert summary("Write", {"path": "f"}) == ("write: 0 lines", "write")
    assert summary("write", {"path": "f", "content": "a\nb\n"}, "pi") == ("write: 2 lines", "write")
    assert summary("edit", {"path": "f", "oldText": "a\nb\nc", "newText": "d"}, "pi") == (
        "edit: -3 +1 lines", "update")
    assert summary("edit", {"path": "f", "edits": [{"oldText": "a", "newText": "b\nc"}, "junk"]},
                   "pi") == ("2 edits: -1 +2 lines", "update")
    assert summary("NotebookEdit", {"notebook_path": "n.ipynb"}) == ("notebook replace cell", "update")
    assert summary("NotebookEdit", {"file_path": "n.ipynb", "edit_mode": "insert"}) == (
        "notebook insert cell", "update")
    assert call_effects("NotebookEdit", {"new_source": "x"}) == ()
    assert call_effects("Write", {"content": "x"}) == ()
    assert call_effects("Edit", {"old_string": "x"}) == ()


def test_the_first_non_empty_path_argument_names_the_file():
    assert call_effects("Read", {"file_path": "", "path": "/b"}) == (Effect("read", "/b"),)
    assert call_effects("Read", {"file_path": "/a", "path": "/b"}) == (Effect("read", "/a"),)
    assert call_effects("read", {"file_path": "/a"}, "pi") == (Effect("read", "/a"),)
    assert call_effects("read_file", {"path": "/c"}, "codex") == (Effect("read", "/c"),)


def test_command_and_search_summaries_are_the_command_cut_at_200():
    (e,) = call_effects("Bash", {"command": "x" * 250})
    assert e == Effect("exec", summary="x" * 200)
    (e,) = call_effects("list_dir", {"path": "/w"}, "codex")
    assert e == Effect("search", summary="/w")
    (e,) = call_effects("exec_command", {"command": "ls -la"}, "codex")
    assert e.summary == "ls -la"
    (e,) = call_effects("shell", {"cmd": ["git", "status"]}, "codex")
    assert e.summary == "git status"
    (e,) = call_effects("shell", {"command": "y" * 250}, "codex")
    assert e.summary == "y" * 200
    (e,) = call_effects("shell", {"command": 5}, "codex")
    assert e == Effect("exec")
    (e,) = call_effects("shell", ["ls", "-l"], "codex")  # the arguments are the argv
    assert e.summary == "ls -l"


def test_spawn_descriptions_take_the_first_field_a_harness_fills():
    for args, text in (({"description": "d", "prompt": "p"}, "d"), ({"message": "m"}, "m"),
                       ({"prompt": "p", "task": "t"}, "p"), ({"task": "t"}, "t"),
                       ({"agent_type": "worker"}, "worker"), ({"description": "z" * 300}, "z" * 200)):
        (e,) = call_effects("Task", args)
        assert (e.kind, e.summary) == ("spawn", text)


def test_todo_steps_keep_their_ids_texts_and_statuses():
    (e,) = call_effects("TodoWrite", {"todos": [
        {"id": "a7", "content": "one", "status": "DONE"}, {"text": "two", "status": "todo"},
        {"activeForm": "Three-ing"}, "junk", {"content": "four", "status": "in-progress"}]})
    assert [dict(s) for s in e.steps] == [
        {"id": "a7", "text": "one", "status": "completed"},
        {"id": "2", "text": "two", "status": "pending"},
        {"id": "3", "text": "Three-ing", "status": "pending"},
        {"id": "5", "text": "four", "status": "in_progress"}]
    assert e.summary == "4 steps"
    (e,) = call_effects("update_plan", {"plan": ["a", "b"]})
    assert e.summary == "2 steps"
    (e,) = call_effects("update_plan", {"plan": [], "explanation": "q" * 300})
    assert e.summary == "q" * 200


def test_task_updates_need_an_id_and_a_status():
    assert call_effects("TaskUpdate", {"taskId": "3"}) == ()
    assert call_effects("TaskUpdate", {"status": "completed"}) == ()
    assert call_effects("TaskUpdate", "3") == ()
    assert call_effects("TaskUpdate", {"taskId": 3, "status": "todo"}) == (
        Effect("plan_status", path="3", op="pending"),)
    assert call_effects("TaskCreate", {"activeForm": "Doing"}) == (Effect("plan_add", summary="Doing"),)
    assert call_effects("TaskCreate", {}) == ()


def test_exit_plan_mode_summary_is_its_first_line():
    (e,) = call_effects("ExitPlanMode", {"plan": "\n  Plan: fix it\n1. a"})
    assert e.summary == "Plan: fix it" and [s["text"] for s in e.steps] == ["a"]
    (e,) = call_effects("ExitPlanMode", {"plan": "   "})
    assert e == Effect("plan_text")


def test_patch_line_counts_skip_file_headers():
    (e,) = patch_files("*** Update File: a.py\n--- a/a.py\n+++ b/a.py\n-x\n+y\n+z\n context")
    assert e.summary == "update: +2 -1 lines"
    assert patch_files("+orphan\n-lines") == ()
    (e,) = patch_files("*** Move to: nowhere\n*** Add File: spaced name.txt  \n+a")
    assert e.path == "spaced name.txt" and e.op == "add"


@pytest.mark.parametrize("command", [
    ["applypatch", "*** Begin Patch\n*** Add File: x\n+a\n*** End Patch"],
    ["zsh", "-c", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+a\n*** End Patch\nEOF"],
    ["/bin/sh", "-c", "cd w; apply_patch <<EOF\n*** Begin Patch\n*** Add File: x\n+a\n*** End Patch\nEOF"],
    "(apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+a\n*** End Patch\nEOF\n)",
])
def test_every_way_codex_runs_apply_patch_names_the_patched_file(command):
    assert [e.path for e in call_effects("shell", {"command": command}, "codex")] == ["x"]


@pytest.mark.parametrize("command", [
    ["echo", "*** Begin Patch"], "myapply_patch <<EOF\n*** Begin Patch\n*** Add File: x\n",
    ["apply_patch"], "apply_patch --help",
])
def test_a_command_that_only_mentions_a_patch_is_a_command(command):
    (e,) = call_effects("shell", {"command": command}, "codex")
    assert e.kind == "exec"


def test_the_custom_apply_patch_tool_takes_its_patch_from_input_or_patch():
    patch = "*** Begin Patch\n*** Add File: x\n+a\n*** End Patch"
    for args in (patch, {"input": patch}, {"patch": patch}, {"input": "", "patch": patch}):
        assert [e.path for e in call_effects("apply_patch", args, "codex")] == ["x"]
    assert call_effects("apply_patch", {"input": 3}, "codex") == ()


def test_exit_codes_in_every_form_codex_writes():
    assert exit_code('{"output": "x", "metadata": {"exit_code": 0}}') == 0
    assert exit_code('  {"output": "x", "metadata": {"exit_code": -9}}  ') == -9
    assert exit_code('{"output": "Exit code: 4", "metadata": {"exit_code": true}}') == 4
    assert exit_code('{"output": "Exit code: 5", "metadata": "x"}') == 5
    assert exit_code('{"output": 3, "note": "Exit code: 6"}') is None  # not at a line start
    assert exit_code("{not json\nExit code: 7") == 7
    assert exit_code("Command exited with code 8") == 8
    assert exit_code("output\nExit code:  -1") == -1
    assert exit_code("see: Exit code: 2") is None  # only at the start of a line
    assert exit_code("") is None and exit_code(None) is None


def test_a_command_outcome_needs_a_zero_exit_or_a_patch_success():
    patch = ({"kind": "modify", "path": "a.py"},)
    assert command_outcome("Exit code: 0\nOutput:\nFailed", False, patch) == OK
    assert command_outcome("Exit code: 1\nOutput:\nSuccess.", False, patch) == ERROR
    assert command_outcome("ok", True) == ERROR
    assert command_outcome("user denied", True, patch) == DENIED
    assert command_outcome("Failed", False, ({"kind": "read", "path": "a"}, "junk")) == OK
    assert command_outcome("  Success. done", False, patch) == OK


@pytest.mark.parametrize("text", [
    "The user doesn't want to proceed with this tool use.",
    "The user doesn't want to take this action right now",
    "Tool use was rejected", "Permission to use Bash was denied", "permission has been denied",
    "Permission denied", "USER DENIED the call"])
def test_each_harness_refusal_reads_as_a_denial(text):
    assert is_denial(text) and default_outcome(text, True) == DENIED
    assert default_outcome(text, False) == OK  # a successful result that quotes one


def test_other_errors_are_errors():
    assert not is_denial("") and not is_denial(None)
    assert default_outcome("permission check failed", True) == ERROR


def test_registering_a_tool_again_replaces_it_and_unregistering_restores_the_others():
    first = register_tool("h1", "zz_tool", lambda a: (Effect("read", "1"),), doc="first")
    register_tool("h2", "zz_tool", lambda a: (Effect("read", "2"),))
    try:
        assert first.outcome is default_outcome and first.reads_result is False
        assert (first.harness, first.name, first.doc) == ("h1", "zz_tool", "first")
        assert tool_spec("zz_tool", "h2").doc == ""
        assert is_ambiguous("zz_tool") and ("h1", "zz_tool") in registered_tools()
        assert registered_tools() == sorted(registered_tools())
        again = register_tool("h1", "zz_tool", lambda a: (Effect("read", "1b"),), OK.__eq__,
                              reads_result=True)
        assert tool_spec("zz_tool", "h1") is again and again.reads_result is True
        assert call_effects("zz_tool", {}, "h1") == (Effect("read", "1b"),)
        assert call_effects("zz_tool", {}, "h2") == (Effect("read", "2"),)
        assert call_effects("zz_tool", {}, "h3") == (Effect("read", "2"),)  # h1's moved last
        assert call_effects("zz_tool", {}) == (Effect("read", "2"),)
        unregister_tool("h2", "zz_tool")
        assert not is_ambiguous("zz_tool") and call_effects("zz_tool", {}, "h2") == (
            Effect("read", "1b"),)
        unregister_tool("h2", "zz_tool")  # twice: nothing to remove
    finally:
        unregister_tool("h1", "zz_tool")
        unregister_tool("h2", "zz_tool")
    assert tool_spec("zz_tool") is None and call_effects("zz_tool", {}) == ()


@pytest.mark.parametrize("error", [TypeError, ValueError, KeyError, AttributeError, IndexError])
def test_a_description_that_cannot_read_its_arguments_describes_nothing(error):
    def broken(_args):
        raise error("bad")

    register_tool("h1", "zz_broken", broken)
    try:
        assert call_effects("zz_broken", {}) == ()
        st = run(call("c", "zz_broken", {}), ok("c"))
        assert st.tool_calls["completed"] == 1 and st.errors == ()
    finally:
        unregister_tool("h1", "zz_broken")


def test_an_effect_as_plain_data_has_only_what_it_says():
    assert Effect("read", "a").to_dict() == {"kind": "read", "path": "a"}
    assert Effect("exec").to_dict() == {"kind": "exec"}
    steps = ({"id": "1", "text": "t", "status": "pending"},)
    assert Effect("plan", summary="1 steps", steps=steps).to_dict() == {
        "kind": "plan", "summary": "1 steps", "steps": [dict(steps[0])]}


# ---------------------------------------------------------------------------------------------
# edges found by the mutation run


def test_a_call_named_only_in_causality_still_has_its_effects():
    st = run(ev("ToolCallRequested", {"name": "Write", "args": {"file_path": "c.py", "content": ""}},
                tool_call_id="w1"),
             ev("ToolCallFinished", {"preview": "ok"}, tool_call_id="w1"))
    assert st.modified_paths == ("c.py",) and st.tool_effects == {}


def test_a_truncated_call_whose_message_is_gone_uses_its_preview():
    st = run(ev("ToolCallRequested", {"tool_call_id": "w1", "name": "Write", "args_truncated": True,
                                      "args": {"file_path": "/r/lo"}}, message_id="M-gone"),
             ok("w1"), messages={}.get)
    assert st.modified_paths == ("/r/lo",)


def test_a_failed_call_of_a_tool_no_harness_describes_is_an_error():
    st = run(call("m", "mcp__db__query", {"sql": "x"}), failed("m", "connection refused"))
    (err,) = st.errors
    assert (err["name"], err["kind"], err["error"]) == ("mcp__db__query", ERROR, "connection refused")
    assert "targets" not in err  # it names no file and no command


def test_a_result_that_names_no_tool_retries_nothing():
    st = run(ev("ToolCallFailed", {"tool_call_id": "a", "error": "boom"}),
             ev("ToolCallFinished", {"tool_call_id": "b", "preview": "ok"}))
    assert [(e["name"], e["retried"]) for e in st.errors] == [("", False)]


def test_deleted_todo_steps_do_not_keep_a_plan_open():
    st = run(call("t", "TodoWrite", {"todos": [{"content": "a", "status": "completed"},
                                               {"content": "b", "status": "deleted"}]}))
    assert st.plan["status"] == "done"


def test_effects_without_a_path_change_no_file_list():
    register_tool("h1", "zz_mixed", lambda a: (Effect("modify"), Effect("read"),
                                               Effect("modify", "kept.txt")))
    try:
        st = run(call("c", "zz_mixed", {}), ok("c"))
    finally:
        unregister_tool("h1", "zz_mixed")
    assert thaw(st.files["modified"]) == [{"path": "kept.txt", "change_summary": "", "event": "e2",
                                           "tool": "zz_mixed"}]
    assert st.files["read"] == ()


def test_a_refusal_closes_the_open_approval_request_of_its_call():
    text = "The user doesn't want to proceed with this tool use.  " + "because " * 40
    st = run(call("1", "Bash", {"command": "rm x"}),
             ev("ApprovalRequested", {"tool_call_id": "1", "name": "Bash"}),
             failed("1", text))
    (entry,) = st.approvals["log"]
    assert entry["status"] == "denied" and entry["decided_by"] == "e3"
    assert entry["reason"] == " ".join(text.split())[:200] + "…"
    assert (st.approvals["requested"], st.approvals["denied"]) == (1, 1)


def test_a_denial_recorded_on_its_own_names_its_event_and_reason():
    st = run(call("1", "Bash", {"command": "rm x"}), failed("1", "Permission denied:\n  by policy"))
    (entry,) = st.approvals["log"]
    assert (entry["event"], entry["reason"], entry["status"]) == (
        "e2", "Permission denied: by policy", "denied")


def test_damaged_arguments_name_no_file():
    for name in ("Read", "Write", "Edit", "TaskCreate", "read", "write", "edit"):
        for args in ("text", 3, ["a"], None):
            assert call_effects(name, args) == (), (name, args)
    assert call_effects("Bash", "text") == (Effect("exec"),)
    assert call_effects("Grep", 3) == (Effect("search"),)


def test_steps_without_text_have_empty_text():
    (e,) = call_effects("TodoWrite", {"todos": [{"status": "pending"}]})
    assert [s["text"] for s in e.steps] == [""]
    (e,) = call_effects("update_plan", {"plan": [{"status": "pending"}]})
    assert [s["text"] for s in e.steps] == [""]
    (e,) = call_effects("ExitPlanMode", {"plan": "p" * 300 + "\n1. a"})
    assert e.summary == "p" * 200


def test_patch_line_counts_add_up_per_file():
    (a, b) = patch_files("*** Update File: a.py\n-x\n-y\n-z\n+w\n*** Add File: b.py\n+1\n+2")
    assert (a.summary, b.summary) == ("update: +1 -3 lines", "add: +2 -0 lines")


def test_a_patch_that_quotes_a_patch_header_is_read_from_its_first_header():
    patch = ("*** Begin Patch\n*** Add File: docs/patches.md\n+Patches start with:\n"
             "+*** Begin Patch\n*** Update File: src/a.py\n-x\n+y\n*** End Patch")
    cmd = f"apply_patch <<'EOF'\n{patch}\nEOF"
    assert [e.path for e in call_effects("exec_command", {"cmd": cmd}, "codex")] == [
        "docs/patches.md", "src/a.py"]


def test_apply_patch_run_through_env_is_a_patch():
    patch = "*** Begin Patch\n*** Add File: x\n+a\n*** End Patch"
    (e,) = call_effects("shell", {"command": ["env", "RUST_LOG=off", "apply_patch", patch]}, "codex")
    assert (e.kind, e.path) == ("modify", "x")


def test_an_edits_field_that_is_not_a_list_is_a_single_edit():
    (e,) = call_effects("Edit", {"file_path": "f", "old_string": "a", "new_string": "b\nc",
                                 "edits": "not a list"})
    assert e.summary == "edit: -1 +2 lines"
