"""Finding events: the filters of `ctx log` and the full-text scan of `ctx grep`.

`ctx log` filters on what an event carries itself (type, actor, time, payload text), so a
filter costs no extra object reads. `ctx grep` also opens what events name — messages (text,
thinking, tool calls with their arguments, tool results) and artifacts (their text content) —
each object once however many events name it. It is a plain scan of the reachable history;
an index can replace the scan later without changing what a hit is.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import parse_ts
from ..errors import CtxError
from ..objects import Event
from ..objects.frozen import thaw
from ..refs import HEAD
from ..repo import Repository, iter_session_refs
from ..repo.revparse import resolve_event

#: Importer namespaces whose `system` events are source bookkeeping (see `is_bookkeeping`).
SOURCE_NAMESPACES = ("claude-code:", "codex:", "pi:")

#: Artifacts larger than this are not searched (their preview in the result still is).
GREP_ARTIFACT_LIMIT = 8 << 20


def is_bookkeeping(ev: Event) -> bool:
    """A record an importer kept from the source that neither the user nor the model wrote:
    a namespaced type of an importer (`claude-code:progress`, `claude-code:file-history-snapshot`,
    `codex:turn_context`, `pi:model_change`, ...) with actor `system`. Harness records a person
    wrote (`pi:bashExecution`, actor user) and custom types (`x.tool.Thing`) are not."""
    return ev.actor == "system" and ev.type.startswith(SOURCE_NAMESPACES)


def payload_strings(value: Any, skip: frozenset[str] = frozenset({"source"})) -> Iterator[str]:
    """Every string in a payload (map values and list items, recursively), leaving out the
    `source` copy of the original line, which repeats what the payload and message hold."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict) or hasattr(value, "items"):
        for k, v in value.items():
            if k not in skip:
                yield from payload_strings(v, frozenset())
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from payload_strings(v, frozenset())


@dataclass(frozen=True)
class EventFilter:
    """What `ctx log` keeps. Empty fields match everything; `types` are glob patterns."""

    types: tuple[str, ...] = ()
    actors: tuple[str, ...] = ()
    grep: re.Pattern | None = None
    since: datetime | None = None
    until: datetime | None = None
    bookkeeping: bool = False  # show source bookkeeping events too

    @property
    def active(self) -> bool:
        return bool(self.types or self.actors or self.grep or self.since or self.until
                    or not self.bookkeeping)

    def matches(self, ev: Event) -> bool:
        if self.types:
            if not any(fnmatch.fnmatchcase(ev.type, t) for t in self.types):
                return False
        elif not self.bookkeeping and is_bookkeeping(ev):
            return False
        if self.actors and ev.actor not in self.actors:
            return False
        if self.since or self.until:
            when = parse_ts(ev.ts)
            if when is None or (self.since and when < self.since) or \
                    (self.until and when > self.until):
                return False
        if self.grep is not None:
            return any(self.grep.search(s) for s in payload_strings(ev.payload))
        return True


def filtered(walk: Iterable[tuple[str, Event]], flt: EventFilter, limit: int | None,
             walked: list[tuple[str, Event]] | None = None) -> list[tuple[str, Event]]:
    """The first `limit` events of `walk` that `flt` keeps; every event looked at is appended
    to `walked` when given (for `visible_parents`)."""
    out: list[tuple[str, Event]] = []
    if limit == 0:
        return out
    for item in walk:
        if walked is not None:
            walked.append(item)
        if flt.matches(item[1]):
            out.append(item)
            if limit is not None and len(out) >= limit:
                break
    return out


def visible_parents(walked: list[tuple[str, Event]], shown: set[str]
                    ) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(parents, nearest): for each shown event, its nearest shown ancestors along every parent
    path (hidden events are skipped over), so a filtered `log --graph` still draws forks and
    merges; for each hidden event, its nearest shown ancestors (where a branch whose tip is
    hidden is drawn). `walked` is newest first; a parent the walk did not reach is kept."""
    through: dict[str, tuple[str, ...]] = {}
    out: dict[str, tuple[str, ...]] = {}
    for eid, ev in reversed(walked):  # oldest first: parents are done before children
        ps: list[str] = []
        for p in ev.parents:
            for q in through.get(p, (p,)):
                if q not in ps:
                    ps.append(q)
        if eid in shown:
            out[eid] = tuple(ps)
            through[eid] = (eid,)
        else:
            through[eid] = tuple(ps)
    return out, {eid: anc for eid, anc in through.items() if eid not in shown}


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

        msg = repo.store.get_typed(mid, Message)
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

        art = repo.store.get_typed(aid, Artifact)
    except CtxError:
        stats.skipped_artifacts.append(aid)  # fsck's business; grep names it and goes on
        return
    if art.size > GREP_ARTIFACT_LIMIT:
        stats.skipped_artifacts.append(aid)
        return
    stats.artifacts += 1
    from ..chunking import open_content

    with open_content(repo.store, art.content) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # binary content: nothing to match lines in
    for line in _lines(pattern, text):
        yield Hit(sid, eid, ev.type, f"artifact {art.uri or art.kind}".strip(), line, aid)
