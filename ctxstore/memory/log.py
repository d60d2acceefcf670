"""Reading a scope's history: the chain of memory events a `refs/memory/...` ref names, folded
oldest first into what is live, what is history, and where each memory was used.

Nothing is cached here: the chain is the truth (ctxstore/retrieval keeps a derived copy of the
live set for search and checks it against the same events).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import CorruptStore, NotFound, ObjectNotFound
from ..objects import Event
from ..objects.memory import Memory
from ..repo import Repository
from .scopes import MEMORY_PREFIX

WRITTEN = "MemoryWritten"
FORGOTTEN = "ctx:memory-forgotten"
USED = "ctx:memory-used"
CHAIN_TYPES = frozenset({WRITTEN, FORGOTTEN, USED})


@dataclass
class MemoryRecord:
    """One version of a memory with its place in the history."""

    id: str
    memory: Memory
    event: str  # the MemoryWritten event that made it live
    status: str  # live | superseded | forgotten
    superseded_by: str = ""
    forgotten_by: str = ""  # the ctx:memory-forgotten event
    used_in: list[tuple[str, str]] = field(default_factory=list)  # (bundle id, event id)

    def to_dict(self) -> dict:
        from ..objects.frozen import thaw

        return {"id": self.id, "status": self.status, "event": self.event,
                "superseded_by": self.superseded_by, "forgotten_by": self.forgotten_by,
                "used_in": [{"bundle": b, "event": e} for b, e in self.used_in],
                **thaw(self.memory.to_dict())}


@dataclass
class ScopeLog:
    ref: str
    tip: str | None
    scope: str = ""
    scope_key: str = ""
    records: dict[str, MemoryRecord] = field(default_factory=dict)  # in write order
    events: list[tuple[str, Event]] = field(default_factory=list)  # oldest first

    @property
    def live(self) -> list[MemoryRecord]:
        return [r for r in self.records.values() if r.status == "live"]


def chain_events(repo: Repository, tip: str | None, stop: str | None = None
                 ) -> list[tuple[str, Event]]:
    """The chain from its first event (or after STOP) to TIP, oldest first."""
    out = []
    for eid, ev in repo.graph.first_parents(tip):
        if eid == stop:
            break
        out.append((eid, ev))
    out.reverse()
    return out


def load_memory(repo: Repository, mid: str, where: str) -> Memory:
    try:
        mem = repo.objects.get(mid)
    except ObjectNotFound:
        raise CorruptStore(f"{where}: names memory {mid[:12]}, which is not in the store") from None
    if not isinstance(mem, Memory):
        raise CorruptStore(f"{where}: names {mid[:12]}, which is not a memory")
    return mem


def fold(repo: Repository, log: ScopeLog, events: list[tuple[str, Event]]) -> ScopeLog:
    """Apply chain events (oldest first) to LOG."""
    for eid, ev in events:
        p = ev.payload
        if ev.type not in CHAIN_TYPES:
            raise CorruptStore(f"{log.ref}: event {eid[:12]} has type {ev.type!r}, not a memory event")
        log.events.append((eid, ev))
        log.scope = str(p.get("scope", log.scope))
        log.scope_key = str(p.get("scope_key", log.scope_key))
        if ev.type == WRITTEN:
            mid = str(p.get("memory_id", ""))
            log.records[mid] = MemoryRecord(mid, load_memory(repo, mid, f"{log.ref} event {eid[:12]}"),
                                            eid, "live")
            old = log.records.get(str(p.get("supersedes", "")))
            if old is not None and old.status == "live":
                old.status, old.superseded_by = "superseded", mid
        elif ev.type == FORGOTTEN:
            rec = log.records.get(str(p.get("memory_id", "")))
            if rec is not None and rec.status == "live":
                rec.status, rec.forgotten_by = "forgotten", eid
        else:
            bundle = str(ev.causality.get("bundle_id", ""))
            built = str(ev.causality.get("event_id", ""))
            for mid in p.get("memory_ids", ()):
                rec = log.records.get(mid)
                if rec is not None:
                    rec.used_in.append((bundle, built))
    log.tip = events[-1][0] if events else log.tip
    return log


def read_scope(repo: Repository, ref: str) -> ScopeLog:
    tip = repo.refs.read(ref)
    log = ScopeLog(ref, None)
    return fold(repo, log, chain_events(repo, tip)) if tip else log


def iter_scope_refs(repo: Repository) -> Iterator[tuple[str, str]]:
    yield from repo.refs.iter_refs(MEMORY_PREFIX)


def scope_logs(repo: Repository) -> list[ScopeLog]:
    """Every scope's history, by ref name."""
    return [read_scope(repo, ref) for ref, _tip in sorted(iter_scope_refs(repo))]


def live_memories(repo: Repository) -> list[MemoryRecord]:
    return [r for log in scope_logs(repo) for r in log.live]


def find_memory(repo: Repository, text: str) -> tuple[ScopeLog, MemoryRecord]:
    """The memory a full or abbreviated id names, with its scope's history."""
    mid = repo.objects.resolve(text)
    for log in scope_logs(repo):
        if mid in log.records:
            return log, log.records[mid]
    if repo.objects.type_of(mid) == "memory":
        raise NotFound(f"memory {mid[:12]} is in the store but in no scope's history "
                       f"(its write was undone or never committed)")
    raise NotFound(f"{mid[:12]} is not a memory")
