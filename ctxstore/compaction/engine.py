"""Compaction and merge: summarize a range of a branch, check it, and only then record it.

Nothing is deleted or rewritten. A compaction appends one CompactionCompleted event naming a
Compaction record that lists exactly the events it replaced; the context builder then uses the
record's summary + the state + the events from `first_kept` on. A merge appends a BranchMerged
event (second parent = the branch's tip) naming a record of what the branch did and found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadRevision, CompactionRejected
from ..objects import Compaction, Event, thaw
from ..refs import branch_ref
from ..state import AgentState, project
from .carry import merge_patch
from .checks import RangeFacts, Verdict, abandoned_calls, run_checks
from .live import Boundary, live_events
from .summarizers import StructuredSummarizer, Summarizer
from .target import CompactionTarget
from .text import event_text

DEFAULT_KEEP_RECENT_TOKENS = 2000
POLICY_ID = "structured-v1"


@dataclass
class CompactionResult:
    committed: bool
    kind: str
    compaction_id: str | None
    event_id: str | None
    first_event: str | None
    last_event: str | None
    first_kept: str | None
    summarized: int
    tokens_before: int
    tokens_after: int
    summarizer: str
    checks: list[Verdict] = field(default_factory=list)
    previous: str = ""
    noop: str = ""  # why there was nothing to do ("nothing to compact: ..."); not an error
    note: str = ""  # e.g. the fallback: which summarizer was rejected and which one was used


    @property
    def failed(self) -> list[Verdict]:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        return {"committed": self.committed, "kind": self.kind, "compaction_id": self.compaction_id,
                "event_id": self.event_id,
                "summarized_range": {"first": self.first_event, "last": self.last_event},
                "first_kept": self.first_kept, "summarized_events": self.summarized,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "summarizer": self.summarizer, "previous": self.previous,
                "noop": self.noop, "note": self.note, "checks": [c.to_dict() for c in self.checks]}


def _live_history(cm: CompactionTarget, tip: str) -> tuple[list[tuple[str, Event]], Compaction | None, str]:
    """First-parent events after the newest compaction (from its first_kept), oldest first."""
    boundary = Boundary()
    out = list(live_events(cm.repo.graph, cm.repo.objects, tip, boundary))
    out.reverse()
    return out, boundary.record, boundary.record_id


def _pairs_split(live: list[tuple[str, Event]], k: int) -> bool:
    before = {ev.payload.get("tool_call_id") for _, ev in live[:k] if ev.type == "ToolCallRequested"}
    return any(ev.type in ("ToolCallFinished", "ToolCallFailed")
               and ev.payload.get("tool_call_id") in before for _, ev in live[k:])


def _choose_cut(live, costs: list[int], keep_recent: int) -> int:
    """Index of the first kept event: keep at least `keep_recent` tokens, never split a pair."""
    kept, k = 0, len(live)
    while k > 0 and kept < keep_recent:
        k -= 1
        kept += costs[k]
    while 0 < k < len(live) and _pairs_split(live, k):
        k -= 1
    return k


def _event_row(cm: CompactionTarget, eid: str, ev: Event) -> dict[str, Any]:
    mid = ev.causality.get("message_id")
    msg = cm.projector.message(mid) if mid else None
    return {"id": eid, "type": ev.type, "actor": ev.actor, "payload": thaw(ev.payload),
            "causality": thaw(ev.causality), "ts": ev.ts, "text": event_text(ev, msg),
            "artifact_id": ev.causality.get("artifact_id", "")}


def _counting(summarizer, cm):
    """A structured summarizer counts its budget with the context manager's tokenizer."""
    if isinstance(summarizer, StructuredSummarizer) and summarizer.tokenizer is None:
        summarizer.tokenizer = cm.tokenizer
    return summarizer


def _summarize(summarizer: Summarizer, request: Mapping[str, Any]) -> tuple[Any, str | None]:
    try:
        return summarizer(request), None
    except CompactionRejected as exc:
        return None, str(exc)


