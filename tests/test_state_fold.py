"""One test (or a few) per fold function: each event type moves exactly its section."""

from __future__ import annotations

import pytest

from ctxstore.objects import Event, Message, TextBlock
from ctxstore.state import FOLDS, AgentState, fold, project


def ev(type_, payload=None, **causality):
    return Event(type_, payload=payload or {}, causality=causality)


def run(*events, start=None, messages=None):
    pairs = [(f"e{i}", e) for i, e in enumerate(events, 1)]
    kw = {"messages": messages} if messages else {}
    return project(pairs, start=start, **kw)


def test_every_fold_advances_version_and_source_event():
    s = fold(AgentState(), "abc", ev("x.harness.Custom", {"a": 1}))
    assert (s.version, s.source_event) == (1, "abc")
    assert s == AgentState(version=1, source_event="abc")


def test_registry_covers_the_stateful_core_types():
    assert {"SessionStarted", "UserPromptSubmitted", "StateUpdated", "FileRead", "FileWritten",
            "DiffApplied", "ToolCallRequested", "ToolCallStarted", "ToolCallFinished",
            "ToolCallFailed", "ApprovalRequested", "ApprovalGranted", "ApprovalDenied",
            "VerifierFinished",
            "CompactionCompleted"} <= set(FOLDS)
    with pytest.raises(TypeError):
        FOLDS["X"] = None  # type: ignore[index]


@pytest.mark.parametrize("t", ["ContextBuilt", "ModelRequestStarted", "ModelResponseReceived",
                               "MemoryWritten",
                               "claude-code:queue-operation", "CompactionStarted"])
def test_types_without_fold_change_nothing_else(t):
    base = run(ev("SessionStarted", {"goal": "g"}))
    s = fold(base, "z", ev(t, {"text": "hello", "tool_call_id": "t"}))
    assert s == AgentState(**{**{f: getattr(base, f) for f in base.__dataclass_fields__},
                              "version": 2, "source_event": "z"})


def test_session_started_sets_goal_and_session():
    s = run(ev("SessionStarted", {"session": "sess1", "goal": "Fix the test"}))
    assert s.session == "sess1" and s.goal["user_goal"] == "Fix the test"
    assert run(ev("SessionStarted", {"session": "s"})).goal["user_goal"] == ""


def test_user_prompt_first_sets_goal_every_one_sets_task():
    s = run(ev("UserPromptSubmitted", {"text": "fix parser"}),
            ev("UserPromptSubmitted", {"text": "now the serializer"}))
    assert s.goal["user_goal"] == "fix parser"
    assert s.goal["current_task"] == "now the serializer"


def test_user_prompt_does_not_override_session_goal_and_reads_the_message():
    msg = Message("user", (TextBlock("the full prompt text"),))
    s = run(ev("SessionStarted", {"goal": "G"}),
            ev("UserPromptSubmitted", {"text": "the full"}, message_id="m1"),
            messages={"m1": msg}.get)
    assert s.goal == {"user_goal": "G", "current_task": "the full prompt text",
                      "acceptance_criteria": ()}


def test_user_prompt_empty_is_ignored_and_long_is_cut():
    assert run(ev("UserPromptSubmitted", {"text": "   "})).goal["current_task"] == ""
    s = run(ev("UserPromptSubmitted", {"text": "x" * 5000}))
    assert len(s.goal["current_task"]) == 2001 and s.goal["current_task"].endswith("…")


def test_state_updated_goal_and_plan_fields_replace():
    s = run(ev("StateUpdated", {"patch": {
        "goal": {"user_goal": "A", "acceptance_criteria": ["tests pass"]},
        "plan": {"steps": [{"id": "s1", "text": "read", "status": "done"}, "write"],
                 "current_step_id": "2", "status": "executing"}}}),
        ev("StateUpdated", {"patch": {"goal": {"current_task": "T"}, "plan": {"status": "bogus"}}}))
    assert s.goal == {"user_goal": "A", "current_task": "T", "acceptance_criteria": ("tests pass",)}
    assert s.plan["steps"] == ({"id": "s1", "text": "read", "status": "done"},
                               {"id": "2", "text": "write", "status": "pending"})
    assert s.plan["status"] == "executing" and s.plan["current_step_id"] == "2"


def test_state_updated_constraints_union_in_order():
    s = run(ev("StateUpdated", {"patch": {"constraints": {"hard": ["no API change", "b"]}}}),
            ev("StateUpdated", {"patch": {"constraints": {"hard": ["b", "c"], "soft": "s",
                                                          "preferences": ["terse"]}}}))
    assert s.constraints == {"hard": ("no API change", "b", "c"), "soft": ("s",),
                             "preferences": ("terse",)}


def test_state_updated_facts_decisions_dedup_and_default_refs():
    s = run(ev("StateUpdated", {"patch": {
        "facts_add": ["parser ok", {"content": "maybe flaky", "confidence": 0.4,
                                    "source_refs": ["tool_1"]}],
        "decisions_add": [{"decision": "use regex", "rationale": "simple"}]}}),
        ev("StateUpdated", {"patch": {"facts_add": ["parser ok", ""], "decisions_add": "use regex"}}))
    assert s.facts == ({"content": "parser ok", "confidence": 1.0, "source_refs": ("e1",)},
                       {"content": "maybe flaky", "confidence": 0.4, "source_refs": ("tool_1",)})
    assert s.decisions == ({"decision": "use regex", "rationale": "simple",
                            "evidence_refs": ("e1",)},)


