"""Projections for audit: the seed's ReasoningTrace (§8) and Stats (§5), folded from events.

Neither stores hidden chain-of-thought: the trace is the public skeleton — goal, assumptions,
decisions, evidence, actions, validation, next steps — each item pointing at the events and
objects it came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .objects import Event, thaw
from .state import AgentState

ACTION_TYPES = {"ToolCallRequested": "tool_call", "FileWritten": "file_edit",
                "DiffApplied": "file_edit", "MemoryWritten": "memory_write",
                "BranchMerged": "branch", "CompactionCompleted": "compact",
                "ModelResponseReceived": "message"}
EVIDENCE_TYPES = {"ToolCallFinished": "tool_result", "ToolCallFailed": "tool_result",
                  "FileRead": "file", "UserPromptSubmitted": "user_message",
                  "VerifierFinished": "test"}


def trace(state: AgentState, events: Iterable[tuple[str, Event]]) -> dict[str, Any]:
    """`events` oldest first (a branch's first-parent history)."""
    actions: list[dict] = []
    evidence: list[dict] = []
    validation: list[dict] = []
    results: dict[str, str] = {}
    calls: dict[str, dict] = {}
    for eid, ev in events:
        p = ev.payload
        if ev.type in ACTION_TYPES:
            item = {"action_type": ACTION_TYPES[ev.type], "event": eid, "type": ev.type}
            if ev.type == "ToolCallRequested":
                item["tool_call_id"] = p.get("tool_call_id", "")
                item["name"] = p.get("name", "")
                calls[item["tool_call_id"]] = item
            elif "path" in p:
                item["path"] = p["path"]
            actions.append(item)
        if ev.type in EVIDENCE_TYPES:
            ref = ev.causality.get("artifact_id") or ev.causality.get("message_id") or eid
            summary = p.get("preview") or p.get("text") or p.get("path") or p.get("check") or ""
            evidence.append({"kind": EVIDENCE_TYPES[ev.type], "event": eid, "ref": ref,
                             "summary": " ".join(str(summary).split())[:200]})
            tcid = p.get("tool_call_id")
            if tcid:
                results[tcid] = eid
        if ev.type == "VerifierFinished":
            validation.append({"check": p.get("check", ""), "result": p.get("result", ""),
                               "event": eid, "evidence_refs": thaw(p.get("evidence_refs", ()))})
    for tcid, item in calls.items():
        if tcid in results:
            item["result_event"] = results[tcid]
    assumptions = [thaw(f) for f in state.facts if float(f.get("confidence", 1.0)) < 0.8]
    steps = [thaw(s) for s in state.plan.get("steps", ()) if s.get("status") != "done"]
    return {
        "goal": state.goal.get("user_goal", ""),
        "current_task": state.goal.get("current_task", ""),
        "assumptions": assumptions,
        "decisions": [thaw(d) for d in state.decisions],
        "evidence": evidence,
        "actions": actions,
        "validation": validation,
        "next_steps": steps,
        "open_questions": list(state.open_questions),
    }


def stats(events: Iterable[tuple[str, Event]], context_window: int = 0) -> dict[str, Any]:
    """The seed's AgentStats from a branch's history, oldest first."""
    s: dict[str, Any] = {
        "events": 0, "by_type": {},
        "token_usage": {"input_tokens": 0, "output_tokens": 0, "context_window_tokens": context_window,
                        "context_used_tokens": 0},
        "compression": {"compaction_count": 0, "tokens_before_last": None,
                        "tokens_after_last": None, "ratio": None},
        "tools": {"tool_call_count": 0, "failed_tool_call_count": 0,
                  "approval_requested_count": 0, "approval_denied_count": 0},
        "context_builds": 0,
    }
    tu, tools, comp = s["token_usage"], s["tools"], s["compression"]
    for _eid, ev in events:
        s["events"] += 1
        s["by_type"][ev.type] = s["by_type"].get(ev.type, 0) + 1
        p = ev.payload
        if ev.type == "ModelResponseReceived":
            usage = p.get("usage") or {}
            tu["input_tokens"] += int(usage.get("input_tokens", 0) or 0)
            tu["output_tokens"] += int(usage.get("output_tokens", 0) or 0)
        elif ev.type == "ToolCallRequested":
            tools["tool_call_count"] += 1
        elif ev.type == "ToolCallFailed":
            tools["failed_tool_call_count"] += 1
        elif ev.type == "ApprovalRequested":
            tools["approval_requested_count"] += 1
        elif ev.type == "ApprovalDenied":
            tools["approval_denied_count"] += 1
        elif ev.type == "ContextBuilt":
            s["context_builds"] += 1
            tu["context_used_tokens"] = int(p.get("used_tokens", 0))
        elif ev.type == "CompactionCompleted":
            comp["compaction_count"] += 1
            before, after = p.get("tokens_before"), p.get("tokens_after")
            if before:
                comp["tokens_before_last"], comp["tokens_after_last"] = before, after
                comp["ratio"] = round(after / before, 4) if after is not None else None
    return s
