"""The checks a compaction must pass before it counts (seed §7 CompressionCheck, issue rules).

Every check compares the summarizer's output with the projected state of the REPLACED RANGE
(`RangeFacts.range_state`: the events of the range folded from the empty state — files
modified, errors, open calls, plan), plus the goal and hard constraints of the state at the
end of the range. A check with nothing to look at says "n/a" (status "n/a", `ok` true) rather
than passing: a check that cannot fail is not reported as a pass. A compaction with any failed
verdict moves no ref. Rules are pure functions of the output and the facts, so each one can be
made to fail in a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..state import AgentState
from ..state.calls import RESULT_TYPES, CallBook, open_calls
from .summarizers import REQUIRED_FIELDS

PASS, FAIL, NA = "pass", "fail", "n/a"

#: A merge of a branch smaller than this (in tokens) may carry a summary up to this size: a
#: few events cannot be summarized smaller than themselves, and merging them must still work.
MERGE_MIN_SUMMARY_TOKENS = 512


@dataclass(frozen=True)
class Verdict:
    rule: str
    ok: bool
    detail: str
    status: str = ""  # pass | fail | n/a (derived from ok when not given)

    def __post_init__(self):
        if not self.status:
            object.__setattr__(self, "status", PASS if self.ok else FAIL)

    @classmethod
    def na(cls, rule: str, detail: str) -> Verdict:
        return cls(rule, True, detail, NA)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "ok": self.ok, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class RangeFacts:
    """What the checks need to know about the cut."""

    events: Sequence[Mapping[str, Any]]  # summarized events: {id, type, payload, causality, ...}
    kept: Sequence[Mapping[str, Any]]  # events after the cut, kept verbatim
    user_goal: str
    hard_constraints: Sequence[str]
    replaced_tokens: int
    summary_tokens: int
    range_state: AgentState = field(default_factory=AgentState)  # the range folded from empty
    kind: str = "compaction"  # or "merge"
    kept_modified: Sequence[str] = ()  # files modified after the cut (kept verbatim)
    #: results in the range whose calls lie before the live history: an earlier summary (or a
    #: harness's compaction that kept the result, as pi's firstKeptEntryId may) stands for them
    earlier_calls: frozenset[str] = frozenset()


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


def _facts(rows: Sequence[Mapping[str, Any]]):
    for r in rows:
        yield r["id"], r["type"], r.get("payload") or {}, r.get("causality") or {}


def range_calls(events: Sequence[Mapping[str, Any]], kept: Sequence[Mapping[str, Any]]) -> CallBook:
    """Calls of `events` still without a result after `events` + `kept`, by the one rule
    (state/calls.py): pending, or abandoned (aborted response, later prompt, interruption)."""
    return open_calls(_facts([*events, *kept]))


def abandoned_calls(events: Sequence[Mapping[str, Any]], kept: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of the calls in `events` the rule calls abandoned (a compaction lists them as errors)."""
    ids = {r["payload"].get("tool_call_id") for r in events if r["type"] == "ToolCallRequested"}
    return [t for t in range_calls(events, kept).abandoned if t in ids]


def _short(items: Sequence[str], n: int = 6) -> str:
    shown = ", ".join(items[:n])
    return shown + (f" (+{len(items) - n} more)" if len(items) > n else "")


def _text_of(items: Any) -> str:
    return "\n".join(str(x) for x in items) if isinstance(items, (list, tuple)) else str(items)


def run_checks(out: Any, facts: RangeFacts) -> list[Verdict]:
    problem = _shape_problem(out)
    verdicts = [Verdict("summarizer_output", problem is None, problem or "well-formed")]
    if problem is not None:
        return verdicts
    v = verdicts.append
    rs = facts.range_state
    v(Verdict("has_source_refs", bool(facts.events),
              f"{len(facts.events)} event(s) in range" if facts.events else "nothing to summarize"))
    task = str(out["goal"].get("current_task") or "").strip()
    if not rs.goal["current_task"] and not facts.user_goal and not task:
        v(Verdict.na("has_current_task", "no task in the range or its state"))
    else:
        v(Verdict("has_current_task", bool(task), task[:80] or "no current_task"))
    open_steps = [s["text"] for s in rs.plan["steps"] if s["status"] != "done"]
    if not out["next_steps"] and not open_steps and not task:
        v(Verdict.na("has_next_steps", "no open plan step or task to continue"))
    else:
        v(Verdict("has_next_steps", bool(out["next_steps"]),
                  f"{len(out['next_steps'])} step(s)" if out["next_steps"] else "no next_steps"))
    v(_files_verdict(out, rs, facts.kept_modified))
    v(_errors_verdict(out, rs))
    v(_pairs_verdict(out, facts))
    v(_plan_verdict(out, rs))
    goal = facts.user_goal
    if not goal:
        v(Verdict.na("goal_verbatim", "no user goal in the state"))
    else:
        carried = out["goal"].get("user_goal") == goal and goal in out["summary"]
        v(Verdict("goal_verbatim", carried, "user goal carried verbatim" if carried
                  else "the user goal is not carried verbatim in goal.user_goal and the summary"))
    if not facts.hard_constraints:
        v(Verdict.na("hard_constraints_verbatim", "no hard constraint in the state"))
    else:
        hard_out = list(out["constraints"].get("hard", ()))
        lost = [c for c in facts.hard_constraints if c not in hard_out or c not in out["summary"]]
        v(Verdict("hard_constraints_verbatim", not lost,
                  f"lost: {'; '.join(lost)}" if lost
                  else f"{len(facts.hard_constraints)} carried verbatim"))
    v(_size_verdict(facts))
    return verdicts


