"""Issue 29 item 4: Codex Desktop / VS Code rollouts carry their prompts only as event_msg
user_message records; the CLI writes a response_item user message beside it (either order).
Every prompt is a UserPromptSubmitted exactly once, and the title comes from it."""

from __future__ import annotations

import json

import pytest

from tests.clitools import Ctx
from tests.corpus import require_corpus

META = {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
        "payload": {"id": "0199-desk", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w",
                    "originator": "codex_vscode"}}


def _ev(ts: int, type_: str, payload: dict) -> dict:
    return {"timestamp": f"2026-03-01T10:00:{ts:02d}.000Z", "type": type_, "payload": payload}


def _user_item(ts: int, text: str) -> dict:
    return _ev(ts, "response_item", {"type": "message", "role": "user",
                                     "content": [{"type": "input_text", "text": text}]})


def _user_event(ts: int, text: str) -> dict:
    return _ev(ts, "event_msg", {"type": "user_message", "message": text, "images": []})


def _answer(ts: int, text: str) -> dict:
    return _ev(ts, "response_item", {"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": text}]})


def _import(tmp_path, records):
    f = tmp_path / "rollout-2026-03-01T10-00-00-0199-desk.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    ctx("import", str(f))
    sid = ctx.json("sessions")[0]["id"]
    prompts = [e["payload"]["text"] for e in reversed(ctx.json("log", f"{sid}/main"))
               if e["type"] == "UserPromptSubmitted"]
    return ctx, sid, prompts, f


@pytest.mark.parametrize("order", ["event-only", "item-then-event", "event-then-item"])
def test_each_prompt_once_whatever_the_client_wrote(tmp_path, order):
    recs = [META]
    for i, text in enumerate(["fix the flaky parser test", "now run the whole suite"]):
        turn = {"event-only": [_user_event(2 * i + 1, text)],
                "item-then-event": [_user_item(2 * i + 1, text), _user_event(2 * i + 1, text)],
                "event-then-item": [_user_event(2 * i + 1, text),
                                    _ev(2 * i + 1, "event_msg", {"type": "task_started"}),
                                    _user_item(2 * i + 1, text)]}[order]
        recs += [*turn, _answer(2 * i + 2, f"done {i}")]
    ctx, sid, prompts, f = _import(tmp_path, recs)
    assert prompts == ["fix the flaky parser test", "now run the whole suite"]
    assert ctx.json("sessions")[0]["title"] == "fix the flaky parser test"
    assert ctx.json("state", f"{sid}/main")["goal"]
    out = tmp_path / "back.jsonl"
    ctx("export", sid, "--format", "codex", "-o", str(out))
    assert [json.loads(x) for x in out.read_text().splitlines()] == recs
    assert ctx.json("import", str(f))["new_events"] == 0


def test_the_openai_context_of_a_desktop_rollout_has_the_user_message(tmp_path):
    recs = [META, _user_event(1, "add a --verbose flag"), _answer(2, "added")]
    ctx, sid, prompts, _ = _import(tmp_path, recs)
    bundle = ctx.json("context", "--budget", "8000", "--format", "openai", f"{sid}/main")
    msgs = bundle.get("messages") or bundle.get("rendered", {}).get("messages") or []
    text = json.dumps(bundle)
    assert "add a --verbose flag" in text
    assert not msgs or any(m.get("role") == "user" for m in msgs)


def test_corpus_rollouts_keep_their_prompt_counts(tmp_path):
    root = require_corpus()
    f = root / "codex" / "rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl"
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    ctx("import", str(f))
    sid = ctx.json("sessions")[0]["id"]
    prompts = [e for e in ctx.json("log", f"{sid}/main") if e["type"] == "UserPromptSubmitted"]
    assert len(prompts) == 1  # item and event_msg both say it: once
