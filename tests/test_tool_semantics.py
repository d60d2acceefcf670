"""Tool semantics as data (state/tools.py): each harness's tools map to the effects the state
understands, and results decide whether they happened.

Arguments below are shaped as each harness documents them; the import tests run on lines taken
from the corpus (tests/data/*_tools.jsonl, see tests/data/README.md)."""

from __future__ import annotations

import json

import pytest

from ctxstore.state.tools import (
    DENIED,
    ERROR,
    OK,
    Effect,
    call_effects,
    command_outcome,
    default_outcome,
    exit_code,
    patch_files,
    register_tool,
    registered_tools,
    tool_spec,
    unregister_tool,
)

PATCH = """*** Begin Patch
*** Update File: src/app.py
@@
-old
+new
+more
*** Add File: docs/new.md
+# New
*** Delete File: old.txt
*** Update File: a/b.py
*** Move to: a/c.py
@@
-x
+y
*** End Patch"""


def kinds(effects):
    return [(e.kind, e.path) for e in effects]


@pytest.mark.parametrize("name,args,expected", [
    ("Read", {"file_path": "/r/a.py", "offset": 1}, [("read", "/r/a.py")]),
    ("Write", {"file_path": "/r/b.py", "content": "x\ny\n"}, [("modify", "/r/b.py")]),
    ("Edit", {"file_path": "/r/c.py", "old_string": "a", "new_string": "b\nc"}, [("modify", "/r/c.py")]),
    ("MultiEdit", {"file_path": "/r/d.py", "edits": [{"old_string": "a", "new_string": "b"}] * 2},
     [("modify", "/r/d.py")]),
    ("NotebookEdit", {"notebook_path": "/r/n.ipynb", "new_source": "1"}, [("modify", "/r/n.ipynb")]),
    ("Bash", {"command": "pytest -x"}, [("exec", "")]),
    ("Grep", {"pattern": "foo"}, [("search", "")]),
    ("Glob", {"pattern": "**/*.py"}, [("search", "")]),
    ("Task", {"description": "research", "prompt": "go"}, [("spawn", "")]),
    ("Agent", {"description": "research", "prompt": "go"}, [("spawn", "")]),
    ("WebFetch", {"url": "https://x", "prompt": "p"}, [("fetch", "")]),
    ("WebSearch", {"query": "q"}, [("fetch", "")]),
    ("ExitPlanMode", {"plan": "1. a\n2. b"}, [("plan_text", "")]),
    ("TodoWrite", {"todos": [{"content": "a", "status": "completed", "activeForm": "A"}]},
     [("plan", "")]),
])
def test_claude_code_tools(name, args, expected):
    assert kinds(call_effects(name, args, "claude-code")) == expected


