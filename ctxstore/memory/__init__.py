"""Governed memory (seed §5 "Memory", §9, invariants 10–11): scopes, their append-only
histories, governed writes and the review of compaction's memory candidates.

    from ctxstore.memory import remember, forget, edit, live_memories
    mid = remember(repo, "Run tests with `make test`", scope="project",
                   sources=[event_id], update_policy="until-superseded")

docs/format.md "Memory" specifies the objects and refs; docs/memory.md is the user guide.
Memory reaches a model only through the Context Manager's builder (ctxstore/retrieval/).
"""

from __future__ import annotations

from .governance import (
    UPDATE_POLICIES,
    MemorySpec,
    edit,
    forget,
    parse_ttl,
    record_usage,
    remember,
)
from .log import MemoryRecord, ScopeLog, find_memory, live_memories, read_scope, scope_logs
from .scopes import ScopeKeys, parse_scope, scope_keys, scope_ref

__all__ = ["UPDATE_POLICIES", "MemoryRecord", "MemorySpec", "ScopeKeys", "ScopeLog", "edit",
           "find_memory", "forget", "live_memories", "parse_scope", "parse_ttl", "read_scope",
           "record_usage", "remember", "scope_keys", "scope_logs", "scope_ref"]
