"""Provider-neutral messages made of typed blocks, and the artifacts that hold big evidence.

No provider wire format lives here: adapters (ctxstore.context.adapters) translate a compiled
bundle into OpenAI or Anthropic payloads. Provider-specific leftovers ride in `meta`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import InvalidInput
from .base import StoredObject
from .frozen import EMPTY, FrozenMap, freeze, thaw

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "summary", "custom"})


@dataclass(frozen=True, slots=True)
class Block:
    KIND: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:  # dataclasses.fields() builds a tuple per call: once per class
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in fields(self))
        out: dict[str, Any] = {"type": self.KIND}
        for name in names:
            v = getattr(self, name)
            if v not in (None, "", (), EMPTY) or name in _ALWAYS:
                out[name] = thaw(v)
        return out


_ALWAYS = {"text", "tool_call_id", "name"}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class TextBlock(Block):
    KIND = "text"
    text: str = ""


@dataclass(frozen=True, slots=True)
class ThinkingBlock(Block):
    """A model's visible reasoning text as the provider returned it (kept, never trusted)."""

    KIND = "thinking"
    text: str = ""
    signature: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallBlock(Block):
    KIND = "tool_call"
    tool_call_id: str = ""
    name: str = ""
    args: Any = EMPTY

    def __post_init__(self):
        object.__setattr__(self, "args", freeze(self.args))


@dataclass(frozen=True, slots=True)
class ToolResultBlock(Block):
    """A tool's output: inline `text`, or a `preview` plus `output_ref` to an artifact."""

    KIND = "tool_result"
    tool_call_id: str = ""
    text: str = ""
    preview: str = ""
    output_ref: str = ""
    is_error: bool = False
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class FileRefBlock(Block):
    KIND = "file_ref"
    uri: str = ""
    summary: str = ""
    artifact_ref: str = ""


@dataclass(frozen=True, slots=True)
class ImageBlock(Block):
    KIND = "image"
    media_type: str = ""
    artifact_ref: str = ""
    uri: str = ""


@dataclass(frozen=True, slots=True)
class SummaryBlock(Block):
    KIND = "summary"
    summary_id: str = ""
    text: str = ""


BLOCK_TYPES: dict[str, type[Block]] = {
    cls.KIND: cls for cls in (TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock,
                              FileRefBlock, ImageBlock, SummaryBlock)
}


def block_from_dict(d: dict[str, Any]) -> Block:
    kind = d.get("type")
    cls = BLOCK_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise InvalidInput(f"unknown message block type {kind!r}")
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True, slots=True)
class Message(StoredObject):
    """One communication record. `context` is the seed's contextPolicy:
    {"include": bool, "priority": int, "max_tokens": int | None}."""

    TYPE = "message"

    role: str
    blocks: tuple[Block, ...] = ()
    provenance: FrozenMap = EMPTY  # {"source": "user"|"model"|..., "source_refs": [...]}
    context: FrozenMap = EMPTY
    meta: FrozenMap = EMPTY  # opaque provider metadata (model name, usage, message id, ...)

    def __post_init__(self):
        if self.role not in ROLES:
            raise InvalidInput(f"unknown message role {self.role!r}")
        object.__setattr__(self, "blocks", tuple(
            b if isinstance(b, Block) else block_from_dict(b) for b in self.blocks))
        for name in ("provenance", "context", "meta"):
            object.__setattr__(self, name, freeze(getattr(self, name)))

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, (TextBlock, SummaryBlock)))

    @property
    def include_in_context(self) -> bool:
        return bool(self.context.get("include", True))

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "blocks": [b.to_dict() for b in self.blocks],
                "provenance": thaw(self.provenance), "context": thaw(self.context),
                "meta": thaw(self.meta)}

    @staticmethod
    def fields_of(role: str, blocks: list[Block], provenance: dict, meta: dict) -> dict[str, Any]:
        """`Message(role, blocks, provenance=..., meta=...).to_dict()` without building the
        frozen Message (an importer stores its messages as field maps: half the cost)."""
        if role not in ROLES:
            raise InvalidInput(f"unknown message role {role!r}")
        return {"role": role, "blocks": [
                    (b if isinstance(b, Block) else block_from_dict(b)).to_dict() for b in blocks],
                "provenance": thaw(freeze(provenance)), "context": {}, "meta": thaw(freeze(meta))}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(role=d["role"], blocks=tuple(block_from_dict(b) for b in d.get("blocks", ())),
                   provenance=d.get("provenance", {}), context=d.get("context", {}),
                   meta=d.get("meta", {}))


ARTIFACT_KINDS = frozenset({"file", "diff", "tool_output", "command_log", "screenshot",
                            "dataset", "url_snapshot", "image", "other"})


@dataclass(frozen=True, slots=True)
class Artifact(StoredObject):
    """Large evidence kept whole outside the prompt. `content` is the blob id of the bytes;
    `source_event` is the event that caused it (e.g. the tool call), never the one naming it."""

    TYPE = "artifact"

    kind: str
    content: str  # blob (or chunks manifest) id
    size: int = 0
    uri: str = ""
    summary: str = ""
    media_type: str = "text/plain"
    source_event: str = ""
    sensitive: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "content": self.content, "size": self.size, "uri": self.uri,
                "summary": self.summary, "media_type": self.media_type,
                "source_event": self.source_event, "sensitive": self.sensitive}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Artifact:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