def _record(out: Mapping[str, Any], **fields: Any) -> Compaction:
    keys = ("summary", "goal", "constraints", "progress", "files", "tool_results", "errors",
            "decisions", "open_questions", "next_steps")
    return Compaction(**{k: thaw(out[k]) for k in keys}, state_patch=thaw(out.get("state_patch", {})),
                      memory_candidates=thaw(out.get("memory_candidates", [])), **fields)


def _verdicts(cm: CompactionTarget, out, error, rows, kept_rows, state, prev_summary_tokens,
              replaced, rstate: AgentState, kind: str = "compaction",
              kept_modified: tuple[str, ...] = ()):
    if error is not None:
        return [Verdict("summarizer_output", False, error)], 0
    summary_tokens = cm.tokenizer.count(out["summary"]) if isinstance(out, Mapping) and \
        isinstance(out.get("summary"), str) else 0
    live_calls = {r["payload"].get("tool_call_id") for r in (*rows, *kept_rows)
                  if r["type"] == "ToolCallRequested"}
    earlier = frozenset(r["payload"].get("tool_call_id") for r in rows
                        if r["type"] in ("ToolCallFinished", "ToolCallFailed")
                        and r["payload"].get("tool_call_id") not in live_calls) - {None, ""}
    facts = RangeFacts(rows, kept_rows, state.goal["user_goal"], tuple(state.constraints["hard"]),
                       replaced + prev_summary_tokens, summary_tokens, rstate, kind,
                       kept_modified, earlier if kind == "compaction" else frozenset())
    return run_checks(out, facts), summary_tokens


def range_state(cm: CompactionTarget, events: list[tuple[str, Event]]) -> AgentState:
    """The replaced range folded from the empty state: what happened in it (files modified,
    errors, open calls, plan), which is what the checks hold the summary to."""
    return project(events, messages=cm.projector.message)


def _refuse_if_failed(result: CompactionResult, what: str) -> None:
    """A record with any failed check does not count: say which rules failed, write nothing."""
    if result.failed:
        raise CompactionRejected(
            f"{what} refused; failed checks: "
            + "; ".join(f"{c.rule} ({c.detail})" for c in result.failed), result=result.to_dict())


def _provenance(result: CompactionResult, summarizer: Summarizer, policy_id: str,
                **extra: Any) -> dict[str, Any]:
    """Who summarized, with what: a model-backed summarizer adds its `provenance` (model id,
    prompt version); a fallback says which summarizer it replaced and why."""
    return {"summarizer": result.summarizer, "summarizer_version": getattr(summarizer, "version", ""),
            "policy_id": policy_id, **dict(getattr(summarizer, "provenance", None) or {}),
            **({"note": result.note} if result.note else {}), **extra}


def _checked_summary(summarizer: Summarizer, fallback: Summarizer | None,
                     request: Mapping[str, Any], judge):
    """(out, verdicts, summary_tokens, summarizer used, note). `judge(out, error)` runs the
    checks. When `summarizer`'s output fails them and a `fallback` is given, the fallback's
    output is checked and used instead, and the note says so."""
    out, error = _summarize(summarizer, request)
    verdicts, tokens = judge(out, error)
    failed = [v for v in verdicts if not v.ok]
    if not failed or fallback is None:
        return out, verdicts, tokens, summarizer, ""
    out2, error2 = _summarize(fallback, request)
    verdicts2, tokens2 = judge(out2, error2)
    note = (f"{getattr(summarizer, 'name', '?')} was rejected ("
            + "; ".join(f"{v.rule}: {v.detail}" for v in failed)[:400]
            + f"); fell back to {getattr(fallback, 'name', '?')}")
    return out2, verdicts2, tokens2, fallback, note


def _snapshot_first(cm: CompactionTarget) -> None:
    """The session option `auto_snapshot` records the files before each compaction
    (ctxstore.workspace.auto), so the summary's point in time has its files too."""
    if cm.repo.path is None:
        return
    from ..workspace.auto import before_compaction

    before_compaction(cm)


