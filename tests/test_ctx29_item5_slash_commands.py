"""Issue 29 item 5: a slash command typed as plain text (pi, Codex, Gemini CLI, ...) is never
the title or the goal, in any harness; harness commands are not tasks at all."""

from __future__ import annotations

import json

import pytest

from ctxstore.state.prompts import COMMAND, PROMPT, SKIP, classify_prompt
from tests.clitools import Ctx


@pytest.mark.parametrize("text, kind, cleaned", [
    ("/mode", SKIP, ""),
    ("/model gpt-5.1", SKIP, ""),
    ("/compact keep the test output", SKIP, ""),
    ("/review src/parser.py", COMMAND, "/review src/parser.py"),
    ("/init", COMMAND, "/init"),
    ("/usr/bin/env python3 is not found", PROMPT, "/usr/bin/env python3 is not found"),
    ("fix /tmp/x.py", PROMPT, "fix /tmp/x.py"),
])
def test_plain_slash_commands(text, kind, cleaned):
    assert classify_prompt(text) == (kind, cleaned)


def _pi(tmp_path, prompts: list[str]):
    recs = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z",
             "cwd": "/w"}]
    parent = None
    for i, p in enumerate(prompts):
        recs.append({"type": "message", "id": f"u{i}", "parentId": parent,
                     "timestamp": f"2026-01-01T00:00:0{i + 1}.000Z",
                     "message": {"role": "user", "content": p}})
        parent = f"u{i}"
    f = tmp_path / "pi.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def _codex(tmp_path, prompts: list[str]):
    recs = [{"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta",
             "payload": {"id": "c1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}}]
    for i, p in enumerate(prompts):
        recs.append({"timestamp": f"2026-01-01T00:00:0{i + 1}.000Z", "type": "response_item",
                     "payload": {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": p}]}})
    f = tmp_path / "rollout-2026-01-01T00-00-00-c1.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


@pytest.mark.parametrize("make", [_pi, _codex])
def test_a_leading_slash_command_is_neither_title_nor_goal(tmp_path, make):
    f = make(tmp_path, ["/mode", "/review the parser", "make the parser skip whitespace"])
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    ctx("import", str(f))
    s = ctx.json("sessions")[0]
    assert s["title"] == "make the parser skip whitespace"
    state = ctx.json("state", f"{s['id']}/main")
    goal = state.get("goal") or {}
    goal_text = goal.get("user_goal") if isinstance(goal, dict) else goal
    assert goal_text == "make the parser skip whitespace"
