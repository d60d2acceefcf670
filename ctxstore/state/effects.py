"""Applying tool semantics (state/tools.py) to the state: files, plan, errors, titles, goal.

These folds run after the per-type folds of folds.py (which keep the pending-call table and
the counters) and only touch the sections they own:

- ToolCallRequested: the call's effects are worked out from its full arguments (the message
  holding the call is read when the event's args preview was cut). A plan effect applies at
  once — the plan is what the model declared, also while its result is outstanding — and is
  undone if the result says the call failed (unless a newer plan replaced it); file effects
  wait in `tool_effects` for the result.
- ToolCallFinished / ToolCallFailed: the harness's rule reads the result ("ok", "error",
  "denied"). Only "ok" applies the waiting file effects (read → files.read, modify →
  files.modified with a change summary and the call's message as diff ref). A failure
  becomes an error entry (kind "error" or "denied"); a later successful call of the same tool
  on the same target (its files, else its command) marks the error retried.
- UserPromptSubmitted: goal and current task from the request with harness markup removed
  (state/prompts.py); slash commands become the current task, never the goal.
- Title records of the harnesses set `title` (newest wins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..objects.event import Event
from ..objects.frozen import EMPTY, FrozenMap, freeze
from ..objects.message import ToolCallBlock, ToolResultBlock
from .model import AgentState, evolve, note_approval
from .prompts import COMMAND, PROMPT, classify_prompt
from .tools import DENIED, OK, Effect, call_effects, default_outcome, is_ambiguous, tool_spec

HookFn = Callable[[AgentState, str, Event, Any], AgentState]

_HOOKS: dict[str, HookFn] = {}
GOAL_TEXT_LIMIT = 2000
#: Event types (and payload keys) that carry a session title recorded by the harness.
TITLE_EVENTS = {"claude-code:summary": "text", "claude-code:custom-title": "title",
                "claude-code:ai-title": "title", "codex:event_msg": "title",
                "pi:session_info": "name", "SessionStarted": "title",
                "gemini:metadata": "title"}


def hooks() -> Mapping[str, HookFn]:
    return _HOOKS


def _hook(*types: str):
    def deco(fn: HookFn) -> HookFn:
        for t in types:
            _HOOKS[t] = fn
        return fn
    return deco


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _set(m: FrozenMap, **kw: Any) -> FrozenMap:
    return FrozenMap({**m, **{k: freeze(v) for k, v in kw.items()}})


def _tcid(event: Event) -> str:
    return _str(event.payload.get("tool_call_id") or event.causality.get("tool_call_id"))


def _message(messages, event: Event):
    mid = event.causality.get("message_id")
    return messages(mid) if isinstance(mid, str) and mid else None


def _harness(msg) -> str:
    """The harness a call came from: its message's `provenance.harness` (ContextManager), or
    the importer's format in `provenance.source`."""
    if msg is None:
        return ""
    src = msg.provenance.get("harness") or msg.provenance.get("source")
    return src if isinstance(src, str) else ""


# --------------------------------------------------------------------------------------------
# goal and title


