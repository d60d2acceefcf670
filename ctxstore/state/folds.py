"""The state projection: one small pure function per event type, folded oldest to newest.

Events all share one class, so the registry dispatches on `event.type` (a string) the way
`functools.singledispatch` dispatches on a class. Types without a fold function (custom
namespaced types, ContextBuilt, ...) leave the state unchanged except for
`version` and `source_event`, which every fold advances. Because each fold is pure and only
depends on (state, event), projecting from scratch and resuming from any snapshot agree.

Entry points: `fold(state, event_id, event, messages)` and `project(events, start, messages)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ..objects.event import Event
from ..objects.frozen import FrozenMap, freeze
from ..objects.message import Message
from . import calls
from .effects import hooks as _effect_hooks
from .effects import prompt_fold
from .model import PLAN_STATUSES, AgentState, evolve, note_approval

MessageLookup = Callable[[str], "Message | None"]
FoldFn = Callable[[AgentState, str, Event, MessageLookup], AgentState]

#: Goal texts taken from prompts are cut to this many characters (the message stays whole).
GOAL_TEXT_LIMIT = 2000

_FOLDS: dict[str, FoldFn] = {}
#: Read-only view of the registry: event type -> fold function.
FOLDS = MappingProxyType(_FOLDS)
_EFFECT_HOOKS = _effect_hooks()


def no_messages(_message_id: str) -> Message | None:
    return None


def folds(*types: str) -> Callable[[FoldFn], FoldFn]:
    """Register the decorated function as the fold of each event type named."""
    def deco(fn: FoldFn) -> FoldFn:
        for t in types:
            _FOLDS[t] = fn
        return fn
    return deco


def fold(state: AgentState, event_id: str, event: Event,
         messages: MessageLookup = no_messages) -> AgentState:
    """The state after `event` (named `event_id`). Pure: neither argument is changed."""
    fn = _FOLDS.get(event.type)
    if fn is not None:
        state = fn(state, event_id, event, messages)
    hook = _EFFECT_HOOKS.get(event.type)
    if hook is not None:  # tool semantics, goal and title (state/effects.py)
        state = hook(state, event_id, event, messages)
    state = _open_calls(state, event_id, event)
    return evolve(state, version=state.version + 1, source_event=event_id)


def _open_calls(state: AgentState, event_id: str, event: Event) -> AgentState:
    """Pending vs abandoned calls, by the one rule (state/calls.py), after every event."""
    tc = state.tool_calls
    book = calls.CallBook(tc["pending"], tc["abandoned"], tc["stopped"])
    new = calls.step(book, event_id, event.type, event.payload, event.causality)
    if new is book:
        return state
    return evolve(state, tool_calls=FrozenMap({**tc, "pending": new.pending,
                                               "abandoned": new.abandoned,
                                               "stopped": new.stopped}))


def project(events: Iterable[tuple[str, Event]], start: AgentState | None = None,
            messages: MessageLookup = no_messages) -> AgentState:
    """Fold `(event_id, event)` pairs, oldest first, onto `start` (or the empty state).

    To resume from a snapshot pass its state as `start` and only the events after its
    `source_event`.
    """
    state = start if start is not None else AgentState()
    for event_id, event in events:
        state = fold(state, event_id, event, messages)
    return state


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def _str(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def _strs(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, (list, tuple)):
        return tuple(_str(x) for x in v if x is not None)
    return (_str(v),)


def _cut(text: str, limit: int = GOAL_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _set(m: FrozenMap, **kw: Any) -> FrozenMap:
    return FrozenMap({**m, **{k: freeze(v) for k, v in kw.items()}})


def _upsert(items: tuple, key: str, entry: dict, keep_if_empty: tuple[str, ...] = ()) -> tuple:
    """Replace the entry with the same `key` value (moving it last), or append it."""
    old = None
    rest = []
    for it in items:
        if it[key] == entry[key]:
            old = it
        else:
            rest.append(it)
    if old is not None:
        for k in keep_if_empty:
            if not entry.get(k):
                entry[k] = old[k]
    rest.append(FrozenMap(entry))
    return tuple(rest)


def _add_unique(items: tuple, new: Iterable[str]) -> tuple:
    seen = set(items)
    out = list(items)
    for x in new:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return tuple(out)


_ARTIFACT_KIND = {"FileRead": "file", "FileWritten": "file", "DiffApplied": "diff",
                  "ToolCallFinished": "tool_output", "ToolCallFailed": "tool_output",
                  "VerifierFinished": "command_log"}


def _note_artifact(state: AgentState, event: Event, summary: str) -> AgentState:
    """Record the event's `causality.artifact_id` in state.artifacts (once per id)."""
    aid = event.causality.get("artifact_id")
    if not isinstance(aid, str) or not aid or any(a["artifact_id"] == aid for a in state.artifacts):
        return state
    entry = FrozenMap({"artifact_id": aid, "kind": _ARTIFACT_KIND.get(event.type, "other"),
                       "uri": _str(event.payload.get("path")), "summary": _cut(summary, 500)})
    return evolve(state, artifacts=state.artifacts + (entry,))


