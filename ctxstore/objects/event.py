"""Events and sessions: the DAG's nodes and the work container they belong to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import StoredObject
from .frozen import EMPTY, FrozenMap, freeze, thaw

#: The seed's event types. Others are allowed under a namespace ("x.myharness.Thing"):
#: the core carries them through unchanged and the state projection ignores them.
CORE_EVENT_TYPES = frozenset({
    "SessionStarted", "UserPromptSubmitted", "ContextBuilt", "ModelRequestStarted",
    "ModelResponseReceived", "ToolCallRequested", "ToolCallStarted", "ToolCallFinished",
    "ToolCallFailed", "ApprovalRequested", "ApprovalGranted", "ApprovalDenied", "FileRead",
    "FileWritten", "DiffApplied", "StateUpdated", "CompactionStarted", "CompactionCompleted",
    "CompactionFailed", "VerifierFinished", "MessageAdded", "BranchMerged", "MemoryWritten",
    "ArtifactAdded", "WorkspaceSnapshot",
})
ACTORS = frozenset({"user", "agent", "model", "tool", "system", "subagent"})


def is_valid_event_type(name: str) -> bool:
    """Core types, or a namespaced custom type: `x.NAMESPACE.Name` / `NAMESPACE:Name`."""
    if name in CORE_EVENT_TYPES:
        return True
    if not name or len(name) > 200 or any(c.isspace() or ord(c) < 32 for c in name):
        return False
    return name.startswith("x.") or ":" in name or "." in name


@dataclass(frozen=True, slots=True)
class Event(StoredObject):
    """A fact that happened. Parents make the DAG; generation = max(parent generations) + 1."""

    TYPE = "event"

    type: str
    actor: str = "system"
    payload: FrozenMap = EMPTY
    parents: tuple[str, ...] = ()
    generation: int = 1
    ts: str = ""
    causality: FrozenMap = EMPTY  # message_id, tool_call_id, artifact_id, compaction_id, ...

    def __post_init__(self):
        object.__setattr__(self, "payload", freeze(self.payload))
        object.__setattr__(self, "causality", freeze(self.causality))
        object.__setattr__(self, "parents", tuple(self.parents))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "actor": self.actor, "payload": thaw(self.payload),
                "parents": list(self.parents), "generation": self.generation, "ts": self.ts,
                "causality": thaw(self.causality)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(type=d["type"], actor=d.get("actor", "system"), payload=d.get("payload", {}),
                   parents=tuple(d.get("parents", ())), generation=int(d.get("generation", 1)),
                   ts=d.get("ts", ""), causality=d.get("causality", {}))


@dataclass(frozen=True, slots=True)
class Session(StoredObject):
    """The work container: identity, configuration, and for forks/subagents where it came from.

    `nonce` makes two sessions created with equal fields distinct; importers set it to the
    source's own session id so that importing twice yields the same session.
    """

    TYPE = "session"

    title: str = ""
    created: str = ""
    config: FrozenMap = EMPTY  # model, context_window, reserved_output, compaction_policy, ...
    cwd: str = ""
    repo_root: str = ""
    parent_session: str = ""
    spawn_event: str = ""
    kind: str = "main"  # main | fork | subagent | import
    origin: FrozenMap = EMPTY  # importer provenance: {"format": ..., "id": ..., "path": ...}
    nonce: str = ""

    def __post_init__(self):
        object.__setattr__(self, "config", freeze(self.config))
        object.__setattr__(self, "origin", freeze(self.origin))

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "created": self.created, "config": thaw(self.config),
                "cwd": self.cwd, "repo_root": self.repo_root,
                "parent_session": self.parent_session, "spawn_event": self.spawn_event,
                "kind": self.kind, "origin": thaw(self.origin), "nonce": self.nonce}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Session:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


DEFAULT_SESSION_CONFIG = {
    "model": "",
    "context_window": 200_000,
    "reserved_output": 16_000,
    "compaction_policy": "structured-v1",
    "artifact_threshold": 4096,
    "sandbox": "workspace_write",
    "approval": "on_request",
}
