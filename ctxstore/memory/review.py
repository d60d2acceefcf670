"""The review queue of compaction's memory candidates (seed §7: "written to memory only after
review"). A compaction with candidates is queued in its own transaction (`queue_candidates`);
`ctx memory review` lists what is pending and accepts (with scope and expiry or update policy,
as any write: invariants 10–11), edits then accepts, or rejects each candidate. Nothing is ever
promoted automatically (docs/format.md "Memory", "Review queue").

Memories that arrive from elsewhere (`ctx unpack` of a pack carrying `refs/memory/...`) are
never live here: their chains are kept under `refs/memory-received/<origin>/...`, where no
reader of memory looks, and each is queued (`ctx:memory-received`) so that its live memories
are pending candidates like a compaction's, keyed `QUEUE-EVENT:N`, until a person accepts one
into a scope of this store (docs/security.md).
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
RECEIVED = "ctx:memory-received"
#: where received memory chains are kept: not under refs/memory/, so never read as memory
RECEIVED_PREFIX = "refs/memory-received/"


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
    origin: str = ""  # received: where it came from (`pack NAME`); "" for a compaction's

    @property
    def key(self) -> str:
        """`COMPACTION:N`, what `ctx memory review accept` takes (a prefix of the id works)."""
        return f"{self.compaction[:12]}:{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "compaction": self.compaction, "index": self.index,
                "content": self.content, "kind": self.kind, "source_refs": list(self.source_refs),
                "confidence": self.confidence, "keywords": list(self.keywords),
                "session": self.session, **({"origin": self.origin} if self.origin else {})}


def queue_candidates(tx: Transaction, compaction_id: str, count: int) -> str | None:
    """Queue a committed-with-TX compaction's COUNT candidates for review."""
    if count <= 0:
        return None
    return ChainWriter(tx).append(REVIEW_REF, QUEUED, "system", {"candidates": count},
                                  {"compaction_id": compaction_id})


def is_memory_ref(name: str) -> bool:
    """A ref that holds memory or its review (`refs/memory/...`, `refs/memory-*`): what a
    received pack may not create or move as such."""
    return name.startswith("refs/memory/") or name.startswith("refs/memory-")


def received_ref(origin: str, name: str) -> str:
    """Where ref NAME received from ORIGIN is kept: refs/memory-received/<origin slug>/<rest>."""
    import re

    import blake3

    base = re.sub(r"[^a-z0-9_-]", "-", origin.rsplit("/", 1)[-1].lower())[:24].strip("-")
    digest = blake3.blake3(origin.encode("utf-8")).hexdigest()[:12]
    return f"{RECEIVED_PREFIX}{base or 'origin'}-{digest}/{name[len('refs/'):]}"


def queue_received(tx: Transaction, origin: str, ref: str, kept_as: str, tip: str) -> str:
    """Queue the memory chain at TIP, received from ORIGIN as REF and kept as KEPT_AS."""
    return ChainWriter(tx).append(REVIEW_REF, RECEIVED, "system",
                                  {"origin": origin, "ref": ref, "received_ref": kept_as},
                                  {"received_id": tip})


def _candidates(repo: Repository, cid: str) -> list[Candidate]:
    if repo.objects.type_of(cid) == "event":
        return _received(repo, cid)
    rec = repo.objects.get(cid)
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


def _received(repo: Repository, qid: str) -> list[Candidate]:
    """The live memories of a received chain (queue event QID), as candidates; a chain that
    does not fold (not memory events, a missing memory) offers nothing."""
    from ..errors import CtxError
    from .log import ScopeLog, fold

    ev = repo.graph.event(qid)
    tip = ev.causality.get("received_id")
    origin = str(ev.payload.get("origin", "elsewhere"))
    if ev.type != RECEIVED or not isinstance(tip, str):
        raise NotFound(f"{qid[:12]} is not a queued compaction or received memory chain")
    try:
        log = fold(repo, ScopeLog(str(ev.payload.get("ref", "")), None), chain_events(repo, tip))
    except CtxError:
        return []
    return [Candidate(qid, i, r.memory.content, r.memory.kind, (r.id,), float(r.memory.confidence),
                      tuple(r.memory.keywords), "", origin)
            for i, r in enumerate(log.live)]


def _queue(repo: Repository) -> tuple[list[str], set[tuple[str, int]]]:
    """(queued compaction ids and received-queue event ids in order, decided (id, index))."""
    queued: list[str] = []
    decided: set[tuple[str, int]] = set()
    for eid, ev in chain_events(repo, repo.refs.read(REVIEW_REF)):
        cid = str(ev.causality.get("compaction_id") or ev.causality.get("received_id") or "")
        if ev.type == QUEUED and cid not in queued:
            queued.append(cid)
        elif ev.type == RECEIVED:
            queued.append(eid)
        elif ev.type == REVIEWED:
            decided.add((cid, int(ev.payload.get("candidate", -1))))
    return queued, decided


def scan(repo: Repository) -> list[str]:
    """Compactions and merges with candidates on any session branch that the queue does not
    hold yet (written before the queue existed, or imported): `ctx memory review --scan` queues
    them."""
    queued, _ = _queue(repo)
    known = set(queued)
    found: list[str] = []
    for _eid, ev in repo.graph.walk([tip for _s, _b, tip in iter_session_refs(repo)]):
        cid = ev.causality.get("compaction_id") \
            if ev.type in ("CompactionCompleted", "BranchMerged") else None
        if isinstance(cid, str) and cid not in known and cid not in found:
            rec = repo.objects.get(cid)
            if isinstance(rec, Compaction) and rec.memory_candidates:
                found.append(cid)
    return found


def enqueue(repo: Repository, compaction_ids: Iterable[str]) -> int:
    ids = list(compaction_ids)
    if not ids:
        return 0
    with repo.transaction(message="memory review: queue", command="api: memory review scan") as tx:
        for cid in ids:
            rec = repo.objects.get(cid)
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
    cid = repo.objects.resolve(ref)
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
                              **({"received_from": c.origin} if c.origin else {}),
                              **({"edited": True} if content or kind else {})}, **extra)
    mem = build(repo, spec)
    with repo.transaction(message="memory review: accept", command="api: memory review accept") as tx:
        mid = write(repo, mem, action="accept", actor=actor, tx=tx)
        ChainWriter(tx).append(REVIEW_REF, REVIEWED, actor,
                               {"candidate": c.index, "decision": "accept", "memory_id": mid},
                               _about(c))
    return mid


def reject(repo: Repository, key: str, *, reason: str = "", actor: str = "user") -> Candidate:
    c = find_candidate(repo, key)
    with repo.transaction(message="memory review: reject", command="api: memory review reject") as tx:
        ChainWriter(tx).append(REVIEW_REF, REVIEWED, actor,
                               {"candidate": c.index, "decision": "reject",
                                **({"reason": reason} if reason else {})},
                               _about(c))
    return c


def _about(c: Candidate) -> dict[str, str]:
    """The causality of a review decision: the compaction, or the received-queue event."""
    return {"received_id": c.compaction} if c.origin else {"compaction_id": c.compaction}
