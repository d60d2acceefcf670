"""Frozen, provider-neutral value types for everything ctxstore stores.

Objects never know their id or their bytes: `ctxstore.codec` turns them into bytes and ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyattrs import lazy_attributes
from .base import StoredObject, class_for, from_stored
from .event import (
    ACTORS,
    CORE_EVENT_TYPES,
    DEFAULT_SESSION_CONFIG,
    Event,
    Session,
    is_valid_event_type,
)
from .frozen import EMPTY, FrozenMap, freeze, thaw

if TYPE_CHECKING:  # pragma: no cover
    from .compaction import Compaction
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


# Load on first use: every frozen dataclass costs start-up time (about 0.8 ms each on CPython
# 3.11) that `ctx status`, `log` and `show` of an event never need. base.class_for loads the
# module too when a stored object of that type is decoded.
__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    **dict.fromkeys(("ARTIFACT_KINDS", "BLOCK_TYPES", "Artifact", "Block", "FileRefBlock",
                     "ImageBlock", "Message", "SummaryBlock", "TextBlock", "ThinkingBlock",
                     "ToolCallBlock", "ToolResultBlock", "block_from_dict"), ".message"),
    "Compaction": ".compaction",
    "Operation": ".operation",
})


__all__ = [
    "ACTORS", "ARTIFACT_KINDS", "Compaction", "BLOCK_TYPES", "CORE_EVENT_TYPES", "DEFAULT_SESSION_CONFIG",
    "EMPTY", "Artifact", "Block", "Event", "FileRefBlock", "FrozenMap", "ImageBlock", "Message", "Operation",
    "Session", "StoredObject", "SummaryBlock", "TextBlock", "ThinkingBlock", "ToolCallBlock",
    "ToolResultBlock", "block_from_dict", "class_for", "freeze", "from_stored",
    "is_valid_event_type", "thaw",
]
