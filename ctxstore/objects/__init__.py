"""Frozen, provider-neutral value types for everything ctxstore stores.

Objects never know their id or their bytes: `ctxstore.codec` turns them into bytes and ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import StoredObject, class_for, from_stored
from .compaction import Compaction
from .event import (
    ACTORS,
    CORE_EVENT_TYPES,
    DEFAULT_SESSION_CONFIG,
    Event,
    Session,
    is_valid_event_type,
)
from .frozen import EMPTY, FrozenMap, freeze, thaw
from .operation import Operation

_MESSAGE_NAMES = frozenset({
    "ARTIFACT_KINDS", "BLOCK_TYPES", "Artifact", "Block", "FileRefBlock", "ImageBlock", "Message",
    "SummaryBlock", "TextBlock", "ThinkingBlock", "ToolCallBlock", "ToolResultBlock",
    "block_from_dict",
})

if TYPE_CHECKING:  # pragma: no cover
    from .message import (
        ARTIFACT_KINDS,
        BLOCK_TYPES,
        Artifact,
        Block,
        FileRefBlock,
        ImageBlock,
        Message,
        SummaryBlock,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
        ToolResultBlock,
        block_from_dict,
    )


def __getattr__(name: str) -> Any:
    """Messages and their blocks load on first use: ten frozen dataclasses cost start-up time
    that `ctx log`, `status` and `show` of an event never need (base.py loads the module too
    when a stored message or artifact is decoded)."""
    if name not in _MESSAGE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import message

    value = getattr(message, name)
    globals()[name] = value
    return value


__all__ = [
    "ACTORS", "ARTIFACT_KINDS", "Compaction", "BLOCK_TYPES", "CORE_EVENT_TYPES", "DEFAULT_SESSION_CONFIG",
    "EMPTY", "Artifact", "Block", "Event", "FileRefBlock", "FrozenMap", "ImageBlock", "Message", "Operation",
    "Session", "StoredObject", "SummaryBlock", "TextBlock", "ThinkingBlock", "ToolCallBlock",
    "ToolResultBlock", "block_from_dict", "class_for", "freeze", "from_stored",
    "is_valid_event_type", "thaw",
]
