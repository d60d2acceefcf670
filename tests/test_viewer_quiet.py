"""Issue 30 item 8 (viewer part): the page leaves out what `ctx log` leaves out (source
bookkeeping) and responses with nothing to show, unless --bookkeeping; a slash command reads
as the command typed, not as Claude Code's markup. Before: every one of these was a row."""

from __future__ import annotations

import json

import pytest

from ctxstore.porcelain.eventfilter import is_bookkeeping
from ctxstore.repo import Repository
from ctxstore.state.projector import Projector
from ctxstore.viewer import model

from .clitools import Ctx

_T = "2026-01-01T00:00:0{}.000Z"
RECORDS = [
    {"type": "file-history-snapshot", "messageId": "u1", "isSnapshotUpdate": False,
     "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": _T.format(0)}},
    {"type": "user", "uuid": "u1", "parentUuid": None, "cwd": "/work",
     "message": {"role": "user", "content": "<command-message>review is running…"
                 "</command-message>\n<command-name>/review</command-name>\n"
                 "<command-args>src/parser.py</command-args>"}},
    {"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {"type": "hook_progress"}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "p1",
     "message": {"id": "m1", "role": "assistant", "usage": {"input_tokens": 1200, "output_tokens": 30},
                 "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
    {"type": "user", "uuid": "u2", "parentUuid": "a1",
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                              "content": "parser.py"}]}},
    {"type": "system", "uuid": "s1", "parentUuid": "u2", "subtype": "informational",
     "content": "note", "level": "info"},
    {"type": "assistant", "uuid": "a2", "parentUuid": "s1",
     "message": {"id": "m2", "role": "assistant", "usage": {"input_tokens": 1300, "output_tokens": 8},
                 "content": [{"type": "text", "text": "The parser looks fine."}]}},
]


@pytest.fixture
def ctx(tmp_path):
    path = tmp_path / "s.jsonl"
    with path.open("w") as f:
        for n, r in enumerate(RECORDS):
            f.write(json.dumps({"sessionId": "q-1", "timestamp": _T.format(n), **r}) + "\n")
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("import", str(path))
    return ctx


def _page_data(ctx, *flags) -> dict:
    data = ctx.json("view", *flags)
    (session,) = data["data"].values()
    return session


def test_the_page_leaves_out_bookkeeping_and_empty_responses(ctx):
    full = _page_data(ctx, "--bookkeeping")
    quiet = _page_data(ctx)
    types = [e["t"] for e in full["events"]]
    assert {"claude-code:progress", "claude-code:system",
            "claude-code:file-history-snapshot"} <= set(types)  # what there was to leave out
    assert any(e["s"].startswith("(no text") for e in full["events"])
    assert full["hidden"] == 0 and quiet["hidden"] == 4
    assert [e["t"] for e in quiet["events"]] == [
        "SessionStarted", "UserPromptSubmitted", "ToolCallRequested", "ToolCallFinished",
        "ModelResponseReceived"]
    assert not any(e["s"].startswith("(no text") for e in quiet["events"])
    # the rows still form one line (each row's parent is the one before it) ...
    assert all(model.row_parents(quiet["events"], i) == ([i - 1] if i else [])
               for i in range(len(quiet["events"])))
    assert quiet["branches"] == {"main": len(quiet["events"]) - 1}
    # ... no token is lost: the empty response's usage is on the call it made
    assert [e.get("u") for e in quiet["events"] if "u" in e] == [[1200, 30], [1300, 8]]
    # ... and the states are those of every event, as `ctx state` folds them
    tip = quiet["events"][-1]
    states = quiet["states"]
    state = dict(zip(states["fields"], (states["values"][j] for j in states["states"][tip["si"]]),
                     strict=True))
    repo = Repository.open(ctx.root)
    try:
        assert state == model.state_dict(Projector(repo).project(tip["id"]))
    finally:
        repo.close()


def test_a_slash_command_reads_as_the_command(ctx):
    quiet = _page_data(ctx)
    prompt = next(e for e in quiet["events"] if e["t"] == "UserPromptSubmitted")
    assert prompt["s"] == "/review src/parser.py"
    blocks = quiet["messages"][prompt["m"]]["blocks"]
    assert [b["text"] for b in blocks if b["type"] == "text"] == ["/review src/parser.py"]
    assert "<command" not in json.dumps(quiet)


@pytest.mark.parametrize("text, shown", [
    ("<command-name>/init</command-name>", "/init"),
    ("<command-message>x</command-message><command-name>clear</command-name>"
     "<command-args></command-args>", "/clear"),
    ("<command-name>/review</command-name><command-args> a\n b </command-args>\nmore words",
     "/review a b\n\nmore words"),
    ("no markup <command-args>x</command-args>", "no markup <command-args>x</command-args>"),
    ("plain text", "plain text"),
])
def test_slash_command_markup(text, shown):
    assert model.slash_command(text) == shown


def test_hidden_events_are_exactly_the_bookkeeping_ones_and_empty_responses(ctx):
    full = _page_data(ctx, "--bookkeeping")
    repo = Repository.open(ctx.root)
    try:
        quiet_ids = {e["id"] for e in _page_data(ctx)["events"]}
        for e in full["events"]:
            ev = repo.graph.event(e["id"])
            gone = e["id"] not in quiet_ids
            assert gone == (is_bookkeeping(ev) or e["s"].startswith("(no text")), e
    finally:
        repo.close()


def test_a_left_out_event_opens_the_page_at_the_nearest_shown_one(ctx):
    full = _page_data(ctx, "--bookkeeping")
    rows = full["events"]
    progress = next(e["id"] for e in rows if e["t"] == "claude-code:progress")
    prompt = next(e["id"] for e in rows if e["t"] == "UserPromptSubmitted")
    data = ctx.json("view", progress)
    assert data["start"].endswith(f"&event={prompt}")  # its parent, the prompt, is shown
    (session,) = data["data"].values()
    assert any(e["id"] == prompt for e in session["events"])
    assert ctx.json("view", progress, "--bookkeeping")["start"].endswith(f"&event={progress}")
