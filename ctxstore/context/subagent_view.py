"""What a parent's (and a child's) context is made of, where subagents are concerned.

- A RESULT event on the parent becomes one P1 summary segment: the child's summary, risks,
  next steps and the ids of its evidence and artifacts, citing the result event, those refs
  and the child session. The child's events are never read: its transcript stays in its
  session (seed §9: subagents isolate context).
- A MEMORY_PASSED event on the child becomes a memory segment with the memory's content,
  marked sensitive when the memory says so (the redaction step then withholds it unless the
  policy admits it).
- An imported subagent (Claude Code Task/Agent, Codex spawn_agent): the parent's history
  already holds the spawning call and its result — the subagent's final report — as one tool
  pair; `link_imported` adds the child session to that pair's sources and says so in its data,
  so the bundle shows which session did the work without taking anything from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..objects.frozen import thaw
from ..objects.links import is_id
from ..redaction.sensitivity import is_sensitive
from ..subagents import MEMORY_PASSED, RESULT
from .segments import Segment


def result_text(p: Any) -> str:
    lines = [f"[Subagent result: session {str(p.get('session', ''))[:12]}]", str(p.get("summary", ""))]
    for title, key in (("Risks", "risks"), ("Next steps", "next_steps")):
        items = [str(x) for x in p.get(key, ()) or ()]
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {x}" for x in items)
    refs = [*(p.get("evidence_refs") or ()), *(p.get("artifacts") or ())]
    if refs:
        lines.append("Evidence: " + ", ".join(str(r)[:12] for r in refs))
    return "\n".join(lines)


def _memory(repo, mid: str) -> tuple[str, bool]:
    if mid not in repo.objects:
        return f"[memory {mid[:12]} is not in this store]", False
    obj = repo.objects.get(mid)
    value = obj.to_dict() if hasattr(obj, "to_dict") else obj
    content = value.get("content", "") if isinstance(value, dict) else ""
    return str(content), is_sensitive(value)


def subagent_segments(repo, history: Iterable[tuple[str, Any, Any]]) -> list[Segment]:
    out = []
    for i, (eid, ev, _msg) in enumerate(history):
        p = ev.payload
        if ev.type == RESULT:
            refs = [r for r in (*(p.get("evidence_refs") or ()), *(p.get("artifacts") or ()))
                    if is_id(r)]
            child = p.get("session", "")
            out.append(Segment("summary", text=result_text(p), order=i,
                               sources=(eid, *refs, *([child] if is_id(child) else [])),
                               data={"subagent": {"session": child, "result": eid}}))
        elif ev.type == MEMORY_PASSED and is_id(p.get("memory_id")):
            mid = p["memory_id"]
            text, sensitive = _memory(repo, mid)
            out.append(Segment("memory", text=f"Memory (passed by the parent): {text}", order=i,
                               sources=(eid, mid), data={"sensitive": sensitive}))
    return out


def children(repo, session: str) -> dict[str, str]:
    """{spawn event id: child session id} of the subagent sessions linked to SESSION."""
    out = {}
    for sid in repo.session_ids():
        s = repo.session(sid)
        if s.parent_session == session and s.spawn_event:
            out[s.spawn_event] = sid
    return out


def link_imported(repo, session: str | None, state, cands: list[Segment]) -> list[Segment]:
    """Name the child session on the tool pair that spawned it (only when the state knows of
    spawning calls: the session scan is skipped for every other build)."""
    if not session or not getattr(state, "subagents", ()):
        return cands
    kids = children(repo, session)
    if not kids:
        return cands
    out = []
    for seg in cands:
        child = next((kids[s] for s in seg.sources if s in kids), None) if seg.tool_call_id else None
        if child is not None:
            seg = replace(seg, sources=(*seg.sources, child),
                          data={**thaw(seg.data),
                                "subagent": {"session": child,
                                             "view": "the subagent's final result (its "
                                                     "transcript stays in its session)"}})
        out.append(seg)
    return out
