"""Hostile or broken hook payloads (issue 28, finding 5; docs/security.md): whatever a hook
call logs, the log is not a reflog — fsck, gc and `reflog expire` stay clean afterwards."""

from __future__ import annotations

import json

from tests.clitools import Ctx


def _hook(ctx: Ctx, data: dict) -> None:
    res = ctx("hook", "claude-code", input=json.dumps(data))
    assert res.output == ""


def test_a_hook_log_line_does_not_break_fsck_gc_or_reflog_expire(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "hi"}')
    for _ in range(2):  # a transcript_path naming no file: one log line each time
        _hook(ctx, {"transcript_path": str(tmp_path / "nope.jsonl"), "cwd": str(tmp_path),
                    "hook_event_name": "PostToolUse", "tool_name": "Write"})
    _hook(ctx, {"transcript_path": "\n0000 1111 not a reflog\tline", "cwd": str(tmp_path)})
    log = (tmp_path / ".ctx" / "hooks.log").read_text()
    assert "names no file" in log
    assert not (tmp_path / ".ctx" / "logs" / "hooks.log").exists()
    ctx("fsck")
    ctx("fsck", "--full")
    ctx("reflog", "expire")
    ctx("gc", "--prune=now")
    ctx("fsck", "--full")


def test_a_hooks_log_left_in_logs_by_an_older_version_is_not_a_reflog(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "hi"}')
    (tmp_path / ".ctx" / "logs" / "hooks.log").write_text(
        "2026-01-01T00:00:00Z /x.jsonl: transcript_path names no file; nothing imported\n")
    ctx("fsck")
    ctx("reflog", "expire")
    ctx("gc", "--prune=now")
    assert len(ctx.json("log")) == 2