# --------------------------------------------------------------------------------------------
# one fold per event type
# --------------------------------------------------------------------------------------------

@folds("SessionStarted")
def _session_started(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    p = event.payload
    goal = _str(p.get("goal"))
    out = evolve(state, session=_str(p.get("session")) or state.session)
    if goal:
        out = evolve(out, goal=_set(out.goal, user_goal=_cut(goal)))
    return out


folds("UserPromptSubmitted")(prompt_fold)  # goal and current task without markup


@folds("StateUpdated")
def _state_updated(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    return apply_patch(state, eid, event.payload.get("patch"))


@folds("BranchMerged")
def _branch_merged(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    """A merge carries the branch's conclusions (facts, decisions, constraints, open questions;
    `ctxstore.compaction.carry.merge_patch`) as `payload.patch`, applied like a StateUpdated
    patch; a merge recorded without one changes nothing."""
    return apply_patch(state, eid, event.payload.get("patch"))


def apply_patch(state: AgentState, eid: str, patch: Any) -> AgentState:
    """The state after a `patch` (docs/events.md StateUpdated) written by event EID."""
    if not isinstance(patch, Mapping):
        return state
    kw: dict[str, Any] = {}
    g = patch.get("goal")
    if isinstance(g, Mapping):
        upd = {k: _str(g[k]) for k in ("user_goal", "current_task") if k in g}
        if "acceptance_criteria" in g:
            upd["acceptance_criteria"] = _strs(g["acceptance_criteria"])
        kw["goal"] = _set(state.goal, **upd)
    p = patch.get("plan")
    if isinstance(p, Mapping):
        upd = {}
        if "steps" in p:
            upd["steps"] = _plan_steps(p["steps"])
        if "current_step_id" in p:
            upd["current_step_id"] = _str(p["current_step_id"])
        if p.get("status") in PLAN_STATUSES:
            upd["status"] = p["status"]
        kw["plan"] = _set(state.plan, **upd)
    c = patch.get("constraints")
    if isinstance(c, Mapping):
        kw["constraints"] = _set(state.constraints, **{
            k: _add_unique(state.constraints[k], _strs(c[k]))
            for k in ("hard", "soft", "preferences") if k in c})
    if "facts_add" in patch:
        kw["facts"] = _append_dedup(state.facts, "content",
                                    (_fact(x, eid) for x in _items(patch["facts_add"])))
    if "decisions_add" in patch:
        kw["decisions"] = _append_dedup(state.decisions, "decision",
                                        (_decision(x, eid) for x in _items(patch["decisions_add"])))
    oq = state.open_questions
    if "open_questions_add" in patch:
        oq = _add_unique(oq, _strs(patch["open_questions_add"]))
    if "open_questions_remove" in patch:
        gone = set(_strs(patch["open_questions_remove"]))
        oq = tuple(q for q in oq if q not in gone)
    if oq != state.open_questions:
        kw["open_questions"] = oq
    return evolve(state, **kw) if kw else state


def _items(v: Any) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


def _plan_steps(v: Any) -> tuple:
    steps = []
    for i, s in enumerate(_items(v), 1):
        if isinstance(s, Mapping):
            steps.append({"id": _str(s.get("id")) or str(i), "text": _str(s.get("text")),
                          "status": _str(s.get("status")) or "pending"})
        elif s is not None:
            steps.append({"id": str(i), "text": _str(s), "status": "pending"})
    return freeze(steps)


def _fact(x: Any, eid: str) -> dict | None:
    if isinstance(x, Mapping):
        content = _str(x.get("content"))
        conf = x.get("confidence", 1.0)
        conf = float(conf) if isinstance(conf, (int, float)) and conf == conf else 1.0
        refs = _strs(x.get("source_refs")) or (eid,)
    else:
        content, conf, refs = _str(x), 1.0, (eid,)
    return {"content": content, "confidence": conf, "source_refs": refs} if content else None


def _decision(x: Any, eid: str) -> dict | None:
    if isinstance(x, Mapping):
        text = _str(x.get("decision"))
        rationale = _str(x.get("rationale"))
        refs = _strs(x.get("evidence_refs")) or (eid,)
    else:
        text, rationale, refs = _str(x), "", (eid,)
    return {"decision": text, "rationale": rationale, "evidence_refs": refs} if text else None


def _append_dedup(items: tuple, key: str, new: Iterable[dict | None]) -> tuple:
    seen = {it[key] for it in items}
    out = list(items)
    for entry in new:
        if entry is not None and entry[key] not in seen:
            seen.add(entry[key])
            out.append(freeze(entry))
    return tuple(out)


@folds("FileRead")
def _file_read(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    path = _str(event.payload.get("path"))
    if path:
        read = _upsert(state.files["read"], "path", {"path": path, "event": eid})
        state = evolve(state, files=_set(state.files, read=read))
    return _note_artifact(state, event, _str(event.payload.get("summary")))


@folds("ArtifactAdded")
def _artifact_added(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    return _note_artifact(state, event, _str(event.payload.get("summary") or event.payload.get("path")))


@folds("FileWritten", "DiffApplied")
def _file_written(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    path = _str(event.payload.get("path"))
    summary = _str(event.payload.get("change_summary"))
    if path:
        modified = _upsert(state.files["modified"], "path",
                           {"path": path, "change_summary": summary, "event": eid},
                           keep_if_empty=("change_summary",))
        state = evolve(state, files=_set(state.files, modified=modified))
    return _note_artifact(state, event, summary)


@folds("ToolCallRequested")
def _tool_requested(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    """The call itself is tracked by `_open_calls` (pending or abandoned, state/calls.py)."""
    return state


@folds("ToolCallStarted")
def _tool_started(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    tcid = _tool_call_id(event)
    call = state.pending_tool_calls.get(tcid)
    if call is None:
        return state
    pending = FrozenMap({**state.pending_tool_calls, tcid: _set(call, status="running")})
    return evolve(state, tool_calls=_set(state.tool_calls, pending=pending))


def _tool_call_id(event: Event) -> str:
    return _str(event.payload.get("tool_call_id") or event.causality.get("tool_call_id"))


def _call_name(state: AgentState, tcid: str) -> str:
    """The name of an open call (pending or abandoned); `_open_calls` closes it."""
    call = state.pending_tool_calls.get(tcid) or state.abandoned_tool_calls.get(tcid)
    return call["name"] if call is not None else ""


@folds("ToolCallFinished")
def _tool_finished(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    tc = _set(state.tool_calls, completed=state.tool_calls["completed"] + 1)
    state = evolve(state, tool_calls=tc)  # errors it retries: state/effects.py
    return _note_artifact(state, event, _str(event.payload.get("preview")))


@folds("ToolCallFailed")
def _tool_failed(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    tcid = _tool_call_id(event)
    error = _cut(_str(event.payload.get("error")), 1000)
    entry = FrozenMap({"tool_call_id": tcid,
                       "name": _str(event.payload.get("name")) or _call_name(state, tcid),
                       "error": error, "event": eid, "retried": bool(event.payload.get("retry"))})
    tc = _set(state.tool_calls, failed=state.tool_calls["failed"] + 1)
    state = evolve(state, tool_calls=tc, errors=state.errors + (entry,))
    return _note_artifact(state, event, error)


@folds("ApprovalRequested", "ApprovalGranted", "ApprovalDenied")
def _approval(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    """Requests, grants and denials land in `approvals` (a decision closes the newest open
    request of the same approval id or tool call); a denial is also an error entry — the call
    stays pending until its Failed event."""
    tcid = _tool_call_id(event)
    call = state.pending_tool_calls.get(tcid) if tcid else None
    reason = _str(event.payload.get("reason"))
    name = _str(event.payload.get("name")) or (call["name"] if call else "")
    status = {"ApprovalRequested": "requested", "ApprovalGranted": "granted"}.get(event.type,
                                                                                  "denied")
    state = note_approval(state, eid, status, tcid, name, reason, "event",
                          _str(event.payload.get("approval_id")))
    if status != "denied":
        return state
    entry = FrozenMap({"tool_call_id": tcid, "name": name,
                       "error": "approval denied" + (f": {reason}" if reason else ""),
                       "event": eid, "retried": False})
    return evolve(state, errors=state.errors + (entry,))


@folds("VerifierFinished")
def _verifier(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    p = event.payload
    entry = freeze({"check": _str(p.get("check")), "result": _str(p.get("result")),
                    "event": eid, "evidence_refs": _strs(p.get("evidence_refs"))})
    state = evolve(state, validations=state.validations + (entry,))
    return _note_artifact(state, event, f"{entry['check']}: {entry['result']}")


@folds("CompactionCompleted")
def _compaction(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    cid = event.causality.get("compaction_id")
    return evolve(state, last_compaction=cid if isinstance(cid, str) and cid else eid)
