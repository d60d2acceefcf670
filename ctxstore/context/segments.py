"""Candidate segments: the units the context builder keeps, trims or drops.

A segment is one indivisible piece of model input with its provenance: a kind (which fixes its
default tier and where it goes in the prompt), the text that is counted, the provider-neutral
messages the adapters emit, and the ids of the objects it came from (invariant 12). A tool call
and its result are ONE segment, so no budget decision can ever separate them.

Neutral messages (`Segment.messages`) are maps:
    {"role": "user" | "assistant", "text": str, "tool_calls": ({"id", "name", "args"}, ...)}
    {"role": "tool", "tool_call_id": str, "text": str, "is_error": bool, "pending": bool}
State-like segments (goal, plan, facts, ...) have no messages: adapters put their text in the
system prompt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from ..objects.frozen import EMPTY, FrozenMap, freeze, thaw

#: Default tier of each kind (seed §6 priority table). P0 is never dropped.
KIND_TIERS: dict[str, int] = {
    "system": 0, "developer": 0, "tool_schema": 0, "current_request": 0, "pending_tool_pair": 0,
    "goal": 1, "plan": 1, "open_questions": 1, "constraints": 1, "files": 1, "diff": 1,
    "error": 1, "turn": 1, "summary": 1,
    "decision": 2, "fact": 2, "preference": 2, "memory": 2, "artifact": 2,
    "tool_output": 3, "chatter": 3,
}
KINDS = tuple(KIND_TIERS)

#: Where a kind goes in the prompt: 0 instructions, 1 working state (rendered into the system
#: prompt), 2 the conversation in event order.
KIND_SECTIONS: dict[str, int] = {k: 0 for k in ("system", "developer", "tool_schema")}
KIND_SECTIONS.update({k: 1 for k in ("summary", "goal", "plan", "open_questions", "constraints",
                                     "files", "diff", "error", "decision", "fact", "preference",
                                     "memory", "artifact")})
KIND_SECTIONS.update({k: 2 for k in ("current_request", "pending_tool_pair", "turn",
                                     "tool_output", "chatter")})
#: Order of the state kinds inside section 1 (a summary of old history comes first).
STATE_KIND_RANK = {k: i for i, k in enumerate(
    ("summary", "goal", "plan", "open_questions", "constraints", "preference", "files", "diff",
     "error", "decision", "fact", "memory", "artifact"))}

#: Kinds whose text may be cut to a preview before the segment is dropped (seed: "can be
#: summarized" / "can be trimmed").
TRIMMABLE_KINDS = frozenset({"files", "diff", "error", "decision", "fact", "preference", "memory",
                             "artifact"})

TIER_NAMES = ("P0", "P1", "P2", "P3")


@dataclass(frozen=True, slots=True)
class Segment:
    """A candidate (from `candidates_from_history` or the caller) or, inside a ContextBundle, a
    decided segment (`kept` and `reason` set by `build_context`).

    - `tier`: None means the kind's default tier.
    - `order`: position key; lower is older (history) or less relevant (memories). Eviction
      within a kind takes the lowest `order` first; ties keep candidate order.
    - `group`: the turn this segment belongs to (the user prompt's event id); evicting kind
      "turn" removes a whole group at once.
    - `tokens`: filled in by `build_context` with its tokenizer; ignored on input.
    - `data`: extra structured data (a tool schema: {name, description, parameters}).
    """

    kind: str
    text: str = ""
    sources: tuple[str, ...] = ()
    tier: int | None = None
    order: int = 0
    group: str = ""
    tool_call_id: str = ""
    messages: tuple = ()
    data: FrozenMap = EMPTY
    tokens: int = 0
    kept: bool = False
    trimmed: bool = False
    reason: str = ""

    def __post_init__(self):
        if self.kind not in KIND_TIERS:
            raise ValueError(f"unknown segment kind {self.kind!r}")
        if self.tier is None:
            object.__setattr__(self, "tier", KIND_TIERS[self.kind])
        elif not 0 <= self.tier <= 3:
            raise ValueError(f"tier must be 0..3, not {self.tier}")
        if type(self.sources) is not tuple:
            object.__setattr__(self, "sources", tuple(self.sources))
        if type(self.messages) is not tuple or any(type(m) is not FrozenMap for m in self.messages):
            object.__setattr__(self, "messages", freeze(tuple(self.messages)))
        if type(self.data) is not FrozenMap:
            object.__setattr__(self, "data", freeze(self.data))

    @property
    def tier_name(self) -> str:
        return TIER_NAMES[self.tier]  # type: ignore[index]

    @property
    def section(self) -> int:
        return KIND_SECTIONS[self.kind]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "sources": list(self.sources),
                "tier": self.tier, "order": self.order, "group": self.group,
                "tool_call_id": self.tool_call_id, "messages": thaw(self.messages),
                "data": thaw(self.data), "tokens": self.tokens, "kept": self.kept,
                "trimmed": self.trimmed, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Segment:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def user_message(text: str) -> dict:
    return {"role": "user", "text": text}


def assistant_message(text: str = "", tool_calls: tuple = ()) -> dict:
    return {"role": "assistant", "text": text, "tool_calls": tuple(tool_calls)}


def tool_message(tool_call_id: str, text: str, is_error: bool = False,
                 pending: bool = False) -> dict:
    return {"role": "tool", "tool_call_id": tool_call_id, "text": text, "is_error": is_error,
            "pending": pending}


def render_messages(messages) -> str:
    """The text counted for a conversation segment: what the adapters will send, flattened."""
    parts = []
    for m in messages:
        if m.get("text"):
            parts.append(m["text"])
        for c in m.get("tool_calls", ()):
            parts.append(f"{c['name']}({args_json(c['args'])})")
    return "\n".join(parts)


def args_json(args: Any) -> str:
    """Tool-call arguments as deterministic JSON (sorted keys, compact, non-ASCII kept)."""
    return json.dumps(thaw(args), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=repr)