def test_change_summaries_and_plan_steps():
    (e,) = call_effects("Edit", {"file_path": "f", "old_string": "a\nb", "new_string": "c"})
    assert e.summary == "edit: -2 +1 lines" and e.op == "update"
    (e,) = call_effects("MultiEdit", {"file_path": "f", "edits": [
        {"old_string": "a", "new_string": "b\nc"}, {"old_string": "d", "new_string": "e"}]})
    assert e.summary == "2 edits: -2 +3 lines"
    (e,) = call_effects("TodoWrite", {"todos": [
        {"content": "Write tests", "status": "in_progress", "activeForm": "Writing"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]})
    assert [(s["text"], s["status"]) for s in e.steps] == [("Write tests", "in_progress"),
                                                            ("Ship", "pending")]
    (e,) = call_effects("update_plan", {"explanation": "why", "plan": [
        {"step": "Inspect", "status": "completed"}, {"step": "Fix", "status": "in_progress"}]})
    assert [s["text"] for s in e.steps] == ["Inspect", "Fix"] and e.summary == "why"
    (e,) = call_effects("ExitPlanMode", {"plan": "## Plan\n1. Read the parser\n- [ ] Fix it\ntext"})
    assert [s["text"] for s in e.steps] == ["Read the parser", "Fix it"]


def test_codex_apply_patch_in_every_form():
    expected = [("modify", "src/app.py"), ("modify", "docs/new.md"), ("modify", "old.txt"),
                ("modify", "a/c.py")]
    assert kinds(patch_files(PATCH)) == expected
    assert [e.op for e in patch_files(PATCH)] == ["update", "add", "delete", "move"]
    assert patch_files(PATCH)[0].summary == "update: +2 -1 lines"
    assert kinds(call_effects("apply_patch", PATCH, "codex")) == expected  # custom tool: raw input
    assert kinds(call_effects("apply_patch", {"input": PATCH}, "codex")) == expected
    assert kinds(call_effects("shell", {"command": ["apply_patch", PATCH]}, "codex")) == expected
    heredoc = {"command": ["bash", "-lc", f"apply_patch <<'PATCH'\n{PATCH}\nPATCH\n"],
               "workdir": "/w"}
    assert kinds(call_effects("shell", heredoc, "codex")) == expected
    assert kinds(call_effects("exec_command", {"cmd": f"cd /w && apply_patch <<'EOF'\n{PATCH}\nEOF"},
                              "codex")) == expected
    assert kinds(call_effects("shell", {"command": ["bash", "-lc", "ls"]}, "codex")) == [("exec", "")]
    assert kinds(call_effects("write_stdin", {"session_id": 1, "chars": "y\n"}, "codex")) == [("exec", "")]


@pytest.mark.parametrize("name,args,expected", [
    ("update_plan", {"plan": [{"step": "a", "status": "pending"}]}, [("plan", "")]),
    ("view_image", {"path": "/w/shot.png"}, [("read", "/w/shot.png")]),
    ("spawn_agent", {"message": "review", "agent_type": "worker"}, [("spawn", "")]),
    ("wait_agent", {"id": "a1"}, [("exec", "")]),
])
def test_codex_other_tools(name, args, expected):
    assert kinds(call_effects(name, args, "codex")) == expected


@pytest.mark.parametrize("name,args,expected", [
    ("read", {"path": "/p/a.ts", "offset": 1, "limit": 20}, [("read", "/p/a.ts")]),
    ("write", {"path": "/p/b.ts", "content": "x"}, [("modify", "/p/b.ts")]),
    ("edit", {"path": "/p/c.ts", "oldText": "a", "newText": "b"}, [("modify", "/p/c.ts")]),
    ("bash", {"command": "npm test"}, [("exec", "")]),
])
def test_pi_tools(name, args, expected):
    assert kinds(call_effects(name, args, "pi")) == expected


def test_damaged_arguments_describe_nothing():
    for name in ("Read", "Edit", "TodoWrite", "apply_patch", "update_plan", "shell", "edit"):
        for args in (None, "text", 3, [], {"file_path": 5}, {"todos": "x"}, {"plan": None}):
            assert all(isinstance(e, Effect) for e in call_effects(name, args))
    assert call_effects("Read", {"file_path": ""}) == ()
    assert call_effects("no-such-tool", {"file_path": "x"}) == ()


def test_outcomes():
    assert default_outcome("ok", False) == OK
    assert default_outcome("<tool_use_error>String to replace not found</tool_use_error>", True) == ERROR
    assert default_outcome("The user doesn't want to proceed with this tool use. The tool use "
                           "was rejected", True) == DENIED
    assert default_outcome("The user doesn't want to take this action right now.", True) == DENIED
    assert exit_code('{"output":"","metadata":{"exit_code":1,"duration_seconds":0.0}}') == 1
    assert exit_code("Exit code: 0\nWall time: 1 seconds\nOutput:\nok") == 0
    assert exit_code("Chunk ID: 1\nProcess exited with code 2\nOutput:") == 2
    assert exit_code("no code here") is None
    assert command_outcome('{"output":"x","metadata":{"exit_code":0}}', False) == OK
    assert command_outcome('{"output":"","metadata":{"exit_code":1}}', False) == ERROR
    assert command_outcome("Success. Updated the following files:\nM a.py", False) == OK
    patch = ({"kind": "modify", "path": "a.py"},)
    assert command_outcome("Success. Updated the following files:\nM a.py", False, patch) == OK
    assert command_outcome('{"output":"Success. Updated the following files:\\nM a.py\\n"}',
                           False, patch) == OK
    assert command_outcome("Failed to find expected lines in a.py", False, patch) == ERROR
    assert command_outcome("apply_patch verification failed: no such file", False, patch) == ERROR
    assert command_outcome("Failed to find expected lines in a.py", False) == OK  # not a patch
    assert command_outcome('{"output":"x\\nExit code: 3"}', False) == ERROR


def test_every_named_tool_is_registered():
    have = set(registered_tools())
    for harness, names in {
        "claude-code": ["Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "Grep",
                        "Glob", "TodoWrite", "Task", "Agent", "WebFetch", "WebSearch",
                        "ExitPlanMode"],
        "codex": ["shell", "exec_command", "write_stdin", "apply_patch", "update_plan",
                  "view_image", "spawn_agent", "wait_agent"],
        "pi": ["read", "write", "edit", "bash"],
    }.items():
        assert {(harness, n) for n in names} <= have


def test_a_harness_registers_its_own_tool():
    register_tool("myharness", "save_note", lambda a: (Effect("modify", a["path"], "note"),))
    try:
        assert tool_spec("save_note").harness == "myharness"
        assert kinds(call_effects("save_note", {"path": "notes.md"})) == [("modify", "notes.md")]
        # the harness's own description wins over another harness's tool of the same name
        register_tool("myharness", "read", lambda a: (Effect("read", "own:" + a["path"]),))
        assert kinds(call_effects("read", {"path": "x"}, "myharness")) == [("read", "own:x")]
        assert kinds(call_effects("read", {"path": "x"}, "pi")) == [("read", "x")]
    finally:
        unregister_tool("myharness", "save_note")
        unregister_tool("myharness", "read")
    assert tool_spec("save_note") is None and tool_spec("read").harness == "pi"


def test_effects_are_plain_data():
    (e,) = patch_files(PATCH)[:1]
    assert json.loads(json.dumps(e.to_dict())) == {"kind": "modify", "path": "src/app.py",
                                                   "summary": "update: +2 -1 lines", "op": "update"}


def test_the_managers_calls_use_their_harness_description():
    from ctxstore import ContextManager
    from ctxstore.repo import Repository

    register_tool("myharness", "read", lambda a: (Effect("read", "own:" + a["path"]),))
    try:
        cm = ContextManager.start(Repository.memory())
        cm.record_tool_call("c1", "read", {"path": "a.txt"}, harness="myharness")
        cm.record_tool_result("c1", "text")
        cm.record_tool_call("c2", "read", {"path": "b.txt"})  # no harness: the first described
        cm.record_tool_result("c2", "text")
        assert cm.project_state().read_paths == ("own:a.txt", "b.txt")
    finally:
        unregister_tool("myharness", "read")
