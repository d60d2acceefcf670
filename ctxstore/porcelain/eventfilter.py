"""The filters of `ctx log`: what an event carries itself (type, actor, time, payload text),
so a filter costs no extra object reads.

Its own module, apart from `ctx grep` (search.py), because `ctx log` starts on every call and
must not pay for what only grep needs.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, NamedTuple

from ..clock import parse_ts
from ..importers.harnesses import BUILTIN, MODULES  # names only: no importer is loaded
from ..objects import Event

#: Importer namespaces whose `system` events are source bookkeeping (see `is_bookkeeping`):
#: every harness ctxstore imports.
SOURCE_NAMESPACES = tuple(f"{fmt}:" for fmt in (*BUILTIN, *MODULES))

def is_bookkeeping(ev: Event) -> bool:
    """A record an importer kept from the source that neither the user nor the model wrote:
    a namespaced type of an importer (`claude-code:progress`, `claude-code:file-history-snapshot`,
    `codex:turn_context`, `pi:model_change`, ...) with actor `system`. Harness records a person
    wrote (`pi:bashExecution`, actor user) and custom types (`x.tool.Thing`) are not, nor is
    a harness record mapped onto a workspace snapshot (payload.workspace: `ctx restore` can
    use it)."""
    return ev.actor == "system" and ev.type.startswith(SOURCE_NAMESPACES) \
        and "workspace" not in ev.payload


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


class EventFilter(NamedTuple):
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
