"""Finding events: the full-text scan of `ctx grep` (the filters of `ctx log` live in
eventfilter.py and are re-exported here).

`ctx grep` also opens what events name — messages (text,
thinking, tool calls with their arguments, tool results) and artifacts (their text content) —
each object once however many events name it. It is a plain scan of the reachable history;
an index can replace the scan later without changing what a hit is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import CtxError
from ..objects import Event
from ..objects.frozen import thaw
from ..refs import HEAD
from ..repo import Repository, iter_session_refs
from ..repo.revparse import resolve_event
from .eventfilter import (
    payload_strings,
)

#: Artifacts larger than this are not searched (their preview in the result still is).
GREP_ARTIFACT_LIMIT = 8 << 20


# -- ctx grep ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hit:
    """One matching line: the event to open (`ctx show EVENT`), where in it the line is, and
    the object that holds it (the event, its message, or an artifact)."""

    session: str | None
    event: str
    type: str
    where: str
    line: str
    object: str

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "event": self.event, "type": self.type,
                "where": self.where, "line": self.line, "object": self.object}


@dataclass
class GrepStats:
    events: int = 0
    messages: int = 0
    artifacts: int = 0
    skipped_artifacts: list[str] = field(default_factory=list)


def grep_tips(repo: Repository, rev: str | None, all_sessions: bool) -> list[tuple[str | None, str]]:
    """(session, tip) pairs to search: every branch of every session with `all_sessions`,
    else REV (default HEAD)."""
    if all_sessions:
        return [(sid, tip) for sid, _b, tip in iter_session_refs(repo)]
    tip = resolve_event(repo, rev or HEAD)
    return [(repo.session_of_event(tip), tip)]


def grep(repo: Repository, pattern: re.Pattern, tips: list[tuple[str | None, str]],
         stats: GrepStats | None = None) -> Iterator[Hit]:
    """Hits for `pattern` in every event reachable from `tips`, newest first per session.

    Each message and artifact is searched once, at the first (newest) event that names it."""
    stats = stats if stats is not None else GrepStats()
    seen_events: set[str] = set()
    seen_objects: set[str] = set()
    by_session: dict[str | None, list[str]] = {}
    for sid, tip in tips:
        by_session.setdefault(sid, []).append(tip)
    for sid, session_tips in by_session.items():
        for eid, ev in repo.graph.walk(session_tips):
            if eid in seen_events:
                continue
            seen_events.add(eid)
            stats.events += 1
            yield from _event_hits(repo, pattern, sid, eid, ev, seen_objects, stats)


def _lines(pattern: re.Pattern, text: str) -> Iterator[str]:
    if not pattern.search(text):
        return
    for line in text.splitlines():
        if pattern.search(line):
            yield line


def _event_hits(repo: Repository, pattern: re.Pattern, sid: str | None, eid: str, ev: Event,
                seen: set[str], stats: GrepStats) -> Iterator[Hit]:
    def hit(where: str, obj: str, text: str) -> Iterator[Hit]:
        for line in _lines(pattern, text):
            yield Hit(sid, eid, ev.type, where, line, obj)

    for key, value in ev.payload.items():
        if key in ("source", "text", "preview"):  # the source copy; previews of the message
            continue
        for s in payload_strings(value):
            yield from hit(f"payload.{key}", eid, s)
    mid = ev.causality.get("message_id")
    if isinstance(mid, str) and mid not in seen:
        seen.add(mid)
        stats.messages += 1
        from ..objects.message import Message  # start-up: `ctx log` filters need none of it

        msg = repo.objects.get_typed(mid, Message)
        for block in msg.blocks:
            kind = block.KIND
            if kind in ("text", "thinking", "summary"):
                yield from hit(kind, mid, block.text)  # type: ignore[attr-defined]
            elif kind == "tool_call":
                yield from hit(f"tool call {block.name}", mid, block.name)  # type: ignore[attr-defined]
                for s in payload_strings(thaw(block.args)):  # type: ignore[attr-defined]
                    yield from hit(f"tool call {block.name}", mid, s)  # type: ignore[attr-defined]
            elif kind == "tool_result":
                yield from hit("result", mid, block.text or block.preview)  # type: ignore[attr-defined]
                ref = block.output_ref  # type: ignore[attr-defined]
                if ref and ref not in seen:
                    seen.add(ref)
                    yield from _artifact_hits(repo, pattern, sid, eid, ev, ref, stats)
    elif not isinstance(mid, str):
        for key in ("text", "preview"):
            s = ev.payload.get(key)
            if isinstance(s, str):
                yield from hit(f"payload.{key}", eid, s)
    aid = ev.causality.get("artifact_id")
    if isinstance(aid, str) and aid not in seen:
        seen.add(aid)
        yield from _artifact_hits(repo, pattern, sid, eid, ev, aid, stats)


def _artifact_hits(repo: Repository, pattern: re.Pattern, sid: str | None, eid: str, ev: Event,
                   aid: str, stats: GrepStats) -> Iterator[Hit]:
    try:
        from ..objects.message import Artifact

        art = repo.objects.get_typed(aid, Artifact)
    except CtxError:
        stats.skipped_artifacts.append(aid)  # fsck's business; grep names it and goes on
        return
    if art.size > GREP_ARTIFACT_LIMIT:
        stats.skipped_artifacts.append(aid)
        return
    stats.artifacts += 1
    from ..chunking import open_content

    with open_content(repo.objects, art.content) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # binary content: nothing to match lines in
    for line in _lines(pattern, text):
        yield Hit(sid, eid, ev.type, f"artifact {art.uri or art.kind}".strip(), line, aid)


# -- ctx grep --ranked: the retrieval index ------------------------------------------------------

def ranked_grep(repo: Repository, query: str, tips: list[tuple[str | None, str]],
                all_sessions: bool, k: int = 20) -> list[dict[str, Any]]:
    """The K events and artifacts best matching QUERY (BM25, the retrieval index that `ctx memory
    search` and the context builder use), in the sessions of TIPS or every session; each with
    the event to open and the best-matching lines. Needs ctxstore[memory]."""
    from ..objects import Artifact, Message
    from ..retrieval import RetrievalIndex
    from ..retrieval.text import artifact_text, event_text, snippet, tokens

    index = RetrievalIndex.open(repo)
    groups = None if all_sessions else sorted({f"s:{sid}" for sid, _t in tips if sid})
    qt = set(tokens(query))
    out = []
    for row, score in index.search(query, k=k, kinds=["event", "artifact"], groups=groups):
        obj = repo.objects.get(row.id)
        if isinstance(obj, Artifact):
            text, ev = artifact_text(repo.objects, obj), repo.graph.event(row.source)
        else:
            ev = obj
            mid = ev.causality.get("message_id")
            msg = repo.objects.get(mid) if isinstance(mid, str) and mid else None
            text = event_text(ev, msg if isinstance(msg, Message) else None)
        out.append({"kind": row.kind, "id": row.id, "event": row.source, "type": ev.type,
                    "session": row.group[2:], "score": round(score, 4),
                    "lines": snippet(text, qt, 300).splitlines()})
    return out
