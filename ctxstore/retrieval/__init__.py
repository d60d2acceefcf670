"""Scoped retrieval through the Context Manager (seed §9): a derived bm25s index over memories,
artifacts and events (index.py), the checks that decide what may be offered (select.py), and
the read path to history a compaction summarized (recall.py). Needs `ctxstore[memory]`.
"""

from __future__ import annotations

from .index import RetrievalIndex, index_status, require_bm25s
from .recall import RecallHit, recall
from .select import RetrievalReport, retrieve, search_memories

__all__ = ["RecallHit", "RetrievalIndex", "RetrievalReport", "index_status", "recall",
           "require_bm25s", "retrieve", "search_memories"]
