"""ContextBundle: the compiled, explainable result of one context build (seed §6, invariant 12).

A bundle lists every candidate segment in model order, kept or not, each with the reason for
the decision, its sources and its token count; plus the budget numbers and the tokenizer they
are measured in. It is stored as a "bundle" object (`store.put("bundle", bundle.to_dict())`),
so `to_dict()` is canonical-msgpack-safe and deterministic. Dropped segments keep their sources
and token cost but not their text: the sources are where to read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..objects.frozen import EMPTY, FrozenMap, freeze, thaw
from .segments import Segment

BUNDLE_FORMAT = 1


def redaction_notes(s: Segment) -> list[str]:
    """What the redaction step did to a segment, in words (data set by redaction_step)."""
    out = []
    red = s.data.get("redactions")
    if red:
        out.append("redacted: " + ", ".join(f"{n} x {d}" for d, n in red.items())
                   + " (secrets replaced by [REDACTED:<type>])")
    for key in ("withheld", "admitted"):
        if s.data.get(key):
            out.append(f"{key}: {s.data[key]}")
    return out


@dataclass(frozen=True, slots=True)
class ContextBundle:
    segments: tuple[Segment, ...]
    used_tokens: int
    max_tokens: int
    reserved_output: int
    tokenizer: str
    eviction_order: tuple[str, ...] = ()
    usage: FrozenMap = EMPTY  # {"by_tier": {P0: {kept, dropped, segments}}, "by_kind": {...}}
    state_event: str = ""
    state_version: int = 0

    def __post_init__(self):
        object.__setattr__(self, "segments", tuple(self.segments))
        object.__setattr__(self, "eviction_order", tuple(self.eviction_order))
        object.__setattr__(self, "usage", freeze(self.usage))

    @property
    def available_tokens(self) -> int:
        """What the input may use: max_tokens - reserved_output."""
        return self.max_tokens - self.reserved_output

    @property
    def kept(self) -> tuple[Segment, ...]:
        return tuple(s for s in self.segments if s.kept)

    @property
    def dropped(self) -> tuple[Segment, ...]:
        return tuple(s for s in self.segments if not s.kept)

    def explain(self) -> list[str]:
        """One line per segment, for `ctx context` / `/context` (plus one per redaction)."""
        out = []
        for s in self.segments:
            out.append(f"{'+' if s.kept else '-'} {s.tier_name} {s.kind:<17} {s.tokens:>7}  {s.reason}")
            out.extend(f"      {note}" for note in redaction_notes(s))
        return out

    @property
    def redactions(self) -> tuple[dict[str, Any], ...]:
        """Every redaction and withheld segment: {kind, sources, redactions: {detector: n},
        withheld, admitted} — the detector and the segment, never the secret."""
        return tuple({"kind": s.kind, "sources": list(s.sources),
                      "redactions": thaw(s.data.get("redactions", {})),
                      "withheld": s.data.get("withheld", ""), "admitted": s.data.get("admitted", "")}
                     for s in self.segments
                     if s.data.get("redactions") or s.data.get("withheld") or s.data.get("admitted"))

    def to_dict(self) -> dict[str, Any]:
        return {"format": BUNDLE_FORMAT, "segments": [s.to_dict() for s in self.segments],
                "used_tokens": self.used_tokens, "max_tokens": self.max_tokens,
                "reserved_output": self.reserved_output, "tokenizer": self.tokenizer,
                "eviction_order": list(self.eviction_order), "usage": thaw(self.usage),
                "state_event": self.state_event, "state_version": self.state_version}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContextBundle:
        return cls(segments=tuple(Segment.from_dict(s) for s in d.get("segments", ())),
                   used_tokens=d["used_tokens"], max_tokens=d["max_tokens"],
                   reserved_output=d.get("reserved_output", 0), tokenizer=d.get("tokenizer", ""),
                   eviction_order=tuple(d.get("eviction_order", ())), usage=d.get("usage", {}),
                   state_event=d.get("state_event", ""), state_version=d.get("state_version", 0))
