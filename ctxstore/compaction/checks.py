"""The checks a compaction must pass before it counts (seed §7 CompressionCheck, issue rules).

Each rule returns a verdict with a detail a user can act on. A compaction with any failed
verdict moves no ref. Rules are pure functions of the summarizer output and the facts of the
range, so each one can be made to fail in a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .summarizers import REQUIRED_FIELDS


@dataclass(frozen=True)
class Verdict:
    rule: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class RangeFacts:
    """What the checks need to know about the cut."""

    events: Sequence[Mapping[str, Any]]  # summarized events: {id, type, payload, ...} oldest first
    kept: Sequence[Mapping[str, Any]]  # events after the cut, kept verbatim
    user_goal: str
    hard_constraints: Sequence[str]
    replaced_tokens: int
    summary_tokens: int


_LIST_FIELDS = ("tool_results", "errors", "decisions", "open_questions", "next_steps")


def _shape_problem(out: Any) -> str | None:
    if not isinstance(out, Mapping):
        return f"summarizer returned {type(out).__name__}, not an object"
    missing = [f for f in REQUIRED_FIELDS if f not in out]
    if missing:
        return "missing field(s): " + ", ".join(missing)
    if not isinstance(out["summary"], str) or not out["summary"].strip():
        return "empty summary text"
    if not isinstance(out["goal"], Mapping) or not isinstance(out["constraints"], Mapping) \
            or not isinstance(out["files"], Mapping) or not isinstance(out["progress"], Mapping):
        return "goal, constraints, files and progress must be objects"
    bad = [f for f in _LIST_FIELDS if not isinstance(out[f], list)]
    if bad:
        return "must be lists: " + ", ".join(bad)
    return None


def abandoned_calls(events: Sequence[Mapping[str, Any]], kept: Sequence[Mapping[str, Any]]) -> list[str]:
    """Calls in `events` that never got a result although the user spoke again after them.

    Such a call is not pending (invariant 2 protects calls the agent may still answer): the
    user moved on, as when a harness is interrupted mid-call. A compaction may summarize it,
    but must list it among its errors."""
    rows = [*events, *kept]
    results = {e["payload"].get("tool_call_id") for e in rows
               if e["type"] in ("ToolCallFinished", "ToolCallFailed")}
    last_prompt = max((i for i, e in enumerate(rows) if e["type"] == "UserPromptSubmitted"), default=-1)
    return [e["payload"].get("tool_call_id") for i, e in enumerate(events)
            if e["type"] == "ToolCallRequested" and i < last_prompt
            and e["payload"].get("tool_call_id") not in results]


def run_checks(out: Any, facts: RangeFacts) -> list[Verdict]:
    problem = _shape_problem(out)
    verdicts = [Verdict("summarizer_output", problem is None, problem or "well-formed")]
    if problem is not None:
        return verdicts
    v = verdicts.append
    v(Verdict("has_source_refs", bool(facts.events),
              f"{len(facts.events)} event(s) in range" if facts.events else "nothing to summarize"))
    task = str(out["goal"].get("current_task") or "").strip()
    v(Verdict("has_current_task", bool(task), task[:80] or "no current_task"))
    v(Verdict("has_next_steps", bool(out["next_steps"]),
              f"{len(out['next_steps'])} step(s)" if out["next_steps"] else "no next_steps"))
    written = sorted({e["payload"].get("path", "") for e in facts.events
                      if e["type"] in ("FileWritten", "DiffApplied")} - {""})
    listed = {str(f.get("path")) for f in out["files"].get("modified", ()) if isinstance(f, Mapping)}
    missing = [p for p in written if p not in listed]
    v(Verdict("file_writes_listed", not missing,
              f"not in files.modified: {', '.join(missing)}" if missing
              else f"{len(written)} written file(s) listed"))
    failed = [e for e in facts.events if e["type"] == "ToolCallFailed"]
    v(Verdict("tool_errors_listed", not failed or bool(out["errors"]),
              f"{len(failed)} failed tool call(s) but no errors" if failed and not out["errors"]
              else f"{len(failed)} failed tool call(s)"))
    called = {e["payload"].get("tool_call_id") for e in facts.events if e["type"] == "ToolCallRequested"}
    answered = {e["payload"].get("tool_call_id") for e in facts.events
                if e["type"] in ("ToolCallFinished", "ToolCallFailed")}
    answered_later = {e["payload"].get("tool_call_id") for e in facts.kept
                      if e["type"] in ("ToolCallFinished", "ToolCallFailed")}
    split = sorted(c for c in called & answered_later if c)
    unanswered = called - answered - answered_later
    abandoned = set(abandoned_calls(facts.events, facts.kept)) & unanswered
    pending = sorted(c for c in unanswered - abandoned if c)
    listed = {str(e.get("tool_call_id")) for e in out["errors"] if isinstance(e, Mapping)}
    unlisted = sorted(c for c in abandoned if c not in listed)
    orphan = sorted(c for c in answered - called if c)
    detail = []
    if split:
        detail.append(f"call/result split by the cut: {', '.join(split)}")
    if pending:
        detail.append(f"pending call(s) would be compacted away: {', '.join(pending)}")
    if orphan:
        detail.append(f"result(s) without their call in range: {', '.join(orphan)}")
    if unlisted:
        detail.append(f"abandoned call(s) not listed in errors: {', '.join(unlisted)}")
    note = f"; {len(abandoned)} abandoned call(s) listed as errors" if abandoned else ""
    v(Verdict("tool_pairs_intact", not detail,
              "; ".join(detail) or f"{len(called & answered)} pair(s) intact{note}"))
    goal = facts.user_goal
    carried = (out["goal"].get("user_goal") == goal) and (not goal or goal in out["summary"])
    v(Verdict("goal_verbatim", carried, "user goal carried verbatim" if carried
              else "the user goal is not carried verbatim in goal.user_goal and the summary"))
    hard_out = list(out["constraints"].get("hard", ()))
    lost = [c for c in facts.hard_constraints if c not in hard_out or c not in out["summary"]]
    v(Verdict("hard_constraints_verbatim", not lost,
              f"lost: {'; '.join(lost)}" if lost else f"{len(facts.hard_constraints)} carried verbatim"))
    smaller = facts.summary_tokens < facts.replaced_tokens
    v(Verdict("smaller_than_replaced", smaller,
              f"summary {facts.summary_tokens} tokens vs {facts.replaced_tokens} replaced"))
    return verdicts
