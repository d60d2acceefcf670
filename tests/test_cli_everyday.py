"""Everyday CLI edges (issue 30): `log --all REV`, `diff` of one event with itself and of
bookkeeping, nouns in the right number."""

from __future__ import annotations

import json

import pytest

from .clitools import Ctx


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("new", "--title", "one")
    c("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "first"}')
    c("fork", "side")
    c("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "on side"}')
    c("checkout", "main")
    return c


def test_log_all_with_a_rev_walks_that_sessions_branches(ctx):
    sid = ctx.json("sessions")[0]["id"]
    ctx("new", "--title", "two")  # HEAD on another session now
    texts = {e["payload"].get("text") for e in ctx.json("log", "--all", f"{sid}/main")}
    assert {"first", "on side"} <= texts  # REV's session, every branch: REV is not ignored
    assert ctx.json("log", "--all") != ctx.json("log", "--all", f"{sid}/main")


def test_diff_of_an_event_with_itself_says_so_once(ctx):
    out = ctx("diff", "main", "main").stdout
    assert out.count("\n") == 1 and "same event" in out and "nothing differs" in out


def test_diff_hides_bookkeeping_as_log_does(ctx, tmp_path):
    recs = [{"type": "session", "version": 3, "id": "p", "timestamp": "2026-01-01T00:00:00.000Z",
             "cwd": "/w"},
            {"type": "model_change", "id": "m1", "parentId": None,
             "timestamp": "2026-01-01T00:00:01.000Z", "provider": "x", "modelId": "y"},
            {"type": "message", "id": "u1", "parentId": "m1", "timestamp": "2026-01-01T00:00:02.000Z",
             "message": {"role": "user", "content": "do it"}}]
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    ctx("import", str(f))
    sid = next(s["id"] for s in ctx.json("sessions") if s["format"] == "pi")
    root = ctx.json("log", "--bookkeeping", f"{sid}/main")[-1]["id"]
    shown = ctx.json("diff", root, f"{sid}/main")
    assert [e["type"] for e in shown["only_b"]] == ["UserPromptSubmitted"]
    hidden = shown["bookkeeping_hidden"]["b"]
    assert hidden >= 1 and shown["bookkeeping_hidden"]["a"] == 0
    assert f"{hidden} bookkeeping hidden" in ctx("diff", root, f"{sid}/main").stdout
    every = ctx.json("diff", "--bookkeeping", root, f"{sid}/main")
    assert "pi:model_change" in [e["type"] for e in every["only_b"]]
    assert len(every["only_b"]) == 1 + hidden


def test_counts_read_in_the_right_number(ctx, tmp_path):
    batch = tmp_path / "one.jsonl"
    batch.write_text('{"type": "MessageAdded", "payload": {"role": "custom", "text": "x"}}\n')
    assert "appended 1 event;" in ctx("append", "--batch", str(batch)).stdout
    from ctxstore.cli.render import count

    assert (count(1, "object"), count(2, "object"), count(1200, "event")) == \
        ("1 object", "2 objects", "1,200 events")


@pytest.mark.parametrize("args, what", [(["log", "--bogus"], "No such option '--bogus'"),
                                        (["append"], "missing EVENT_TYPE"),
                                        (["bogus"], "No such command 'bogus'")])
def test_usage_errors_are_one_line(ctx, args, what):
    err = ctx.fails(2, *args)  # one line, "ctx: error: ...", exit 2 as click gives it
    assert what in err and "--help')" in err


def test_any_actor_append_records_can_be_filtered(ctx):
    ctx("append", "MessageAdded", "--actor", "robot", "--payload", '{"role": "custom", "text": "beep"}')
    got = ctx.json("log", "--actor", "robot")
    assert [e["payload"]["text"] for e in got] == ["beep"]


def test_memory_add_names_every_missing_option_at_once(ctx):
    err = ctx.fails(10, "memory", "add", "Run the tests with make test")
    assert "--scope" in err and "--source" in err and "--ttl" in err
    err = ctx.fails(10, "memory", "add", "x", "--scope", "project", "--ttl", "30d")
    assert "--source" in err and "--scope" not in err.split("refusing", 1)[1].split(":")[0]
