"""The review queue of compaction's memory candidates (seed §7: "written to memory only after
review"). A compaction with candidates is queued in its own transaction (`queue_candidates`);
`ctx memory review` lists what is pending and accepts (with scope and expiry or update policy,
as any write: invariants 10–11), edits then accepts, or rejects each candidate. Nothing is ever
promoted automatically (docs/format.md "Memory", "Review queue").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import MemoryRefused, NotFound
from ..objects import Compaction
from ..objects.frozen import thaw
from ..repo import Repository, iter_session_refs
from ..repo.transaction import Transaction
from .governance import ChainWriter, MemorySpec, build, write
from .log import chain_events
from .scopes import REVIEW_REF

QUEUED = "ctx:memory-candidates"
REVIEWED = "ctx:memory-reviewed"


@dataclass(frozen=True)
class Candidate:
    compaction: str
    index: int
    content: str
    kind: str
    source_refs: tuple[str, ...]
    confidence: float
    keywords: tuple[str, ...]
    session: str

    @property
    def key(self) -> str:
        """`COMPACTION:N`, what `ctx memory review accept` takes (a prefix of the id works)."""
        return f"{self.compaction[:12]}:{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "compaction": self.compaction, "index": self.index,
                "content": self.content, "kind": self.kind, "source_refs": list(self.source_refs),
                "confidence": self.confidence, "keywords": list(self.keywords),
                "session": self.session}


def queue_candidates(tx: Transaction, compaction_id: str, count: int) -> str | None:
    """Queue a committed-with-TX compaction's COUNT candidates for review."""
    if count <= 0:
        return None
    return ChainWriter(tx).append(REVIEW_REF, QUEUED, "system", {"candidates": count},
                                  {"compaction_id": compaction_id})


def _candidates(repo: Repository, cid: str) -> list[Candidate]:
    rec = repo.store.get(cid)
    if not isinstance(rec, Compaction):
        raise NotFound(f"{cid[:12]} is not a compaction")
    out = []
    for i, c in enumerate(thaw(rec.memory_candidates)):
        if not isinstance(c, Mapping):
            continue
        out.append(Candidate(cid, i, str(c.get("content", "")), str(c.get("kind", "fact")),
                             tuple(str(s) for s in c.get("source_refs", ()) if s),
                             float(c.get("confidence", 0.7)),
                             tuple(str(k) for k in c.get("keywords", ())), rec.session))
    return out


def _queue(repo: Repository) -> tuple[list[str], set[tuple[str, int]]]:
    """(queued compaction ids in order, decided (compaction, index) pairs)."""
    queued: list[str] = []
    decided: set[tuple[str, int]] = set()
    for _eid, ev in chain_events(repo, repo.refs.read(REVIEW_REF)):
        cid = str(ev.causality.get("compaction_id", ""))
        if ev.type == QUEUED and cid not in queued:
            queued.append(cid)
        elif ev.type == REVIEWED:
            decided.add((cid, int(ev.payload.get("candidate", -1))))
    return queued, decided


def scan(repo: Repository) -> list[str]:
    """Compactions with candidates on any session branch that the queue does not hold yet
    (written before the queue existed, or imported): `ctx memory review --scan` queues them."""
    queued, _ = _queue(repo)
    known = set(queued)
    found: list[str] = []
    for _eid, ev in repo.graph.walk([tip for _s, _b, tip in iter_session_refs(repo)]):
        cid = ev.causality.get("compaction_id") if ev.type == "CompactionCompleted" else None
        if isinstance(cid, str) and cid not in known and cid not in found:
            rec = repo.store.get(cid)
            if isinstance(rec, Compaction) and rec.memory_candidates:
                found.append(cid)
    return found


def enqueue(repo: Repository, compaction_ids: Iterable[str]) -> int:
    ids = list(compaction_ids)
    if not ids:
        return 0
    with repo.transaction(message="memory review: queue", command="api: memory review scan") as tx:
        for cid in ids:
            rec = repo.store.get(cid)
            queue_candidates(tx, cid, len(rec.memory_candidates))
    return len(ids)


def pending(repo: Repository) -> list[Candidate]:
    queued, decided = _queue(repo)
    return [c for cid in queued for c in _candidates(repo, cid) if (cid, c.index) not in decided]


def find_candidate(repo: Repository, key: str) -> Candidate:
    """The pending candidate `COMPACTION:N` (compaction id or prefix) names."""
    ref, sep, n = key.rpartition(":")
    if not sep or not n.isdigit():
        raise MemoryRefused(f"{key!r}: name a candidate as COMPACTION:N (see ctx memory review)")
    cid = repo.store.resolve(ref)
    for c in pending(repo):
        if c.compaction == cid and c.index == int(n):
            return c
    raise NotFound(f"no pending candidate {key} (already reviewed, or its compaction is not queued)")


def accept(repo: Repository, key: str, *, scope: str | None, ttl: str | None = None,
           expires: str | None = None, update_policy: str | None = None,
           content: str | None = None, kind: str | None = None, actor: str = "user",
           **extra: Any) -> str:
    """Write the candidate (edited when CONTENT/KIND are given) as a memory whose sources are
    its own plus the compaction; returns the memory id."""
    c = find_candidate(repo, key)
    spec = MemorySpec(content=content or c.content, scope=scope,
                      sources=[*c.source_refs, c.compaction], kind=kind or c.kind, ttl=ttl,
                      expires=expires, update_policy=update_policy, confidence=c.confidence,
                      keywords=extra.pop("keywords", None) or c.keywords, author=f"review:{actor}",
                      origin={"via": "review", "compaction": c.compaction, "candidate": c.index,
                              **({"edited": True} if content or kind else {})}, **extra)
    mem = build(repo, spec)
    with repo.transaction(message="memory review: accept", command="api: memory review accept") as tx:
        mid = write(repo, mem, action="accept", actor=actor, tx=tx)
        ChainWriter(tx).append(REVIEW_REF, REVIEWED, actor,
                               {"candidate": c.index, "decision": "accept", "memory_id": mid},
                               {"compaction_id": c.compaction})
    return mid


def reject(repo: Repository, key: str, *, reason: str = "", actor: str = "user") -> Candidate:
    c = find_candidate(repo, key)
    with repo.transaction(message="memory review: reject", command="api: memory review reject") as tx:
        ChainWriter(tx).append(REVIEW_REF, REVIEWED, actor,
                               {"candidate": c.index, "decision": "reject",
                                **({"reason": reason} if reason else {})},
                               {"compaction_id": c.compaction})
    return c
