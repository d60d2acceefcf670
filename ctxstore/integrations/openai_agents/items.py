"""Agents SDK items as events: one item, one event, the item kept whole in the event.

An item (a Responses API input item: a message, a function call, its output, reasoning, ...)
becomes the event the state fold already understands, with a Message object holding its
content, exactly as the Codex importer maps the same Responses items:

    {"role": "user", ...}              UserPromptSubmitted    (Message role user)
    {"role": "assistant", ...}         ModelResponseReceived  (Message role assistant)
    {"role": "system"|"developer"}     MessageAdded           (Message of that role)
    {"type": "reasoning", ...}         ModelResponseReceived  (a thinking block)
    {"type": "*_call", "call_id"}      ToolCallRequested      (a tool_call block)
    {"type": "*_call_output", ...}     ToolCallFinished       (a tool_result block), paired
                                                              with its call by call_id
    anything else                      openai-agents:item     (payload.subtype = its type)

The item itself is kept in `payload.source` the way importers keep a transcript line
(importers/records.py): strings the Message already holds are named, not repeated; long
strings go to blobs; the stored form is checked to rebuild the item before it is used. So
`item_of` gives back a value deep-equal to what was added, and `ctx export` can write it.
"""

from __future__ import annotations

import json
from typing import Any

from ... import codec
from ...chunking import ChunkParams
from ...errors import InvalidInput
from ...importers.common import PREVIEW_CHARS, preview, tool_requested_payload
from ...importers.records import event_line, keep_line, rebuild_record
from ...objects import (
    Event,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ...objects.frozen import freeze, thaw

FMT = "openai-agents"
OTHER = f"{FMT}:item"
#: Where a call item keeps its input, by item type (function_call: a JSON string).
_CALL_INPUT = ("arguments", "input", "action", "command")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return ""


def _blocks(content: Any) -> list:
    if isinstance(content, str):
        return [TextBlock(content)]
    out: list = []
    for c in content if isinstance(content, list) else ():
        if isinstance(c, dict) and isinstance(c.get("text"), str):
            out.append(TextBlock(c["text"]))
        elif isinstance(c, dict) and c.get("type") == "refusal" and isinstance(c.get("refusal"), str):
            out.append(TextBlock(c["refusal"]))
        elif isinstance(c, dict) and c.get("type") == "input_image":
            out.append(ImageBlock(uri=str(c.get("image_url") or c.get("file_id") or "")))
    return out


def _call_args(item: dict) -> Any:
    for key in _CALL_INPUT:
        if key in item:
            args = item[key]
            if isinstance(args, str) and key == "arguments":
                try:
                    return json.loads(args)
                except ValueError:
                    return args
            return args
    return {}


class ItemNotJSON(InvalidInput, TypeError):
    """An item that JSON cannot hold (the SDK's own sessions raise TypeError for it too)."""


class Mapped:
    """One item as an event: type, actor, payload, causality, and the Messages it made."""

    __slots__ = ("type", "actor", "payload", "causality", "messages")

    def __init__(self, type: str, actor: str, payload: dict, causality: dict,
                 messages: list[tuple[str, dict]]) -> None:
        self.type, self.actor, self.payload = type, actor, payload
        self.causality, self.messages = causality, messages


class ItemMapper:
    """Maps items to events for one store; remembers call names so an output names its tool."""

    def __init__(self, store, config: dict) -> None:
        self.objects = store
        self.threshold = int(config.get("artifact_threshold", 4096))
        self.chunking = ChunkParams.from_config(config)
        #: call_id -> tool name, for the outputs that follow
        self.call_names: dict[str, str] = {}

    def _message(self, role: str, blocks: list, meta: dict | None = None) -> tuple[str, dict]:
        msg = Message(role, tuple(blocks), provenance={"source": FMT}, meta=meta or {})
        mid, body = codec.encode_object("message", msg.to_dict())
        self.objects.put_encoded(mid, "message", body)
        return mid, codec.unpack_value(body)

    def map(self, item: Any) -> Mapped:
        if not isinstance(item, dict):
            return Mapped(OTHER, "agent", {"subtype": type(item).__name__}, {}, [])
        kind = item.get("type")
        role = item.get("role")
        meta = {"id": item["id"]} if isinstance(item.get("id"), str) else {}
        if isinstance(role, str) and kind in (None, "message"):
            blocks = _blocks(item.get("content"))
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
            if role == "user":
                mid, form = self._message("user", blocks, meta)
                return Mapped("UserPromptSubmitted", "user", {"text": preview(text)},
                              {"message_id": mid}, [(mid, form)])
            if role == "assistant":
                mid, form = self._message("assistant", blocks, meta)
                return Mapped("ModelResponseReceived", "model", {"text": preview(text)},
                              {"message_id": mid}, [(mid, form)])
            msg_role = role if role in ("system", "developer") else "custom"
            mid, form = self._message(msg_role, blocks, meta)
            return Mapped("MessageAdded", "system", {"role": msg_role, "text": preview(text)},
                          {"message_id": mid}, [(mid, form)])
        if kind == "reasoning":
            summary = _text_of(item.get("summary"))
            mid, form = self._message("assistant", [ThinkingBlock(summary)],
                                      {**meta, "kind": "reasoning"})
            return Mapped("ModelResponseReceived", "model", {"kind": "reasoning"},
                          {"message_id": mid}, [(mid, form)])
        call_id = item.get("call_id")
        if isinstance(kind, str) and isinstance(call_id, str) and call_id:
            if kind.endswith("_call_output"):
                return self._output(item, kind, call_id)
            if kind.endswith("_call"):
                name = str(item.get("name") or kind)
                args = _call_args(item)
                self.call_names[call_id] = name
                mid, form = self._message("assistant", [ToolCallBlock(call_id, name, args)],
                                          {**meta, "kind": kind})
                return Mapped("ToolCallRequested", "model",
                              tool_requested_payload(call_id, name, args),
                              {"tool_call_id": call_id, "message_id": mid}, [(mid, form)])
        payload: dict[str, Any] = {"subtype": kind} if isinstance(kind, str) else {}
        return Mapped(OTHER, "agent", payload, {}, [])

    def _output(self, item: dict, kind: str, call_id: str) -> Mapped:
        out = item.get("output")
        text = out if isinstance(out, str) else _text_of(out) if out is not None else ""
        if not isinstance(out, (str, list)) and out is not None:
            text = json.dumps(out, ensure_ascii=False, sort_keys=True, default=str)
        mid, form = self._message("tool", [ToolResultBlock(call_id, text=text)], {"kind": kind})
        payload: dict[str, Any] = {"tool_call_id": call_id, "preview": preview(text),
                                   "size": len(text.encode("utf-8", "replace")),
                                   "truncated": len(text) > PREVIEW_CHARS}
        name = self.call_names.get(call_id)
        if name:
            payload["name"] = name
        return Mapped("ToolCallFinished", "tool", payload,
                      {"tool_call_id": call_id, "message_id": mid}, [(mid, form)])

    def event_fields(self, item: Any) -> tuple[str, str, dict, dict]:
        """(type, actor, payload, causality) of the event that keeps `item`."""
        m = self.map(item)
        try:
            text = json.dumps(item, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ItemNotJSON(f"an Agents SDK item must be JSON, as SQLiteSession stores it: "
                              f"{exc}") from None
        # The whole item stays in the event (strings over the threshold in blobs), not named
        # through its message: a load then reads one object per item instead of ~1.75, for
        # ~4% more bytes on disk (the packs compress the repeated text).
        kept = keep_line(self.objects, item, text, self.threshold, [], "", self.chunking)
        m.payload["source"] = {"format": FMT, **kept}
        return m.type, m.actor, m.payload, m.causality


def item_of(store, ev: Event) -> Any:
    """The item an event keeps (deep-equal to the one added); None if it keeps none."""
    return item_from_source(store, ev.payload.get("source"), ev.causality)


def item_from_source(store, source: Any, causality: Any) -> Any:
    """The item a `payload.source` keeps (plain or frozen values alike); None for none."""
    if not isinstance(source, dict):
        return None
    if "record" in source:
        if not source.get("refs") and not source.get("blobs"):
            return thaw(source["record"])
        return rebuild_record(store, source, causality)
    line = event_line(store, {"source": source}, causality)
    return None if line is None else json.loads(line)


def is_item_source(source: Any) -> bool:
    return isinstance(source, dict) and source.get("format") == FMT


def is_item_event(ev: Event) -> bool:
    return is_item_source(ev.payload.get("source"))


_NOT_ITEM = object()


class ItemChain:
    """Items along first parents, with what this process already read or wrote remembered:
    event id -> (first parent, frozen item or _NOT_ITEM). The Runner loads the whole history
    at every turn; after the first load only the new events are read from the store."""

    def __init__(self, store) -> None:
        self.objects = store
        self._links: dict[str, tuple[str | None, Any]] = {}

    def note(self, eid: str, parent: str | None, item: Any) -> None:
        self._links[eid] = (parent, freeze(item))

    def back(self, tip: str | None, limit: int | None = None) -> list[Any]:
        """The items from `tip` back, newest first, at most `limit`, as fresh mutable copies."""
        out: list[Any] = []
        eid = tip
        links, store = self._links, self.objects
        while eid and (limit is None or len(out) < limit):
            hit = links.get(eid)
            if hit is None:
                ev = codec.unpack_value(store.get_raw(eid)[1])
                parents = ev.get("parents") or ()
                payload = ev.get("payload")
                source = payload.get("source") if isinstance(payload, dict) else None
                item = (freeze(item_from_source(store, source, ev.get("causality") or {}))
                        if is_item_source(source) else _NOT_ITEM)
                hit = links[eid] = (parents[0] if parents else None, item)
            eid, item = hit
            if item is not _NOT_ITEM:
                out.append(thaw(item))
        return out
