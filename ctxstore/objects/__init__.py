"""Frozen, provider-neutral value types for everything ctxstore stores.

Objects never know their id or their bytes: `ctxstore.codec` turns them into bytes and ids.
"""

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
from .operation import Operation

__all__ = [
    "ACTORS", "ARTIFACT_KINDS", "Compaction", "BLOCK_TYPES", "CORE_EVENT_TYPES", "DEFAULT_SESSION_CONFIG",
    "EMPTY", "Artifact", "Block", "Event", "FileRefBlock", "FrozenMap", "ImageBlock", "Message", "Operation",
    "Session", "StoredObject", "SummaryBlock", "TextBlock", "ThinkingBlock", "ToolCallBlock",
    "ToolResultBlock", "block_from_dict", "class_for", "freeze", "from_stored",
    "is_valid_event_type", "thaw",
]
