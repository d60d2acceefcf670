"""A memory: one version of a piece of governed knowledge (seed §5 "Memory", invariants 10–11).

The object is immutable: an edit is a new version naming the old one in `supersedes`; a
forget, a review and a usage record are events of the scope's history (ctxstore/memory/), never
changes to an object. The rules a writer enforces (sources, scope, expiry or update policy)
live in ctxstore/memory/governance.py; this module only knows the fields (docs/format.md,
"Memory").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .base import StoredObject
from .frozen import EMPTY, FrozenMap, freeze, thaw

SCOPES = ("user", "project", "workspace", "session", "global")
KINDS = ("preference", "fact", "instruction", "skill", "artifact_summary", "decision")
DEFAULT_PRIORITY = 50


@dataclass(frozen=True, slots=True)
class Memory(StoredObject):
    TYPE = "memory"

    scope: str
    scope_key: str
    kind: str
    content: str
    source_refs: tuple[str, ...]
    confidence: float = 1.0
    created: str = ""
    updated: str = ""
    expires_at: str = ""
    update_policy: str = ""
    supersedes: str = ""
    sensitive: bool = False
    readable_by: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    priority: int = DEFAULT_PRIORITY
    author: str = ""
    origin: FrozenMap = EMPTY

    def __post_init__(self):
        object.__setattr__(self, "source_refs", tuple(self.source_refs))
        object.__setattr__(self, "readable_by", tuple(self.readable_by))
        object.__setattr__(self, "keywords", tuple(self.keywords))
        object.__setattr__(self, "origin", freeze(self.origin))
        object.__setattr__(self, "confidence", float(self.confidence))

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: thaw(getattr(self, f.name)) for f in fields(self)}
        for key in ("source_refs", "readable_by", "keywords"):
            out[key] = list(out[key])
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Memory:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})