def compact(cm: CompactionTarget, rev: str | None = None, policy: Mapping[str, Any] | None = None, *,
            keep_recent_tokens: int | None = None, summarizer: Summarizer | None = None,
            cut_at: str | None = None, dry_run: bool = False, ts: str | None = None,
            fallback: Summarizer | None = None) -> CompactionResult:
    """Compact the branch `cm` is bound to (REV, if given, must be its tip).

    Raises CompactionRejected (listing the failed rules) if a check fails; with dry_run the
    result is returned instead and nothing is written either way. With `fallback`, a summary
    that fails its checks is replaced by the fallback's (checked the same way; `result.note`
    says so). Nothing to compact is not an error: the result's `noop` says why."""
    policy = dict(policy or {})
    if not dry_run and (rev is None or cm.resolve(rev) == cm.tip):
        _snapshot_first(cm)
        rev = None
    tip = cm.tip
    if rev is not None and cm.resolve(rev) != tip:
        raise BadRevision(f"compaction works on a branch tip: {rev} is not the tip of {cm.branch}")
    summarizer = _counting(summarizer or StructuredSummarizer(), cm)
    fallback = _counting(fallback, cm)
    keep = int(keep_recent_tokens if keep_recent_tokens is not None else
               policy.get("keep_recent_tokens", DEFAULT_KEEP_RECENT_TOKENS))
    live, prev, prev_id = _live_history(cm, tip)
    rows = [_event_row(cm, eid, ev) for eid, ev in live]
    costs = [cm.tokenizer.count(r["text"]) for r in rows]
    if cut_at is not None:
        ids = [eid for eid, _ in live]
        if cut_at not in ids:
            raise BadRevision(f"cut point {cut_at[:12]} is not in the live history of {cm.branch}")
        k = ids.index(cut_at)
    else:
        k = _choose_cut(live, costs, keep)
    prev_summary_tokens = cm.tokenizer.count(prev.summary) if prev else 0
    if k == 0:
        why = (f"nothing to compact: the {sum(costs):,} tokens since the last compaction fit in "
               f"--keep-recent-tokens {keep:,} (or no cut keeps every tool call with its result)")
        total = sum(costs) + prev_summary_tokens
        return CompactionResult(False, "compaction", None, None, None, None,
                                live[0][0] if live else None, 0, total, total,
                                getattr(summarizer, "name", "?"), [], prev_id, noop=why)
    summarized, kept = rows[:k], rows[k:]
    state = cm.projector.project(live[k - 1][0])
    rstate = range_state(cm, live[:k])
    request = {"kind": "compaction", "state": state.to_dict(), "range_state": rstate.to_dict(),
               "events": summarized,
               "previous": prev.to_dict() if prev else None, "policy": {"id": POLICY_ID, **policy},
               "abandoned_tool_calls": abandoned_calls(summarized, kept)}
    replaced = sum(costs[:k])
    out, verdicts, summary_tokens, summarizer, note = _checked_summary(
        summarizer, fallback, request,
        lambda o, e: _verdicts(cm, o, e, summarized, kept, state, prev_summary_tokens, replaced,
                               rstate, "compaction", range_state(cm, live[k:]).modified_paths))
    kept_tokens = sum(costs[k:])
    result = CompactionResult(
        committed=False, kind="compaction", compaction_id=None, event_id=None,
        first_event=summarized[0]["id"], last_event=summarized[-1]["id"], first_kept=kept[0]["id"]
        if kept else None, summarized=k, tokens_before=replaced + prev_summary_tokens + kept_tokens,
        tokens_after=summary_tokens + kept_tokens, summarizer=getattr(summarizer, "name", "?"),
        checks=verdicts, previous=prev_id, note=note)
    if dry_run:
        return result
    _refuse_if_failed(result, "compaction")
    if not kept:
        raise CompactionRejected("compaction refused: it would keep no event verbatim after the cut")
    record = _record(out, session=cm.session, first_event=result.first_event,
                     last_event=result.last_event, first_kept=result.first_kept,
                     source_event_ids=[r["id"] for r in summarized],
                     tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                     provenance=_provenance(result, summarizer, policy.get("id", POLICY_ID)),
                     previous=prev_id, kind="compaction")
    result.compaction_id = cm.repo.objects.put_object(record)
    with cm.repo.transaction(cm.ref, message="compact", rebase=False) as tx:
        if tx.base != tip:
            raise CompactionRejected(f"branch {cm.branch} moved during compaction; retry")
        result.event_id = tx.append(
            "CompactionCompleted", "system",
            {"tokens_before": result.tokens_before, "tokens_after": result.tokens_after,
             "summarized_events": k, "first_kept": result.first_kept, "summarizer": result.summarizer},
            {"compaction_id": result.compaction_id}, ts)
        if record.memory_candidates:  # held for review in the same operation, never promoted
            from ..memory.review import queue_candidates

            queue_candidates(tx, result.compaction_id, len(record.memory_candidates))
    result.committed = True
    return result


