"""HEAD after `ctx import` (issue 30, item 2): a new store's unborn HEAD goes to the newest
top-level session imported, and says so; a store whose HEAD is set keeps it."""

from __future__ import annotations

import json

import pytest

from .clitools import Ctx


def _session(path, sid: str, ts: str, prompt: str) -> None:
    recs = [{"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": "/w"},
            {"type": "message", "id": f"{sid}-1", "parentId": None, "timestamp": ts,
             "message": {"role": "user", "content": prompt}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path / "store")
    c("init", str(tmp_path / "store"))
    return c


def test_import_into_a_new_store_attaches_head_to_the_newest_session(ctx, tmp_path):
    _session(tmp_path / "old.jsonl", "old", "2026-01-01T00:00:00.000Z", "the old task")
    _session(tmp_path / "new.jsonl", "new", "2026-03-01T00:00:00.000Z", "the new task")
    res = ctx("import", str(tmp_path / "old.jsonl"), str(tmp_path / "new.jsonl"))
    assert "HEAD is now on session" in res.stderr and "new.jsonl" in res.stderr
    status = ctx("status").stdout
    assert status.startswith("On branch main of session") and "the new task" in status
    assert ctx.json("log")  # the log of HEAD works at once


def test_import_never_moves_a_head_that_is_set(ctx, tmp_path):
    ctx("new", "--title", "my work")
    before = ctx("status").stdout
    _session(tmp_path / "s.jsonl", "s", "2026-03-01T00:00:00.000Z", "imported task")
    res = ctx("import", str(tmp_path / "s.jsonl"))
    assert "HEAD is now" not in res.stderr
    assert ctx("status").stdout == before


def test_head_never_goes_to_a_subagent(ctx, tmp_path):
    parent = tmp_path / "proj" / "p1.jsonl"
    parent.parent.mkdir()
    parent.write_text(json.dumps({"type": "user", "sessionId": "p1", "uuid": "u1",
                                  "parentUuid": None, "timestamp": "2026-01-01T00:00:00.000Z",
                                  "message": {"role": "user", "content": "top task"}}) + "\n")
    sub = tmp_path / "proj" / "p1" / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(json.dumps({"type": "user", "sessionId": "p1", "uuid": "s1", "isSidechain": True,
                               "agentId": "a1", "parentUuid": None,
                               "timestamp": "2026-05-01T00:00:00.000Z",
                               "message": {"role": "user", "content": "sub task"}}) + "\n")
    ctx("import", str(tmp_path / "proj"))
    assert "top task" in ctx("status").stdout