def prompt_fold(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    """The first request is the goal, the newest request (or model-facing slash command) the
    current task; markup, harness commands and markers change neither."""
    msg = _message(messages, event)
    text = (msg.text if msg is not None else "") or _str(event.payload.get("text"))
    kind, cleaned = classify_prompt(text)
    if kind not in (PROMPT, COMMAND):
        return state
    cleaned = _cut(cleaned, GOAL_TEXT_LIMIT)
    goal = _set(state.goal, current_task=cleaned)
    if kind == PROMPT and not goal["user_goal"]:
        goal = _set(goal, user_goal=cleaned)
    return evolve(state, goal=goal)


def _title_hook(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    key = TITLE_EVENTS[event.type]
    title = _str(event.payload.get(key)).strip()
    if not title or (event.type == "codex:event_msg"
                     and event.payload.get("subtype") != "thread_name_updated"):
        return state
    return evolve(state, title=_cut(" ".join(title.split()), 200))


for _t in TITLE_EVENTS:
    _HOOKS[_t] = _title_hook


# --------------------------------------------------------------------------------------------
# tool calls


def _full_args(event: Event, messages) -> tuple[Any, str]:
    """The call's whole arguments (from its message when the preview was cut) and harness."""
    args = event.payload.get("args", EMPTY)
    msg = None
    if event.payload.get("args_truncated") or is_ambiguous(_str(event.payload.get("name"))):
        msg = _message(messages, event)
    if msg is not None and event.payload.get("args_truncated"):
        tcid = _tcid(event)
        for b in msg.blocks:
            if isinstance(b, ToolCallBlock) and b.tool_call_id == tcid:
                args = b.args
                break
    return args, _harness(msg)


@_hook("ToolCallRequested")
def _requested(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    name = _str(event.payload.get("name"))
    tcid = _tcid(event)
    if not name or not tcid:
        return state
    effects: tuple[Effect, ...] = ()
    harness = ""
    if tool_spec(name) is not None:
        args, harness = _full_args(event, messages)
        effects = call_effects(name, _thawed(args), harness)
    out = state
    for e in effects:
        if e.kind in ("plan", "plan_add", "plan_status", "plan_text"):
            out = _apply_plan(out, e)
        elif e.kind == "spawn":
            out = evolve(out, subagents=out.subagents + (freeze({
                "tool_call_id": tcid, "name": name, "description": e.summary,
                "status": "running", "event": eid}),))
    # every open call is kept: its result needs the name, the harness and the waiting effects
    ref = event.causality.get("message_id", "")
    files = [e.to_dict() for e in effects if e.kind in ("read", "modify")]
    # what a retry must aim at: the same files, else the same command
    targets = [e["path"] for e in files if e.get("path")] or \
        [e.summary for e in effects if e.kind == "exec" and e.summary][:1]
    entry = {"name": name, "harness": harness, "event": eid, "effects": files,
             "targets": targets, **({"ref": ref} if isinstance(ref, str) and ref else {})}
    if out.plan != state.plan:  # a failed plan call leaves the plan it replaced
        entry["plan_before"], entry["plan_after"] = state.plan, out.plan
    return evolve(out, tool_effects=FrozenMap({**out.tool_effects, tcid: freeze(entry)}))


def _thawed(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _thawed(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_thawed(x) for x in v]
    return v


def _plan_status(steps: tuple) -> tuple[str, str]:
    """(current step id, plan status) for a list of steps."""
    current = next((s["id"] for s in steps if s["status"] == "in_progress"), "")
    live = [s for s in steps if s["status"] not in ("cancelled", "deleted")]
    if live and all(s["status"] == "completed" for s in live):
        return "", "done"
    return current, "executing" if current or any(s["status"] == "completed" for s in live) \
        else "planning"


def _apply_plan(state: AgentState, e: Effect) -> AgentState:
    steps = state.plan["steps"]
    if e.kind == "plan":
        steps = freeze(list(e.steps))
    elif e.kind == "plan_text":
        if steps or not e.steps:
            return state
        steps = freeze(list(e.steps))
    elif e.kind == "plan_add":
        steps = steps + (freeze({"id": e.path or str(len(steps) + 1), "text": e.summary,
                                 "status": "pending"}),)
    elif e.kind == "plan_status":
        if e.op == "deleted":
            steps = tuple(s for s in steps if s["id"] != e.path)
        else:
            steps = tuple(_set(s, status=e.op) if s["id"] == e.path else s for s in steps)
    current, status = _plan_status(steps)
    return evolve(state, plan=_set(state.plan, steps=steps, current_step_id=current,
                                   status=status))


def _result_text(event: Event, messages, spec) -> str:
    p = event.payload
    text = _str(p.get("error")) if event.type == "ToolCallFailed" else _str(p.get("preview"))
    if spec is not None and spec.reads_result:
        msg = _message(messages, event)
        for b in (msg.blocks if msg is not None else ()):
            if isinstance(b, ToolResultBlock):
                return b.text or b.preview or text
    return text


@_hook("ToolCallFinished", "ToolCallFailed")
def _finished(state: AgentState, eid: str, event: Event, messages) -> AgentState:
    tcid = _tcid(event)
    waiting = state.tool_effects.get(tcid) if tcid else None
    name = _str(event.payload.get("name")) or (waiting["name"] if waiting else "")
    spec = tool_spec(name, waiting["harness"] if waiting else "") if name else None
    failed = event.type == "ToolCallFailed"
    text = _result_text(event, messages, spec)
    if spec is not None and spec.reads_result:
        outcome = spec.outcome(text, failed, effects=tuple(waiting["effects"]) if waiting else ())
    else:
        outcome = (spec.outcome if spec is not None else default_outcome)(text, failed)
    out = state
    if waiting is not None:
        out = evolve(out, tool_effects=FrozenMap({k: v for k, v in out.tool_effects.items()
                                                  if k != tcid}))
    targets = tuple(waiting.get("targets", ())) if waiting else ()
    if any(a["tool_call_id"] == tcid for a in out.subagents):
        status = "done" if outcome == OK else outcome
        out = evolve(out, subagents=tuple(_set(a, status=status) if a["tool_call_id"] == tcid
                                          else a for a in out.subagents))
    if outcome == OK:
        if waiting is not None:
            out = _apply_files(out, eid, waiting)
        return _mark_retried(out, name, targets)
    if waiting is not None and "plan_before" in waiting and out.plan == waiting["plan_after"]:
        out = evolve(out, plan=waiting["plan_before"])
    return _note_failure(out, eid, event, tcid, name, text, outcome, failed, targets)


def _apply_files(state: AgentState, eid: str, waiting: Mapping) -> AgentState:
    files = state.files
    for e in waiting["effects"]:
        path = e.get("path", "")
        if not path:
            continue
        if e["kind"] == "read":
            files = _set(files, read=_upsert(files["read"], {"path": path, "event": eid}))
        else:
            entry = {"path": path, "change_summary": e.get("summary", ""), "event": eid,
                     "tool": waiting["name"]}
            if waiting.get("ref"):
                entry["diff_ref"] = waiting["ref"]
            if e.get("op"):
                entry["op"] = e["op"]
            files = _set(files, modified=_upsert(files["modified"], entry))
    return evolve(state, files=files) if files != state.files else state


def _upsert(items: tuple, entry: dict) -> tuple:
    """Replace the entry for the same path (moving it last), or append it."""
    return tuple(it for it in items if it["path"] != entry["path"]) + (FrozenMap(entry),)


def _mark_retried(state: AgentState, name: str, targets: tuple) -> AgentState:
    """Earlier failures of this tool on the same target (files, else command; any call of
    the tool when either names none) were retried by this successful call."""
    if not name or not state.errors:
        return state

    def same(e) -> bool:
        if e["name"] != name or e["retried"]:
            return False
        return not targets or not e.get("targets") or bool(set(targets) & set(e["targets"]))

    if not any(same(e) for e in state.errors):
        return state
    return evolve(state, errors=tuple(_set(e, retried=True) if same(e) else e
                                      for e in state.errors))


def _note_failure(state: AgentState, eid: str, event: Event, tcid: str, name: str, text: str,
                  outcome: str, failed: bool, targets: tuple) -> AgentState:
    """A failed call is an error entry (the Failed fold wrote one; this one enriches it)."""
    error = ("user denied: " if outcome == DENIED else "") + _cut(" ".join(text.split()), 1000)
    errors = state.errors
    if failed and errors and errors[-1]["event"] == eid:
        last = errors[-1]
        errors = errors[:-1] + (_set(last, kind=outcome, error=error,
                                     **({"targets": targets} if targets else {})),)
    else:
        entry = {"tool_call_id": tcid, "name": name, "error": error, "event": eid,
                 "retried": False, "kind": outcome}
        if targets:
            entry["targets"] = targets
        errors = errors + (freeze(entry),)
    state = evolve(state, errors=errors)
    if outcome == DENIED and not any(e["status"] == "denied" and e["tool_call_id"] == tcid
                                     for e in state.approvals["log"] if tcid):
        # the harness's own refusal signal (e.g. Claude Code's "doesn't want to proceed"):
        # an approval the user denied, unless an ApprovalDenied event already said so
        state = note_approval(state, eid, DENIED, tcid, name, _cut(" ".join(text.split()), 200),
                              "tool_result")
    return state
