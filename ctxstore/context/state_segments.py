"""Render an AgentState into candidate segments (the "working state" part of the prompt).

Each section becomes one segment, except facts, decisions, errors and artifacts, which get one
segment per item so that eviction can drop the oldest ones first instead of all or nothing.
Every segment names its sources: the events or refs the item came from, or, for sections that
are a projection of the whole log (goal, plan, ...), the event the state was projected up to.
"""

from __future__ import annotations

from ..state.model import AgentState
from .segments import Segment

#: How many of the newest artifacts become candidates, and how much of each one's summary.
RECENT_ARTIFACTS = 8
ARTIFACT_PREVIEW_CHARS = 200
#: How many of the most recently touched files the files segment names.
MAX_FILES_MODIFIED = 60
MAX_FILES_READ = 30


def _src(state: AgentState, *refs: str) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(r for r in refs if r))
    return out or ((state.source_event,) if state.source_event else ("state",))


def _bullets(items) -> str:
    return "\n".join(f"- {x}" for x in items)


def _goal(state: AgentState) -> list[Segment]:
    g = state.goal
    lines = []
    if g["user_goal"]:
        lines.append(f"User goal: {g['user_goal']}")
    if g["current_task"] and g["current_task"] != g["user_goal"]:
        lines.append(f"Current task: {g['current_task']}")
    if g["acceptance_criteria"]:
        lines.append("Acceptance criteria:\n" + _bullets(g["acceptance_criteria"]))
    return [Segment("goal", text="## Goal\n" + "\n".join(lines), sources=_src(state))] if lines else []


def _plan(state: AgentState) -> list[Segment]:
    p = state.plan
    latest: dict[str, dict] = {}
    for v in state.validations:
        latest[v["check"]] = v
    if not p["steps"] and not latest:
        return []
    lines = [f"## Plan ({p['status']})"]
    for s in p["steps"]:
        mark = " <- current" if s["id"] == p["current_step_id"] else ""
        lines.append(f"- [{s['status']}] {s['id']}. {s['text']}{mark}")
    if latest:
        lines.append("Checks:")
        lines.extend(f"- {c}: {v['result']}" for c, v in latest.items())
    return [Segment("plan", text="\n".join(lines),
                    sources=_src(state, *(v["event"] for v in latest.values())))]


def _constraints(state: AgentState) -> list[Segment]:
    c = state.constraints
    out = []
    if c["hard"] or c["soft"]:
        parts = ["## Constraints"]
        if c["hard"]:
            parts.append("Must:\n" + _bullets(c["hard"]))
        if c["soft"]:
            parts.append("Should:\n" + _bullets(c["soft"]))
        out.append(Segment("constraints", text="\n".join(parts), sources=_src(state)))
    if c["preferences"]:
        out.append(Segment("preference", text="## User preferences\n" + _bullets(c["preferences"]),
                           sources=_src(state)))
    return out


def _newest(entries: tuple, limit: int) -> tuple[tuple, str]:
    """The newest LIMIT entries (oldest first) and a note naming how many older ones exist:
    a session that touched hundreds of files must not turn the files section into a segment
    too big to keep (the whole list stays in the state)."""
    if len(entries) <= limit:
        return entries, ""
    return entries[-limit:], f"\n- … and {len(entries) - limit} more (ctx state lists all)"


def _files(state: AgentState) -> list[Segment]:
    f = state.files
    if not f["read"] and not f["modified"]:
        return []
    parts = ["## Files"]
    modified, more_modified = _newest(f["modified"], MAX_FILES_MODIFIED)
    read, more_read = _newest(f["read"], MAX_FILES_READ)
    if modified:
        parts.append("Modified:\n" + _bullets(
            e["path"] + (f": {e['change_summary']}" if e["change_summary"] else "")
            for e in modified) + more_modified)
    if read:
        parts.append("Read:\n" + _bullets(e["path"] for e in read) + more_read)
    refs = [e["event"] for e in modified] + [e["event"] for e in read]
    return [Segment("files", text="\n".join(parts), sources=_src(state, *refs))]


def state_segments(state: AgentState) -> list[Segment]:
    """Candidate segments for the state's sections. Retried errors drop to P2."""
    out: list[Segment] = []
    out += _goal(state)
    out += _plan(state)
    if state.open_questions:
        out.append(Segment("open_questions", text="## Open questions\n" + _bullets(state.open_questions),
                           sources=_src(state)))
    out += _constraints(state)
    out += _files(state)
    for i, e in enumerate(state.errors):
        name = f"{e['name']} " if e["name"] else ""
        note = " (retried)" if e["retried"] else ""
        out.append(Segment("error", text=f"Tool error: {name}[{e['tool_call_id']}] {e['error']}{note}",
                           tier=2 if e["retried"] else 1, order=i, tool_call_id=e["tool_call_id"],
                           sources=_src(state, e["event"])))
    for i, d in enumerate(state.decisions):
        why = f" (because: {d['rationale']})" if d["rationale"] else ""
        out.append(Segment("decision", text=f"Decision: {d['decision']}{why}", order=i,
                           sources=_src(state, *d["evidence_refs"])))
    for i, f in enumerate(state.facts):
        conf = "" if f["confidence"] >= 1.0 else f" (confidence {f['confidence']:g})"
        out.append(Segment("fact", text=f"Fact: {f['content']}{conf}", order=i,
                           sources=_src(state, *f["source_refs"])))
    # Only the newest artifacts are offered, each as a one-line pointer: the full evidence stays
    # in the store (`ctx cat ID`), and a long session must not grow its prompt per artifact.
    first = max(0, len(state.artifacts) - RECENT_ARTIFACTS)
    for i, a in enumerate(state.artifacts[first:], start=first):
        where = f" {a['uri']}" if a["uri"] else ""
        summary = " ".join(a["summary"].split())
        what = f": {summary[:ARTIFACT_PREVIEW_CHARS]}{'…' if len(summary) > ARTIFACT_PREVIEW_CHARS else ''}" \
            if summary else ""
        out.append(Segment("artifact", text=f"Artifact {a['artifact_id']} ({a['kind']}){where}{what}",
                           order=i, sources=(a["artifact_id"],)))
    return out
