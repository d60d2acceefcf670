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


def stats(events: Iterable[tuple[str, Event]], context_window: int = 0,
          state: AgentState | None = None) -> dict[str, Any]:
    """The seed's AgentStats from a branch's history, oldest first. With the STATE projected
    at its end, the approval counts are the state's (Approval* events and the harnesses'
    refusal signals in tool results); without, Approval* events only."""
    s: dict[str, Any] = {
        "events": 0, "by_type": {},
        "token_usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                        "cache_write_tokens": 0, "cost_usd": None, "by_model": {},
                        "context_window_tokens": context_window, "context_used_tokens": 0},
        "compression": {"compaction_count": 0, "tokens_before_last": None,
                        "tokens_after_last": None, "ratio": None},
        "tools": {"tool_call_count": 0, "failed_tool_call_count": 0,
                  "approval_requested_count": 0, "approval_granted_count": 0,
                  "approval_denied_count": 0},
        "context_builds": 0,
    }
    tu, tools, comp = s["token_usage"], s["tools"], s["compression"]
    tokens = _TokenCount()
    for _eid, ev in events:
        s["events"] += 1
        s["by_type"][ev.type] = s["by_type"].get(ev.type, 0) + 1
        p = ev.payload
        if ev.type == "ModelResponseReceived" or "usage_total" in p:
            tokens.add(_eid, ev)
        if ev.type == "ToolCallRequested":
            tools["tool_call_count"] += 1
        elif ev.type == "ToolCallFailed":
            tools["failed_tool_call_count"] += 1
        elif ev.type == "ApprovalRequested":
            tools["approval_requested_count"] += 1
        elif ev.type == "ApprovalGranted":
            tools["approval_granted_count"] += 1
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
    tu.update(tokens.totals())
    if state is not None:
        ap = state.approvals
        tools["approval_requested_count"] = ap["requested"]
        tools["approval_granted_count"] = ap["granted"]
        tools["approval_denied_count"] = ap["denied"]
    return s


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def normalize_usage(usage: Any) -> dict[str, Any]:
    """{input, output, cache_read, cache_write, cost} of one provider usage record.

    `input` is every input token the provider processed. Anthropic reports cache creation and
    cache reads beside `input_tokens` (they add up); OpenAI/Codex `input_tokens` already
    includes `cached_input_tokens`; pi reports `input` + `cacheRead` + `cacheWrite` and a
    `cost` map. `cost` is None when the record has none."""
    u = usage if isinstance(usage, dict) else {}
    if any(k in u for k in ("cacheRead", "cacheWrite")) or ("input" in u and "input_tokens" not in u):
        read, write = _int(u.get("cacheRead")), _int(u.get("cacheWrite"))
        inp, out = _int(u.get("input")) + read + write, _int(u.get("output"))
        cost = u.get("cost")
        cost = cost.get("total") if isinstance(cost, dict) else cost
    else:
        read = _int(u.get("cache_read_input_tokens"))
        write = _int(u.get("cache_creation_input_tokens"))
        inp = _int(u.get("input_tokens")) + read + write
        if "cached_input_tokens" in u:  # OpenAI: already part of input_tokens
            read += _int(u.get("cached_input_tokens"))
            write += _int(u.get("cache_write_input_tokens"))
        out = _int(u.get("output_tokens"))
        cost = u.get("cost_usd")
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    return {"input": inp, "output": out, "cache_read": read, "cache_write": write, "cost": cost}


def session_token_usage(graph, tips: Iterable[str]) -> dict[str, Any]:
    """Token usage of a whole session: every event reachable from its branch TIPS, each once,
    by the same per-harness rules as `stats` — each provider response once (the newest record
    of a response_id), and a harness's running total (Codex `token_count`) as the sum of its
    growth since the previous report on the same first-parent line (on one line that is its
    newest value; a branch adds only what it spent after it forked)."""
    events = list(graph.walk(tips))
    events.reverse()  # oldest first: a first parent always comes before its children
    tokens = _TokenCount()
    last_report: dict[str, str | None] = {}  # event -> newest running-total report on its line
    for eid, ev in events:
        before = last_report.get(ev.parents[0]) if ev.parents else None
        if "usage_total" in ev.payload:
            tokens.add(eid, ev, before)
            last_report[eid] = eid
        else:
            last_report[eid] = before
            if ev.type == "ModelResponseReceived":
                tokens.add(eid, ev)
    return tokens.totals()


_LINE = object()  # `_TokenCount.add`: the previous report is the previous one added


class _TokenCount:
    """Token usage along a history: each response counted once (the newest record of a
    response_id wins: Claude Code repeats a split response's usage on each of its lines), plus
    a harness's running total (Codex `token_count`): the growth of each report over the
    previous report on its line, summed (on one line: the newest total), split per model."""

    def __init__(self) -> None:
        self.responses: dict[str, tuple[str, dict]] = {}
        self.running: dict | None = None  # summed growth of the running totals
        self.running_by_model: dict[str, dict] = {}
        self.reports: dict[str, dict] = {}  # report event -> its normalized total
        self.last: dict | None = None

    def add(self, eid: str, ev: Event, previous: Any = _LINE) -> None:
        """Count EV; for a running-total report, PREVIOUS is the event id of the previous
        report on its first-parent line (None: none), by default the previous one added."""
        p = ev.payload
        model = p.get("model") if isinstance(p.get("model"), str) else ""
        if "usage_total" in p:
            total = normalize_usage(p["usage_total"])
            prev = self.last if previous is _LINE else self.reports.get(previous) if previous else None
            prev = prev or _zero()
            delta = {k: (total[k] or 0) - (prev[k] or 0)
                     for k in ("input", "output", "cache_read", "cache_write")}
            grew = {k: max(0, v) for k, v in delta.items()}
            _add(self.running_by_model.setdefault(model or "unknown", _zero()), grew, None)
            self.running = self.running or _zero()
            _add(self.running, delta, None)
            self.reports[eid] = self.last = total
            return
        if isinstance(p.get("usage"), dict):
            key = p.get("response_id") if isinstance(p.get("response_id"), str) and p.get("response_id") else eid
            u = normalize_usage(p["usage"])
            if u["cost"] is None and isinstance(p.get("cost_usd"), (int, float)):
                u["cost"] = float(p["cost_usd"])
            self.responses.pop(key, None)  # the newest record of a response counts
            self.responses[key] = (model, u)

    def totals(self) -> dict[str, Any]:
        total, by_model = _zero(), {m: dict(v) for m, v in self.running_by_model.items()}
        if self.running is not None:
            _add(total, self.running, None)
        for model, u in self.responses.values():
            _add(total, u, u["cost"])
            _add(by_model.setdefault(model or "unknown", _zero()), u, u["cost"])
        return {**_named(total), "by_model": {m: _named(v) for m, v in sorted(by_model.items())}}


def _zero() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": None}


def _add(into: dict, u: dict, cost: float | None) -> None:
    for k in ("input", "output", "cache_read", "cache_write"):
        into[k] += u[k] or 0
    if cost is not None:
        into["cost"] = (into["cost"] or 0.0) + cost


def _named(v: dict) -> dict[str, Any]:
    return {"input_tokens": v["input"], "output_tokens": v["output"],
            "cache_read_tokens": v["cache_read"], "cache_write_tokens": v["cache_write"],
            "cost_usd": round(v["cost"], 6) if v["cost"] is not None else None}
