"""What a push sends for one ref: the objects its tip reaches that the remote's bases do not.

Events: a walk from the tip and the bases at once, highest generation first (as
repo/graph.py's merge-base walk), that stops when every queued event is known to be reachable
from a base, so its cost is the new history, not all history. Then everything those events
link to (messages, artifacts, blobs, chunks, sessions, compactions, snapshots), except events
the remote already has. An event linked from a new object but not reached by the walk (a
compaction range, a memory's source) is left out only if it is an ancestor of a base.

`SendFilter` is the place for a transformation of what is sent (a future `redact` hook):
it receives the ref, its tip and the ids and returns the ids to send.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from ..errors import ObjectNotFound
from ..objects import links

SendFilter = Callable[[str, str, set[str]], set[str]]

_NEW, _HAVE = 1, 2


def new_events(graph, tip: str, bases: Iterable[str]) -> tuple[list[str], set[str]]:
    """(events reachable from `tip` and from no base, newest first; the base-side events the
    walk met)."""
    flags: dict[str, int] = {}
    heap: list[tuple[int, str]] = []

    def push(eid: str, flag: int) -> None:
        old = flags.get(eid, 0)
        if old | flag != old:
            flags[eid] = old | flag
            heapq.heappush(heap, (-graph.generation(eid), eid))

    for b in bases:
        push(b, _HAVE)
    push(tip, _NEW)
    pending_new = 1 if flags[tip] == _NEW else 0
    done: set[str] = set()
    out: list[str] = []
    while heap and pending_new:
        _, eid = heapq.heappop(heap)
        if eid in done:
            continue
        done.add(eid)
        f = flags[eid]
        if f == _NEW:
            pending_new -= 1
            out.append(eid)
        for p in graph.event(eid).parents:
            before = flags.get(p, 0)
            push(p, f & _HAVE or _NEW)
            after = flags[p]
            if after == _NEW and before == 0:
                pending_new += 1
            elif before == _NEW and after & _HAVE and p not in done:
                pending_new -= 1
    have = {e for e, f in flags.items() if f & _HAVE}
    return out, have


def objects_to_send(repo, tip: str, bases: list[str]) -> set[str]:
    """Every id to put in the pack for `tip` given the remote has `bases` (and all they reach)."""
    graph = repo.graph
    events, have = new_events(graph, tip, bases)
    new = set(events)
    store = repo.store
    cache: dict[str, bool] = {}

    def stop(obj_id: str) -> bool:
        if obj_id in new:
            return False
        if obj_id in have:
            return True
        if not bases:
            return False
        known = cache.get(obj_id)
        if known is None:
            try:
                is_event = store.type_of(obj_id) == "event"
            except ObjectNotFound:
                is_event = False  # the walk reports it as missing
            known = is_event and any(graph.is_ancestor(obj_id, b) for b in bases)
            cache[obj_id] = known
        return known

    return links.reachable(store, events, stop=stop)
