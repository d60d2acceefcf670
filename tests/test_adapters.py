"""Adapters: the payloads match each provider's required shape, tool pairs stay valid.

`validate_openai` / `validate_anthropic` encode the providers' rules we rely on; the invariant
tests (test_invariants_context.py) run them over random histories too.
"""

from __future__ import annotations

import json

import pytest

from ctxstore.context import (
    PENDING_TEXT,
    EstimateTokenizer,
    Segment,
    build_context,
    candidates_from_history,
    to_anthropic,
    to_openai,
)
from ctxstore.context.adapters import EARLIER_OMITTED
from ctxstore.objects import Event
from ctxstore.state import project


def validate_openai(payload: dict) -> None:
    """Chat Completions: system first; roles known; assistant tool_calls well formed with
    JSON-string arguments; every tool message answers a call of the closest assistant message
    before it, contiguously; every call is answered before the next non-tool message."""
    msgs = payload["messages"]
    assert msgs and msgs[0]["role"] == "system" and isinstance(msgs[0]["content"], str)
    open_ids: set[str] = set()
    for i, m in enumerate(msgs):
        role = m["role"]
        assert role in ("system", "user", "assistant", "tool"), role
        if role != "tool":
            assert not open_ids, f"calls {open_ids} unanswered before message {i}"
        if role == "system":
            assert i == 0
        elif role == "user":
            assert isinstance(m["content"], str)
        elif role == "assistant":
            calls = m.get("tool_calls", [])
            assert m["content"] is None or isinstance(m["content"], str)
            assert calls or m["content"], "assistant message with neither text nor calls"
            for c in calls:
                assert set(c) == {"id", "type", "function"} and c["type"] == "function"
                assert isinstance(c["function"]["name"], str)
                assert isinstance(c["function"]["arguments"], str)
                json.loads(c["function"]["arguments"])
                assert c["id"] not in open_ids
                open_ids.add(c["id"])
        else:
            assert m["tool_call_id"] in open_ids, f"tool result {m['tool_call_id']} answers no call"
            assert isinstance(m["content"], str)
            open_ids.discard(m["tool_call_id"])
    assert not open_ids, f"calls {open_ids} never answered"
    for t in payload.get("tools", []):
        assert t["type"] == "function" and isinstance(t["function"]["name"], str)


def validate_anthropic(payload: dict) -> None:
    """Messages API: system is a string; roles alternate starting with user; content blocks are
    typed; every tool_use is answered by a tool_result in the very next (user) message, and
    tool_results come first in that message and answer only those calls."""
    assert isinstance(payload["system"], str)
    msgs = payload["messages"]
    prev_uses: set[str] = set()
    seen_ids: set[str] = set()
    for i, m in enumerate(msgs):
        assert m["role"] == ("user" if i % 2 == 0 else "assistant"), f"message {i} breaks alternation"
        blocks = m["content"]
        assert isinstance(blocks, list) and blocks
        if m["role"] == "user":
            results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
            assert set(results) == prev_uses, f"message {i}: results {results} vs calls {prev_uses}"
            assert len(results) == len(set(results))
            kinds = [b["type"] for b in blocks]
            assert kinds == sorted(kinds, key=lambda k: k != "tool_result"), "tool_result must lead"
            for b in blocks:
                assert b["type"] in ("text", "tool_result")
                if b["type"] == "text":
                    assert isinstance(b["text"], str) and b["text"]
                else:
                    assert isinstance(b["content"], str)
            prev_uses = set()
        else:
            uses = set()
            for b in blocks:
                assert b["type"] in ("text", "tool_use")
                if b["type"] == "tool_use":
                    assert isinstance(b["input"], dict) and isinstance(b["name"], str)
                    assert b["id"] not in seen_ids
                    seen_ids.add(b["id"])
                    uses.add(b["id"])
                else:
                    assert isinstance(b["text"], str) and b["text"]
            prev_uses = uses
    assert not prev_uses, f"calls {prev_uses} never answered"


TOK = EstimateTokenizer()


def _history():
    evs = [
        ("e1", Event("SessionStarted", payload={"session": "s", "goal": "fix the test"})),
        ("e2", Event("UserPromptSubmitted", actor="user", payload={"text": "please fix it"})),
        ("e3", Event("ModelResponseReceived", actor="model", payload={"text": "Looking."})),
        ("e4", Event("ToolCallRequested", payload={"tool_call_id": "t1", "name": "bash",
                                                   "args": {"cmd": "pytest"}})),
        ("e5", Event("ToolCallRequested", payload={"tool_call_id": "t2", "name": "read",
                                                   "args": "not-an-object"})),
        ("e6", Event("ToolCallFinished", payload={"tool_call_id": "t1", "preview": "1 failed"})),
        ("e7", Event("ToolCallFailed", payload={"tool_call_id": "t2", "error": "no such file"})),
        ("e8", Event("UserPromptSubmitted", actor="user", payload={"text": "go on"})),
        ("e9", Event("ToolCallRequested", payload={"tool_call_id": "t3", "name": "edit",
                                                   "args": {"path": "a.py"}})),
    ]
    return [(i, e, None) for i, e in evs]


