"""What a push sends for one ref: the objects its tip reaches that the remote's bases do not.

Events: a walk from the tip and the bases at once, highest generation first (as
repo/graph.py's merge-base walk), that stops when every queued event is known to be reachable
from a base, so its cost is the new history, not all history. Then everything those events
link to (messages, artifacts, blobs, chunks, sessions, compactions, snapshots), except events
the remote already has. An event linked from a new object but not reached by the walk (a
compaction range, a memory's source) is left out only if it is an ancestor of a base.

`SendFilter` lets a caller narrow what is sent: it receives the ref, its tip and the ids and
returns the ids to send. It cannot change ids, so redaction does not go through it: a redacted
push rewrites the refs' history into the store first and pushes the redacted refs
(push.py, docs/format.md "Redacted pushes").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from .. import codec
from ..errors import BadRevision, ObjectNotFound
from ..objects import links

SendFilter = Callable[[str, str, set[str]], set[str]]

_NEW, _HAVE = 1, 2


class EventMeta:
    """(generation, parents) of events, decoded from their bodies without building Event
    values (a push reads each new event for the walk; building frozen Events cost 3x more)."""

    def __init__(self, store) -> None:
        self.objects = store
        self._memo: dict[str, tuple[int, tuple[str, ...]]] = {}

    def __call__(self, eid: str) -> tuple[int, tuple[str, ...]]:
        got = self._memo.get(eid)
        if got is None:
            type_name, body = self.objects.get_raw(eid)
            value = codec.unpack_value(body) if type_name == "event" else None
            if not isinstance(value, dict):
                raise BadRevision(f"object {eid[:12]} is not an event")
            got = self._memo[eid] = (int(value["generation"]), tuple(value["parents"]))
        return got


def new_events(meta: EventMeta, tip: str, bases: Iterable[str]) -> tuple[list[str], set[str]]:
    """(events reachable from `tip` and from no base, newest first; the base-side events the
    walk met, flagged as the remote's)."""
    flags: dict[str, int] = {}
    heap: list[tuple[int, str]] = []

    def push(eid: str, flag: int) -> None:
        old = flags.get(eid, 0)
        if old | flag != old:
            flags[eid] = old | flag
            heapq.heappush(heap, (-meta(eid)[0], eid))

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
        for p in meta(eid)[1]:
            before = flags.get(p, 0)
            push(p, f & _HAVE or _NEW)
            after = flags[p]
            if after == _NEW and before == 0:
                pending_new += 1
            elif before == _NEW and after & _HAVE and p not in done:
                pending_new -= 1
    have = {e for e, f in flags.items() if f & _HAVE}
    return out, have


def is_ancestor(meta: EventMeta, ancestor: str, descendant: str) -> bool:
    """Whether `ancestor` is reachable from `descendant` (itself included), reading only the
    events above the ancestor's generation."""
    if ancestor == descendant:
        return True
    target = meta(ancestor)[0]
    stack, seen = [descendant], {descendant}
    while stack:
        for p in meta(stack.pop())[1]:
            if p == ancestor:
                return True
            if p not in seen and meta(p)[0] > target:
                seen.add(p)
                stack.append(p)
    return False


def objects_to_send(repo, tip: str, bases: list[str], meta: EventMeta | None = None,
                    known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Every id to put in the pack for `tip` given the remote has `bases` (and all they reach).

    `known`: ids the remote is known to hold (the records of its recent packs): the walk does
    not enter them, so objects new events share with old ones — a snapshot's base chain and
    its file contents, a repeated message — are not sent again."""
    if not bases:  # the remote has nothing of this session: everything, as `ctx pack` walks
        return links.reachable(repo.objects, [tip])
    meta = meta or EventMeta(repo.objects)
    events, have = new_events(meta, tip, bases)
    new = set(events)
    store = repo.objects
    cache: dict[str, bool] = {}

    def stop(obj_id: str) -> bool:
        if obj_id in new:
            return False
        if obj_id in have or obj_id in known:
            return True
        if not bases:
            return False
        had = cache.get(obj_id)
        if had is None:
            try:
                is_event = store.type_of(obj_id) == "event"
            except ObjectNotFound:
                is_event = False  # the walk reports it as missing
            had = is_event and any(is_ancestor(meta, obj_id, b) for b in bases)
            cache[obj_id] = had
        return had

    return links.reachable(store, events, stop=stop)