def merge_branch(cm: CompactionTarget, branch: str, *, summarizer: Summarizer | None = None,
                 dry_run: bool = False, ts: str | None = None,
                 fallback: Summarizer | None = None,
                 other_tip: str | None = None) -> CompactionResult:
    """Merge BRANCH's conclusions (not its raw events) into the branch `cm` is bound to.

    `other_tip`: the event BRANCH names when the caller resolved a revision that is no branch
    of this session (`origin/SESSION/main` after a diverged pull, an event id); BRANCH is then
    only its label in the merge record."""
    other = other_tip or cm.repo.refs.read(branch_ref(cm.session, branch))
    if other is None:
        raise BadRevision(f"no branch {branch!r} in this session")
    tip = cm.tip
    graph = cm.repo.graph
    summarizer = _counting(summarizer or StructuredSummarizer(), cm)
    fallback = _counting(fallback, cm)
    if graph.is_ancestor(other, tip):
        return CompactionResult(False, "merge", None, None, None, None, None, 0, 0, 0,
                                getattr(summarizer, "name", "?"),
                                noop=f"nothing to merge: {branch} is already contained in "
                                     f"{cm.branch}")
    d = graph.diff(other, tip)
    ids = list(reversed(d.only_a))
    live = [(i, graph.event(i)) for i in ids]
    rows = [_event_row(cm, eid, ev) for eid, ev in live]
    costs = [cm.tokenizer.count(r["text"]) for r in rows]
    state = cm.projector.project(other)
    rstate = range_state(cm, live)
    carried = merge_patch(cm.projector.project(d.base) if d.base else AgentState(), state)
    request = {"kind": "merge", "branch": branch, "state": state.to_dict(),
               "range_state": rstate.to_dict(), "events": rows,
               "previous": None, "policy": {"id": POLICY_ID},
               "abandoned_tool_calls": abandoned_calls(rows, [])}
    out, verdicts, summary_tokens, summarizer, note = _checked_summary(
        summarizer, fallback, request,
        lambda o, e: _verdicts(cm, o, e, rows, [], state, 0, sum(costs), rstate, "merge"))
    result = CompactionResult(False, "merge", None, None, ids[0] if ids else None,
                              ids[-1] if ids else None, None, len(ids), sum(costs), summary_tokens,
                              getattr(summarizer, "name", "?"), verdicts, note=note)
    if dry_run:
        return result
    _refuse_if_failed(result, "merge")
    record = _record({**out, "state_patch": carried}, session=cm.session,
                     first_event=result.first_event or "",
                     last_event=result.last_event or "", first_kept="", source_event_ids=ids,
                     tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                     provenance=_provenance(result, summarizer, POLICY_ID, branch=branch,
                                            branch_tip=other),
                     kind="merge")
    result.compaction_id = cm.repo.objects.put_object(record)
    with cm.repo.transaction(cm.ref, message=f"merge {branch}", rebase=False) as tx:
        if tx.base != tip:
            raise CompactionRejected(f"branch {cm.branch} moved during the merge; retry")
        payload = {"branch": branch, "summary": out["summary"][:2000], "merged_events": len(ids)}
        if carried:  # the branch's conclusions, folded into the target's state (state/folds.py)
            payload["patch"] = carried
        result.event_id = tx.append("BranchMerged", "agent", payload,
                                    {"compaction_id": result.compaction_id}, ts,
                                    extra_parents=(other,))
        if record.memory_candidates:  # held for review in the same operation, never promoted
            from ..memory.review import queue_candidates

            queue_candidates(tx, result.compaction_id, len(record.memory_candidates))
    result.committed = True
    return result
