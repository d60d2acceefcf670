"""The agent's read path to history a compaction replaced (seed §7: the lossless layer stays
reachable): `recall(repo, tip, query)` returns the raw events — and the artifacts they name —
that the summaries on this branch replaced, with their ids, best match first.

Compaction never deletes: the newest compaction on the first-parent line names the events it
replaced (`source_event_ids`) and the compaction before it (`previous`), so the replaced history
is the union along that chain. A query ranks them with BM25 over their own texts (a small
in-memory index: the ranking is the same whatever else the store holds); without a query they
come back oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..objects import Artifact, Compaction, Message
from ..repo import Repository
from .text import artifact_text, event_text, snippet, tokens


@dataclass
class RecallHit:
    event: str
    type: str
    ts: str
    compaction: str  # the compaction whose summary replaced it
    text: str  # the event's text (a snippet around the query when one is given)
    artifacts: list[str] = field(default_factory=list)
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "type": self.type, "ts": self.ts,
                "compaction": self.compaction, "text": self.text, "artifacts": self.artifacts,
                "score": round(self.score, 4)}


def compactions(repo: Repository, tip: str) -> list[tuple[str, Compaction]]:
    """(id, record) of every compaction on TIP's first-parent line, newest first."""
    out: list[tuple[str, Compaction]] = []
    for _eid, ev in repo.graph.first_parents(tip):
        cid = ev.causality.get("compaction_id") if ev.type == "CompactionCompleted" else None
        rec = repo.objects.get(cid) if isinstance(cid, str) and cid else None
        if isinstance(rec, Compaction):
            out.append((cid, rec))
            break
    while out and out[-1][1].previous:
        prev = repo.objects.get(out[-1][1].previous)
        if not isinstance(prev, Compaction):
            break
        out.append((out[-1][1].previous, prev))
    return out


def recall(repo: Repository, tip: str, query: str | None = None, k: int = 20) -> list[RecallHit]:
    """The replaced events (and their artifacts) of TIP's compactions; with QUERY the K best."""
    hits: list[RecallHit] = []
    texts: list[str] = []
    for cid, rec in reversed(compactions(repo, tip)):
        for eid in rec.source_event_ids:
            ev = repo.graph.event(eid)
            mid = ev.causality.get("message_id")
            msg = repo.objects.get(mid) if isinstance(mid, str) and mid else None
            msg = msg if isinstance(msg, Message) else None
            arts = [a for a in [ev.causality.get("artifact_id"),
                                *(getattr(b, "output_ref", "") for b in (msg.blocks if msg else ()))]
                    if isinstance(a, str) and a]
            text = event_text(ev, msg)
            full = text
            for aid in arts:
                art = repo.objects.get(aid)
                if isinstance(art, Artifact):
                    full += "\n" + artifact_text(repo.objects, art)
            hits.append(RecallHit(eid, ev.type, ev.ts, cid, text, list(dict.fromkeys(arts))))
            texts.append(full)
    if not query:
        return hits[:k] if k else hits
    from .index import RetrievalIndex

    model = RetrievalIndex._fit(texts)
    if model is None:
        return []
    q = [t for t in tokens(query) if t in model.vocab_dict]
    if not q:
        return []
    scores = model.get_scores(q)
    qt = set(tokens(query))
    order = sorted((i for i in range(len(hits)) if scores[i] > 0), key=lambda i: (-scores[i], i))
    out = []
    for i in order[:k]:
        h = hits[i]
        h.score = float(scores[i])
        h.text = snippet(texts[i], qt, 800)
        out.append(h)
    return out
