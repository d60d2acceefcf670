"""candidates_from_history and state_segments: kinds, tiers, grouping, sources."""

from __future__ import annotations

from ctxstore.context import (
    PENDING_TEXT,
    CachedTokenizer,
    EstimateTokenizer,
    build_context,
    candidates_from_history,
    state_segments,
)
from ctxstore.objects import Event, Message, TextBlock, ToolCallBlock, ToolResultBlock
from ctxstore.state import AgentState, project

TOK = CachedTokenizer(EstimateTokenizer())


def E(t, payload=None, **causality):
    return Event(t, payload=payload or {}, causality=causality)


def cands(hist, state=None, **kw):
    hist = [(h[0], h[1], h[2] if len(h) > 2 else None) for h in hist]
    if state is None:
        state = project((i, e) for i, e, _ in hist)
    return candidates_from_history(state, hist, tokenizer=TOK, **kw)


def kinds(segs):
    return [s.kind for s in segs]


def test_last_prompt_is_current_request_others_are_turns():
    segs = cands([("e1", E("UserPromptSubmitted", {"text": "one"})),
                  ("e2", E("UserPromptSubmitted", {"text": "two"}, message_id="m2"),
                   Message("user", (TextBlock("two, in full"),)))])
    conv = [s for s in segs if s.section == 2]
    assert kinds(conv) == ["turn", "current_request"]
    assert conv[1].text == "two, in full" and conv[1].tier == 0
    assert conv[1].sources == ("e2", "m2") and conv[1].group == "e2"
    assert conv[0].group == "e1"


def test_explicit_current_request_makes_all_history_prompts_turns():
    segs = cands([("e1", E("UserPromptSubmitted", {"text": "one"}))], current_request="next")
    conv = [s for s in segs if s.section == 2]
    assert kinds(conv) == ["turn", "current_request"]
    assert conv[-1].sources == ("arg:current_request",) and conv[-1].text == "next"


def test_tool_pairs_are_one_segment_paired_by_id_not_position():
    segs = cands([
        ("e1", E("UserPromptSubmitted", {"text": "go"})),
        ("e2", E("ToolCallRequested", {"tool_call_id": "a", "name": "bash", "args": {"c": 1}})),
        ("e3", E("ToolCallRequested", {"tool_call_id": "b", "name": "read", "args": {}})),
        ("e4", E("ToolCallFinished", {"tool_call_id": "b", "preview": "B out"}, message_id="m4"),
         Message("tool", (ToolResultBlock("b", text="B full"),))),
        ("e5", E("ToolCallFailed", {"tool_call_id": "a", "error": "nope"}, artifact_id="A5")),
        ("e6", E("ToolCallFinished", {"tool_call_id": "zzz", "preview": "orphan"})),
    ])
    pairs = [s for s in segs if s.tool_call_id and s.section == 2]
    assert [(s.kind, s.tool_call_id) for s in pairs] == [("turn", "a"), ("turn", "b")]
    a, b = pairs
    assert a.messages[0]["tool_calls"][0] == {"id": "a", "name": "bash", "args": {"c": 1}}
    assert a.messages[1] == {"role": "tool", "tool_call_id": "a", "text": "error: nope",
                             "is_error": True, "pending": False}
    assert a.sources == ("e2", "e5", "A5")
    assert b.messages[1]["text"] == "B full" and b.sources == ("e3", "e4", "m4")
    assert all("orphan" not in s.text for s in segs)  # invariant 1: never sent


def test_pending_calls_are_p0_with_placeholder_including_state_only_ones():
    state = project([("old", E("ToolCallRequested", {"tool_call_id": "z", "name": "slow"}))])
    segs = candidates_from_history(state, [
        ("e1", E("UserPromptSubmitted", {"text": "go"}), None),
        ("e2", E("ToolCallRequested", {"tool_call_id": "p", "name": "bash"}), None)],
        tokenizer=TOK)
    pend = [s for s in segs if s.kind == "pending_tool_pair"]
    assert [s.tool_call_id for s in pend] == ["p", "z"]
    assert all(s.tier == 0 and s.messages[1]["text"] == PENDING_TEXT and s.messages[1]["pending"]
               for s in pend)
    assert pend[1].sources == ("old",)


def test_tool_call_blocks_in_model_messages_count_as_calls():
    msg = Message("assistant", (TextBlock("let me look"), ToolCallBlock("c1", "read", {"p": "a"})))
    segs = cands([("e1", E("UserPromptSubmitted", {"text": "go"})),
                  ("e2", E("ModelResponseReceived", {}, message_id="m2"), msg),
                  ("e3", E("ToolCallRequested", {"tool_call_id": "c1", "name": "read"})),
                  ("e4", E("ToolCallFinished", {"tool_call_id": "c1", "preview": "ok"}))])
    conv = [s for s in segs if s.section == 2]
    assert kinds(conv) == ["current_request", "turn", "turn"]
    assert conv[1].text == "let me look" and conv[2].order > conv[1].order
    assert conv[2].sources == ("e2", "m2", "e3", "e4")


