"""`ctx search`: a ranked, indexed full-text search over every session, branch, compaction
summary, memory and artifact text of a store (SQLite FTS5, BM25), kept under
`.ctx/cache/search/` and caught up from the refs on every search (docs/search.md).

The API the CLI and the MCP server use:

    search(repo, query, *, limit=20, filters=None) -> list[SearchHit]
    reindex(repo, progress=None) -> IndexStatus
    catch_up(repo) -> IndexStatus        # what writers may call after their commit

`ctx grep` (porcelain/search.py) stays the exact scan; this is the ranked one.
"""

from ..lazyattrs import lazy_attributes
from .hits import HIT_TYPES, SearchFilters, SearchHit

__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    "search": ".query", "reindex": ".index", "catch_up": ".index", "IndexStatus": ".index",
    "fts5_available": ".index", "SearchUnavailable": ".index"})

__all__ = ["HIT_TYPES", "IndexStatus", "SearchFilters", "SearchHit", "SearchUnavailable",
           "catch_up", "fts5_available", "reindex", "search"]