def _files_verdict(out: Mapping[str, Any], rs: AgentState, kept: Sequence[str]) -> Verdict:
    written = list(rs.modified_paths)
    after = [p for p in kept if p not in written]
    tail = (f"; {len(after)} more modified after the cut, kept verbatim: {_short(after, 4)}"
            if after else "")
    if not written:
        return Verdict.na("file_writes_listed", "no file modified in the range" + tail)
    listed = {str(f.get("path")) for f in out["files"].get("modified", ()) if isinstance(f, Mapping)}
    missing = [p for p in written if p not in listed]
    if missing:
        return Verdict("file_writes_listed", False,
                       f"{len(missing)} of {len(written)} modified file(s) not in files.modified: "
                       f"{_short(missing)}")
    return Verdict("file_writes_listed", True,
                   f"{len(written)} modified file(s) listed: {_short(written, 4)}{tail}")


def _errors_verdict(out: Mapping[str, Any], rs: AgentState) -> Verdict:
    errors = list(rs.errors)
    if not errors:
        return Verdict.na("tool_errors_listed", "no tool error in the range")
    ids = {str(e.get("tool_call_id")) for e in out["errors"] if isinstance(e, Mapping)}
    text = _text_of([e.get("error", "") for e in out["errors"] if isinstance(e, Mapping)])
    missing = [e["tool_call_id"] or e["error"][:40] for e in errors
               if not (e["tool_call_id"] and e["tool_call_id"] in ids)
               and not (e["error"] and e["error"][:80] in text)]
    if missing:
        return Verdict("tool_errors_listed", False,
                       f"{len(missing)} of {len(errors)} error(s) not in errors: {_short(missing)}")
    return Verdict("tool_errors_listed", True, f"{len(errors)} error(s) listed")


def _pairs_verdict(out: Mapping[str, Any], facts: RangeFacts) -> Verdict:
    called = {e["payload"].get("tool_call_id") for e in facts.events
              if e["type"] == "ToolCallRequested"} - {None, ""}
    answered = {e["payload"].get("tool_call_id") for e in facts.events if e["type"] in RESULT_TYPES}
    if not called and not answered:
        return Verdict.na("tool_pairs_intact", "no tool call in the range")
    answered_later = {e["payload"].get("tool_call_id") for e in facts.kept
                      if e["type"] in RESULT_TYPES}
    book = range_calls(facts.events, facts.kept)
    split = sorted(c for c in called & answered_later if c)
    pending = sorted(c for c in called if c in book.pending)
    abandoned = sorted(c for c in called if c in book.abandoned)
    listed = {str(e.get("tool_call_id")) for e in out["errors"] if isinstance(e, Mapping)}
    unlisted = [c for c in abandoned if c not in listed]
    orphan = sorted(c for c in answered - called - facts.earlier_calls if c)
    detail = []
    if split:
        detail.append(f"call/result split by the cut: {_short(split)}")
    if pending:
        detail.append(f"pending call(s) would be compacted away: {_short(pending)}")
    if orphan:
        detail.append(f"result(s) without their call in range: {_short(orphan)}")
    if unlisted:
        detail.append(f"abandoned call(s) not listed in errors: {_short(unlisted)}")
    note = f"; {len(abandoned)} abandoned call(s) listed as errors" if abandoned else ""
    return Verdict("tool_pairs_intact", not detail,
                   "; ".join(detail) or f"{len(called & answered)} pair(s) intact{note}")


def _plan_verdict(out: Mapping[str, Any], rs: AgentState) -> Verdict:
    steps = [s["text"] for s in rs.plan["steps"] if s["text"]]
    if not steps:
        return Verdict.na("plan_carried", "no plan in the range")
    prog = out["progress"]
    carried = _text_of([*prog.get("done", ()), *prog.get("in_progress", ()), *out["next_steps"]])
    missing = [s for s in steps if s not in carried]
    if missing:
        return Verdict("plan_carried", False,
                       f"{len(missing)} of {len(steps)} plan step(s) not in progress/next_steps: "
                       f"{_short([m[:40] for m in missing], 3)}")
    return Verdict("plan_carried", True, f"{len(steps)} plan step(s) carried")


def _size_verdict(facts: RangeFacts) -> Verdict:
    s, r = facts.summary_tokens, facts.replaced_tokens
    if facts.kind == "merge" and r < MERGE_MIN_SUMMARY_TOKENS:
        return Verdict("smaller_than_replaced", s <= MERGE_MIN_SUMMARY_TOKENS,
                       f"small branch ({r} tokens): summary {s} tokens, at most "
                       f"{MERGE_MIN_SUMMARY_TOKENS} allowed")
    return Verdict("smaller_than_replaced", s < r, f"summary {s} tokens vs {r} replaced")
