"""Provider adapters: a ContextBundle in, a provider's request shape out (seed principle 12).

The bundle stays provider-neutral; only these functions know a wire format. Both adapters:

- put the kept instruction segments (system, developer) and then the working-state segments
  (summary, goal, plan, ...) into the system prompt, separated by blank lines;
- emit the conversation segments in bundle order. A tool pair is an assistant message carrying
  the call followed by its result, so every result directly answers a call in the message
  before it. A PENDING call (no result yet) is sent with a placeholder result that says it is
  pending (it is part of the segment, so its tokens were counted): both providers reject a
  call that is not answered in the next message, and dropping a P0 pair is not an option.
- `to_openai` -> {"messages": [...], "tools"?: [...]} (Chat Completions): system message first,
  `tool_calls` with JSON-string `arguments`, `{"role": "tool", "tool_call_id", "content"}`.
- `to_anthropic` -> {"system": str, "messages": [...], "tools"?: [...]} (Messages API):
  `tool_use` blocks with object `input`, results as user `tool_result` blocks, consecutive
  same-role messages merged so roles alternate, and a placeholder user turn first if the kept
  conversation would start with the assistant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..objects.frozen import thaw
from .bundle import ContextBundle
from .segments import args_json

EARLIER_OMITTED = "[earlier conversation omitted]"


def system_text(bundle: ContextBundle) -> str:
    """The system prompt both adapters send: instructions, then the working state."""
    return "\n\n".join(s.text for s in bundle.kept
                       if s.section in (0, 1) and s.kind != "tool_schema" and s.text)


def _tools(bundle: ContextBundle) -> list[dict]:
    return [thaw(s.data) for s in bundle.kept if s.kind == "tool_schema" and s.data]


def _conversation(bundle: ContextBundle):
    for s in bundle.kept:
        if s.section == 2:
            yield from s.messages


def to_openai(bundle: ContextBundle) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_text(bundle)}]
    for m in _conversation(bundle):
        role = m["role"]
        if role == "tool":
            messages.append({"role": "tool", "tool_call_id": m["tool_call_id"],
                             "content": m["text"]})
        elif role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": m["text"] or None}
            if m.get("tool_calls"):
                out["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"],
                                                   "arguments": args_json(c["args"])}}
                                     for c in m["tool_calls"]]
            messages.append(out)
        else:
            messages.append({"role": "user", "content": m["text"]})
    result: dict[str, Any] = {"messages": messages}
    tools = _tools(bundle)
    if tools:
        result["tools"] = [{"type": "function", "function": t} for t in tools]
    return result


def _input_object(args: Any) -> dict:
    """Anthropic's tool_use `input` must be an object; wrap anything else."""
    args = thaw(args)
    if isinstance(args, Mapping):
        return dict(args)
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"input": args}


def _anthropic_blocks(m) -> tuple[str, list[dict]]:
    role = m["role"]
    if role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m["tool_call_id"],
                                 "content": m["text"]}
        if m.get("is_error"):
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m["text"]}] if m["text"] else []
    if role == "assistant":
        blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"],
                    "input": _input_object(c["args"])} for c in m.get("tool_calls", ())]
        return "assistant", blocks
    return "user", blocks


def to_anthropic(bundle: ContextBundle) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for m in _conversation(bundle):
        role, blocks = _anthropic_blocks(m)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    if messages and messages[0]["role"] != "user":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": EARLIER_OMITTED}]})
    result: dict[str, Any] = {"system": system_text(bundle), "messages": messages}
    tools = _tools(bundle)
    if tools:
        result["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                            "input_schema": t.get("parameters") or {"type": "object"}}
                           for t in tools]
    return result