def _bundle(budget=10_000, **kw):
    hist = _history()
    state = project((i, e) for i, e, _ in hist)
    cands = candidates_from_history(state, hist, system_prompt="Be careful.", tokenizer=TOK,
                                    tools=[{"name": "bash", "description": "run a command",
                                            "parameters": {"type": "object"}}], **kw)
    return build_context(state, cands, budget, tokenizer=TOK)


def test_openai_shape_and_pairs():
    out = to_openai(_bundle())
    validate_openai(out)
    msgs = out["messages"]
    assert msgs[0]["content"].startswith("Be careful.")
    assert "## Goal" in msgs[0]["content"]
    roles = [m["role"] for m in msgs]
    assert roles == ["system", "user", "assistant", "assistant", "tool", "assistant", "tool",
                     "user", "assistant", "tool"]
    assert msgs[3]["tool_calls"][0]["function"]["arguments"] == '{"cmd":"pytest"}'
    assert msgs[5]["tool_calls"][0]["function"]["arguments"] == '"not-an-object"'
    assert msgs[-1]["content"] == PENDING_TEXT
    assert out["tools"] == [{"type": "function", "function": {
        "name": "bash", "description": "run a command", "parameters": {"type": "object"}}}]


def test_anthropic_shape_alternation_and_pairs():
    out = to_anthropic(_bundle())
    validate_anthropic(out)
    msgs = out["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user",
                                         "assistant", "user"]
    # assistant text merged with the first call; the failed call's result flagged as error
    assert [b["type"] for b in msgs[1]["content"]] == ["text", "tool_use"]
    assert msgs[3]["content"][0]["input"] == {"input": "not-an-object"}
    assert msgs[4]["content"][0] == {"type": "tool_result", "tool_use_id": "t2",
                                     "content": "error: no such file", "is_error": True}
    # the result and the next prompt merge into one user message, result first
    assert [b["type"] for b in msgs[4]["content"]] == ["tool_result", "text"]
    assert msgs[-1]["content"][0]["content"] == PENDING_TEXT
    assert out["tools"][0]["input_schema"] == {"type": "object"}
    assert out["system"].startswith("Be careful.")


def test_anthropic_starts_with_user_after_eviction():
    segs = [Segment("chatter", text="old talk", order=1, group="g1", sources=("m1",),
                    messages=({"role": "assistant", "text": "old talk", "tool_calls": ()},)),
            Segment("current_request", text="hi", order=2, group="g2", sources=("m2",),
                    messages=({"role": "user", "text": "hi"},))]
    bundle = build_context(None, segs, 100, tokenizer=TOK)
    # keep the chatter but put it first by order -> conversation would start with assistant
    out = to_anthropic(bundle)
    validate_anthropic(out)
    assert out["messages"][0]["content"][0]["text"] == EARLIER_OMITTED


def test_openai_after_heavy_eviction_still_valid():
    full = _bundle()
    assert not [s for s in full.segments if not s.kept]  # the default budget drops nothing
    p0 = sum(s.tokens for s in full.kept if s.tier == 0)
    b = _bundle(budget=p0 + 3)  # room for the P0 tier only: everything else is evicted
    dropped = {s.tool_call_id for s in b.segments if not s.kept and s.tool_call_id}
    assert dropped == {"t1", "t2"}  # both finished pairs went; the pending one (P0) stays
    assert b.used_tokens <= p0 + 3 < full.used_tokens
    openai, anthropic = to_openai(b), to_anthropic(b)
    validate_openai(openai)
    validate_anthropic(anthropic)
    for payload in (openai, anthropic):
        text = json.dumps(payload)
        assert '"t3"' in text and '"t1"' not in text and '"t2"' not in text  # no half pair


def test_empty_bundle():
    b = build_context(None, [], 10, tokenizer=TOK)
    assert to_openai(b) == {"messages": [{"role": "system", "content": ""}]}
    assert to_anthropic(b) == {"system": "", "messages": []}


@pytest.mark.parametrize("args,expected", [({"a": 1}, {"a": 1}), ('{"b": 2}', {"b": 2}),
                                           ([1, 2], {"input": [1, 2]}), (None, {"input": None})])
def test_anthropic_input_is_always_an_object(args, expected):
    from ctxstore.context.adapters import _input_object
    assert _input_object(args) == expected