def test_big_outputs_become_p3_previews_with_a_pointer():
    big = "line of output\n" * 2000
    segs = cands([("e1", E("ToolCallRequested", {"tool_call_id": "t", "name": "bash"})),
                  ("e2", E("ToolCallFinished", {"tool_call_id": "t", "preview": big[:50],
                                                "truncated": True}, artifact_id="ART"),
                   Message("tool", (ToolResultBlock("t", preview=big[:100], output_ref="ART",
                                                    truncated=True),))),
                  ("e3", E("ToolCallRequested", {"tool_call_id": "u", "name": "bash"})),
                  ("e4", E("ToolCallFinished", {"tool_call_id": "u", "preview": big}))])
    t, u = [s for s in segs if s.tool_call_id]
    assert t.kind == "turn" and "[output truncated; full output in ART]" in t.text
    assert u.kind == "tool_output" and u.tier == 3
    assert len(u.messages[1]["text"]) < 2200
    assert u.messages[1]["text"].endswith("full output in e4]")


def test_old_assistant_text_is_chatter_recent_is_turn():
    hist = []
    for i in range(5):
        hist.append((f"p{i}", E("UserPromptSubmitted", {"text": f"prompt {i}"})))
        hist.append((f"a{i}", E("ModelResponseReceived", {"text": f"answer {i}"})))
    segs = cands(hist, recent_turns=2)
    said = {s.text: s.kind for s in segs if s.text.startswith("answer")}
    assert said == {"answer 0": "chatter", "answer 1": "chatter", "answer 2": "chatter",
                    "answer 3": "turn", "answer 4": "turn"}


def test_excluded_messages_and_message_added():
    hidden = Message("assistant", (TextBlock("secret"),), context={"include": False})
    dev = Message("developer", (TextBlock("use tabs"),))
    segs = cands([("e1", E("ModelResponseReceived", {}, message_id="m1"), hidden),
                  ("e2", E("MessageAdded", {"role": "developer"}, message_id="m2"), dev)])
    assert all("secret" not in s.text for s in segs)
    d = [s for s in segs if s.kind == "developer"]
    assert d and d[0].text == "use tabs" and d[0].tier == 0 and d[0].sources == ("e2", "m2")


def test_instructions_tools_and_summary():
    segs = cands([], system_prompt="SYS", summary="earlier: did X", summary_sources=["cmp1"],
                 tools=[{"type": "function", "function": {"name": "bash", "parameters": {}}},
                        {"name": "read", "description": "read a file"}])
    assert kinds(segs)[:4] == ["system", "tool_schema", "tool_schema", "summary"]
    assert segs[1].data["name"] == "bash" and segs[1].sources == ("arg:tools/bash",)
    assert segs[3].sources == ("cmp1",) and segs[0].sources == ("arg:system_prompt",)


def test_state_segments_cover_every_section_with_sources():
    state = project([
        ("e1", E("SessionStarted", {"goal": "fix it"})),
        ("e2", E("StateUpdated", {"patch": {
            "goal": {"current_task": "parser", "acceptance_criteria": ["green"]},
            "plan": {"steps": [{"id": "s1", "text": "read", "status": "done"}],
                     "current_step_id": "s1", "status": "executing"},
            "constraints": {"hard": ["no API change"], "soft": ["small diff"],
                            "preferences": ["terse"]},
            "facts_add": [{"content": "flaky?", "confidence": 0.5}],
            "decisions_add": [{"decision": "regex", "rationale": "simple",
                               "evidence_refs": ["t1"]}],
            "open_questions_add": ["spaces?"]}})),
        ("e3", E("FileWritten", {"path": "p.py", "change_summary": "ws"}, artifact_id="A")),
        ("e4", E("FileRead", {"path": "q.py"})),
        ("e5", E("ToolCallFailed", {"tool_call_id": "t9", "error": "exit 2", "retry": True})),
        ("e6", E("VerifierFinished", {"check": "pytest", "result": "fail"})),
    ])
    segs = state_segments(state)
    assert kinds(segs) == ["goal", "plan", "open_questions", "constraints", "preference", "files",
                           "error", "decision", "fact", "artifact"]
    text = {s.kind: s.text for s in segs}
    assert "User goal: fix it\nCurrent task: parser\nAcceptance criteria:\n- green" in text["goal"]
    assert "- [done] s1. read <- current" in text["plan"] and "- pytest: fail" in text["plan"]
    assert "Must:\n- no API change" in text["constraints"]
    assert "Modified:\n- p.py: ws" in text["files"] and "Read:\n- q.py" in text["files"]
    assert text["fact"] == "Fact: flaky? (confidence 0.5)"
    src = {s.kind: s.sources for s in segs}
    assert src["decision"] == ("t1",) and src["files"] == ("e3", "e4")
    assert src["plan"] == ("e6",) and src["goal"] == ("e6",) and src["artifact"] == ("A",)
    err = [s for s in segs if s.kind == "error"][0]
    assert err.tier == 2 and "(retried)" in err.text
    assert state_segments(AgentState()) == []


def test_end_to_end_fits_and_keeps_current_request():
    hist = [("e0", E("SessionStarted", {"goal": "g"}))]
    for i in range(50):
        hist += [(f"p{i}", E("UserPromptSubmitted", {"text": f"prompt {i} " * 20})),
                 (f"r{i}", E("ToolCallRequested", {"tool_call_id": f"t{i}", "name": "bash"})),
                 (f"f{i}", E("ToolCallFinished", {"tool_call_id": f"t{i}", "preview": "x " * 300}))]
    segs = cands(hist)
    b = build_context(None, segs, 2000, tokenizer=TOK)
    assert b.used_tokens <= 2000
    kept = [s for s in b.kept if s.section == 2]
    assert kept[-1].kind == "turn" and kept[-2].kind == "current_request"
    assert kept[-2].text.startswith("prompt 49")
    groups = [s.group for s in kept]
    assert groups == sorted(groups, key=lambda g: int(g[1:]))  # newest whole turns kept