def test_state_updated_open_questions_add_remove():
    s = run(ev("StateUpdated", {"patch": {"open_questions_add": ["q1", "q2", "q1"]}}),
            ev("StateUpdated", {"patch": {"open_questions_remove": ["q1"],
                                          "open_questions_add": ["q3"]}}))
    assert s.open_questions == ("q2", "q3")


def test_state_updated_ignores_malformed_and_unknown():
    s = run(ev("StateUpdated", {"patch": "nope"}), ev("StateUpdated", {"patch": {"zzz": 1}}))
    assert s == AgentState(version=2, source_event="e2")


def test_file_read_one_entry_per_path_latest_last_with_artifact():
    s = run(ev("FileRead", {"path": "a"}, artifact_id="A1"), ev("FileRead", {"path": "b"}),
            ev("FileRead", {"path": "a"}))
    assert s.files["read"] == ({"path": "b", "event": "e2"}, {"path": "a", "event": "e3"})
    assert s.artifacts == ({"artifact_id": "A1", "kind": "file", "uri": "a", "summary": ""},)


def test_file_written_and_diff_applied_go_to_modified():
    s = run(ev("FileWritten", {"path": "a", "change_summary": "fix ws"}),
            ev("DiffApplied", {"path": "b"}, artifact_id="D1"),
            ev("DiffApplied", {"path": "a"}))
    assert s.files["modified"] == ({"path": "b", "change_summary": "", "event": "e2"},
                                   {"path": "a", "change_summary": "fix ws", "event": "e3"})
    assert s.modified_paths == ("b", "a")
    assert s.artifacts[0]["kind"] == "diff"


def test_tool_call_requested_started_finished():
    s = run(ev("ToolCallRequested", {"tool_call_id": "t1", "name": "bash", "args": {"c": "ls"}}))
    assert s.pending_tool_calls == {"t1": {"name": "bash", "args": {"c": "ls"}, "event": "e1",
                                           "status": "requested"}}
    s = fold(s, "e2", ev("ToolCallStarted", {"tool_call_id": "t1"}))
    assert s.pending_tool_calls["t1"]["status"] == "running"
    s = fold(s, "e3", ev("ToolCallFinished", {"tool_call_id": "t1", "preview": "ok"},
                         artifact_id="O1"))
    assert s.pending_tool_calls == {} and s.tool_calls["completed"] == 1
    assert s.artifacts[0]["kind"] == "tool_output"


def test_tool_call_id_from_causality_and_started_for_unknown_call():
    s = run(ev("ToolCallRequested", {"name": "x"}, tool_call_id="c9"),
            ev("ToolCallStarted", {"tool_call_id": "nope"}))
    assert set(s.pending_tool_calls) == {"c9"}
    assert run(ev("ToolCallRequested", {"name": "x"})).pending_tool_calls == {}


def test_tool_call_failed_records_error_and_retry_flag():
    s = run(ev("ToolCallRequested", {"tool_call_id": "t1", "name": "bash"}),
            ev("ToolCallFailed", {"tool_call_id": "t1", "error": "exit 1"}),
            ev("ToolCallRequested", {"tool_call_id": "t2", "name": "edit"}),
            ev("ToolCallFailed", {"tool_call_id": "t2", "error": "denied", "retry": True}))
    assert s.pending_tool_calls == {} and s.tool_calls["failed"] == 2
    assert [(e["tool_call_id"], e["name"], e["retried"]) for e in s.errors] == [
        ("t1", "bash", False), ("t2", "edit", True)]


def test_error_marked_retried_when_a_later_call_of_same_name_succeeds():
    s = run(ev("ToolCallRequested", {"tool_call_id": "t1", "name": "bash"}),
            ev("ToolCallFailed", {"tool_call_id": "t1", "error": "exit 1"}),
            ev("ToolCallRequested", {"tool_call_id": "t2", "name": "read"}),
            ev("ToolCallFinished", {"tool_call_id": "t2"}))
    assert s.errors[0]["retried"] is False
    s = fold(fold(s, "e5", ev("ToolCallRequested", {"tool_call_id": "t3", "name": "bash"})),
             "e6", ev("ToolCallFinished", {"tool_call_id": "t3"}))
    assert s.errors[0]["retried"] is True


def test_approval_denied_is_an_error_and_call_stays_pending():
    s = run(ev("ToolCallRequested", {"tool_call_id": "t1", "name": "rm"}),
            ev("ApprovalDenied", {"tool_call_id": "t1", "reason": "dangerous"}))
    assert s.errors[0]["error"] == "approval denied: dangerous" and s.errors[0]["name"] == "rm"
    assert "t1" in s.pending_tool_calls


def test_verifier_finished_appends_validation():
    s = run(ev("VerifierFinished", {"check": "pytest", "result": "fail", "evidence_refs": ["a"]}))
    assert s.validations == ({"check": "pytest", "result": "fail", "event": "e1",
                              "evidence_refs": ("a",)},)


def test_compaction_completed_sets_last_compaction():
    assert run(ev("CompactionCompleted", compaction_id="cmp1")).last_compaction == "cmp1"
    assert run(ev("CompactionCompleted")).last_compaction == "e1"


def test_fold_is_pure():
    s0 = run(ev("SessionStarted", {"goal": "g"}))
    before = s0.to_dict()
    fold(s0, "x", ev("StateUpdated", {"patch": {"facts_add": ["f"]}}))
    assert s0.to_dict() == before
    with pytest.raises(TypeError):
        s0.goal["user_goal"] = "changed"  # type: ignore[index]
