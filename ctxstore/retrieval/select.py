"""Retrieval for the context builder: which memories and artifacts may enter this turn's model
input, and as what segments (seed §9: source refs → scope / trust / freshness check → builder).

The index proposes; this module decides, from the objects: a memory is offered only if it is
live in its scope's history, in a scope the session sees (global, its user, its project, its
workspace, itself), not expired or stale, not sensitive unless the caller admits sensitive
material, readable by the asking agent, and at least `min_confidence`. An artifact is offered
only if a session of the same project named it and the live history does not already carry it.
Every segment's sources are the memory or artifact id and what it came from, and its `data`
says why it was retrieved (query, score, scope) — what `ctx context --explain` prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..context.segments import Segment
from ..errors import ObjectNotFound
from ..memory.governance import now_dt, offerable
from ..memory.log import FORGOTTEN, WRITTEN
from ..memory.scopes import ScopeKeys, scope_ref
from ..objects import Artifact
from ..objects.memory import Memory
from ..repo import Repository
from .index import RetrievalIndex
from .text import artifact_text, snippet, tokens

DEFAULT_K_MEMORIES = 8
DEFAULT_K_ARTIFACTS = 4
DEFAULT_MIN_CONFIDENCE = 0.5


@dataclass
class RetrievalReport:
    """What retrieval offered and what it refused, and why (for --explain and tests)."""

    query: str
    index: str = ""
    offered: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "index": self.index, "offered": self.offered,
                "refused": self.refused}


#: (store path, ref) -> (tip, live ids): a process folds each chain's new events only.
_LIVE: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}


def live_ids(repo: Repository, ref: str) -> frozenset[str]:
    """The live memory ids of one scope's history (ids only: no memory object is read). The
    fold of a chain is kept per process and extended by the events after the tip it saw; a
    chain that moved any other way (undo, restore) is folded again from its start."""
    tip = repo.refs.read(ref)
    key = (str(repo.path), ref)
    seen = _LIVE.get(key) if repo.path is not None else None
    if tip is None:
        return frozenset()
    if seen is not None and seen[0] == tip:
        return seen[1]
    new: list = []
    base: frozenset[str] = frozenset()
    for eid, ev in repo.graph.first_parents(tip):
        if seen is not None and eid == seen[0]:
            base = seen[1]
            break
        new.append(ev)
    live = set(base)
    for ev in reversed(new):
        mid = ev.payload.get("memory_id")
        if ev.type == WRITTEN:
            live.add(str(mid))
            live.discard(str(ev.payload.get("supersedes", "")))
        elif ev.type == FORGOTTEN:
            live.discard(str(mid))
    out = frozenset(live)
    if repo.path is not None:
        _LIVE[key] = (tip, out)
    return out


def memory_refusal(mem: Any, keys: ScopeKeys, live: frozenset[str], mid: str, now: datetime, *,
                   agent: str, allow_sensitive: bool, min_confidence: float) -> str:
    """'' if the memory may be offered, else why not."""
    if not isinstance(mem, Memory):
        return "not a memory"
    if keys.visible().get(mem.scope) != mem.scope_key or (mem.scope != "global" and not mem.scope_key):
        return f"out of scope ({mem.scope} {mem.scope_key or '-'})"
    if mid not in live:
        return "not live (superseded, forgotten or its write undone)"
    why = offerable(mem, now)
    if why:
        return why
    if mem.sensitive and not allow_sensitive:
        return "sensitive (the session's policy does not admit sensitive memories)"
    if mem.readable_by and agent not in mem.readable_by:
        return f"not readable by agent {agent or '(unnamed)'} (readable by {', '.join(mem.readable_by)})"
    if mem.confidence < min_confidence:
        return f"confidence {mem.confidence:.2f} below {min_confidence:.2f}"
    return ""


def _short(ids: Iterable[str], n: int = 4) -> str:
    ids = list(ids)
    return ", ".join(i[:12] for i in ids[:n]) + (f" (+{len(ids) - n})" if len(ids) > n else "")


def search_memories(repo: Repository, index: RetrievalIndex, query: str, keys: ScopeKeys, *,
                    k: int = DEFAULT_K_MEMORIES, now: datetime | None = None, agent: str = "",
                    allow_sensitive: bool = False, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                    report: RetrievalReport | None = None) -> list[tuple[str, Memory, float]]:
    """(id, memory, score) of the K best memories the checks let through, best first."""
    now = now or now_dt()
    visible = keys.visible()
    groups = [f"m:{s}\0{key}" for s, key in visible.items()]
    lives = {s: live_ids(repo, scope_ref(s, key)) for s, key in visible.items()}
    out: list[tuple[str, Memory, float]] = []
    for row, score in index.search(query, k=max(4 * k, 32), kinds=["memory"], groups=groups):
        try:
            mem = repo.objects.get(row.id)
        except ObjectNotFound:
            mem = None
        scope = getattr(mem, "scope", "")
        why = memory_refusal(mem, keys, lives.get(scope, frozenset()), row.id, now, agent=agent,
                             allow_sensitive=allow_sensitive, min_confidence=min_confidence)
        if why:
            if report is not None:
                report.refused.append({"kind": "memory", "id": row.id, "reason": why})
            continue
        out.append((row.id, mem, score))  # type: ignore[arg-type]
        if len(out) >= k:
            break
    return out


def memory_segment(mid: str, mem: Memory, score: float, query: str) -> Segment:
    text = (f"{mem.content}\n(memory {mid[:12]}; {mem.scope} scope, {mem.kind}, confidence "
            f"{mem.confidence:.2f}; sources {_short(mem.source_refs)})")
    return Segment("memory", text=text, sources=(mid, *mem.source_refs),
                   order=int(score * 1000) * 101 + mem.priority,
                   data={"retrieved": {"kind": "memory", "id": mid, "score": round(score, 4),
                                       "query": query[:300], "scope": mem.scope,
                                       "scope_key": mem.scope_key,
                                       "sources": list(mem.source_refs)}})


def retrieve(repo: Repository, index: RetrievalIndex, query: str, keys: ScopeKeys, *,
             k_memories: int = DEFAULT_K_MEMORIES, k_artifacts: int = DEFAULT_K_ARTIFACTS,
             exclude: Iterable[str] = (), now: datetime | None = None, agent: str = "",
             allow_sensitive: bool = False, min_confidence: float = DEFAULT_MIN_CONFIDENCE
             ) -> tuple[list[Segment], RetrievalReport]:
    """Candidate segments for QUERY (the current task) and a report of every decision."""
    report = RetrievalReport(query, index.how)
    segs: list[Segment] = []
    if not tokens(query):
        return segs, report
    for mid, mem, score in search_memories(repo, index, query, keys, k=k_memories, now=now,
                                           agent=agent, allow_sensitive=allow_sensitive,
                                           min_confidence=min_confidence, report=report):
        segs.append(memory_segment(mid, mem, score, query))
        report.offered.append({"kind": "memory", "id": mid, "score": round(score, 4),
                               "sources": list(mem.source_refs)})
    if k_artifacts <= 0:
        return segs, report
    skip = set(exclude)
    groups = index.groups_of_project(keys.project)
    if keys.session:
        groups.append(f"s:{keys.session}")
    qt = set(tokens(query))
    n = 0
    for row, score in index.search(query, k=max(4 * k_artifacts, 16), kinds=["artifact"],
                                   groups=groups):
        if row.id in skip:
            report.refused.append({"kind": "artifact", "id": row.id,
                                   "reason": "already in the live history"})
            continue
        art = repo.objects.get(row.id)
        if not isinstance(art, Artifact):
            report.refused.append({"kind": "artifact", "id": row.id, "reason": "not an artifact"})
            continue
        body = artifact_text(repo.objects, art)
        text = (f"[artifact {row.id[:12]}: {art.kind} {art.uri} {art.summary}".rstrip() + "]\n"
                + snippet(body.split("\n", 1)[-1], qt))
        segs.append(Segment("artifact", text=text, sources=(row.id, row.source),
                            order=int(score * 1000),
                            data={"retrieved": {"kind": "artifact", "id": row.id,
                                                "score": round(score, 4), "query": query[:300],
                                                "session": row.group[2:],
                                                "sources": [row.source]}}))
        report.offered.append({"kind": "artifact", "id": row.id, "score": round(score, 4),
                               "sources": [row.source]})
        n += 1
        if n >= k_artifacts:
            break
    return segs, report
