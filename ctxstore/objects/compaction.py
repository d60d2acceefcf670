"""The compaction record: what a summary replaced, and what it must still carry (seed §7).

A compaction never deletes anything. It names the exact range of events it summarizes, the
first event kept verbatim after it, and its provenance, so `ctx show COMPACTION` can list the
replaced events and a context builder can use summary + state + events after `first_kept`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .base import StoredObject
from .frozen import EMPTY, FrozenMap, freeze, thaw


@dataclass(frozen=True, slots=True)
class Compaction(StoredObject):
    TYPE = "compaction"

    session: str = ""
    first_event: str = ""  # oldest event summarized
    last_event: str = ""  # newest event summarized
    first_kept: str = ""  # first event kept verbatim (child of last_event on the branch)
    source_event_ids: tuple[str, ...] = ()  # exactly the events replaced, oldest first
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str = ""  # the text the model sees in place of the range
    goal: FrozenMap = EMPTY  # {user_goal, current_task}
    constraints: FrozenMap = EMPTY  # {hard: [...], soft: [...]}
    progress: FrozenMap = EMPTY  # {done: [...], in_progress: [...]}
    files: FrozenMap = EMPTY  # {read: [{path}], modified: [{path, change_summary}]}
    tool_results: tuple = ()  # [{tool_call_id, summary, artifact_ref}]
    errors: tuple = ()  # [{tool_call_id, error, retried}]
    decisions: tuple = ()
    open_questions: tuple = ()
    next_steps: tuple = ()
    state_patch: FrozenMap = EMPTY
    memory_candidates: tuple = ()  # held for review, never written to memory directly
    provenance: FrozenMap = EMPTY  # {summarizer, summarizer_version, policy_id, origin?}
    previous: str = ""  # the compaction this one chains after, if any
    kind: str = "compaction"  # compaction | merge (a branch's conclusions)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (dict, list, tuple)):
                object.__setattr__(self, f.name, freeze(v))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: thaw(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Compaction:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})
