"""How many tokens an event costs in raw history: the text a transcript would show for it."""

from __future__ import annotations

import json

from ..objects import Event, Message, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock


def event_text(ev: Event, msg: Message | None) -> str:
    """The text of an event as a flat transcript would carry it (message blocks, else payload)."""
    if msg is not None:
        parts = []
        for b in msg.blocks:
            if isinstance(b, (TextBlock, ThinkingBlock)):
                parts.append(b.text)
            elif isinstance(b, ToolCallBlock):
                parts.append(f"{b.name}({json.dumps(b.args, sort_keys=True, default=str)})")
            elif isinstance(b, ToolResultBlock):
                parts.append(b.text or b.preview)
        if parts:
            return "\n".join(parts)
    if ev.type == "ToolCallRequested" and ev.causality.get("message_id"):
        return ""  # counted once, with the assistant message that carries the call
    return json.dumps(dict(ev.payload), sort_keys=True, ensure_ascii=False, default=str)
