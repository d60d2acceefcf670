"""Text for the retrieval index: what a memory, an artifact or an event says, and its tokens.

One tokenizer for indexing and querying (lower-cased word characters, identifiers split at
`_`, `.` and `/` kept apart, a short English stop list), so `ctx grep --ranked`, `ctx memory
search` and the context builder rank alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..chunking import text_start
from ..objects import Artifact, Event, Message
from ..objects.memory import Memory

#: Bytes of an artifact's content that are indexed (the rest is reached through the artifact).
ARTIFACT_TEXT_LIMIT = 64 << 10
#: Characters of an event's text that are indexed.
EVENT_TEXT_LIMIT = 8 << 10

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by for from has have i in is it its of on or that the this to was "
    "were will with you we our your not but if then so do does did can could should would".split())


def tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if len(t) > 1 and t not in STOPWORDS]


def memory_text(mem: Memory) -> str:
    return " ".join((mem.content, mem.kind, *mem.keywords))


def artifact_text(store, art: Artifact) -> str:
    head = f"{art.kind} {art.uri} {art.summary}"
    if art.size > 16 * ARTIFACT_TEXT_LIMIT or not art.content:
        return head
    text = text_start(store, art.content, ARTIFACT_TEXT_LIMIT)
    return head if text is None else head + "\n" + text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != "source":
                yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def event_text(ev: Event, msg: Message | None) -> str:
    """What an event says: its message's text, tool calls and results, else its payload's
    strings (ids left out)."""
    parts: list[str] = []
    if msg is not None:
        for b in msg.blocks:
            kind = b.KIND
            if kind in ("text", "thinking", "summary"):
                parts.append(b.text)  # type: ignore[attr-defined]
            elif kind == "tool_call":
                parts.append(b.name)  # type: ignore[attr-defined]
                parts.extend(_strings(b.args))  # type: ignore[attr-defined]
            elif kind == "tool_result":
                parts.append(b.text or b.preview)  # type: ignore[attr-defined]
    else:
        parts.extend(s for s in _strings(ev.payload) if not (len(s) == 64 and s.isalnum()))
    return "\n".join(p for p in parts if p)[:EVENT_TEXT_LIMIT]


def snippet(text: str, query_tokens: set[str], limit: int = 600) -> str:
    """The lines of TEXT that share most words with the query, in order, within LIMIT chars."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    scored = sorted(range(len(lines)),
                    key=lambda i: -len(query_tokens.intersection(tokens(lines[i]))))
    keep: list[int] = []
    size = 0
    for i in scored:
        if size + len(lines[i]) > limit and keep:
            break
        keep.append(i)
        size += len(lines[i]) + 1
        if size >= limit:
            break
    return "\n".join(lines[i][:limit] for i in sorted(keep))
