"""Walks over the event DAG that stop early, thanks to generation numbers.

Every event stores `generation = max(parent generations) + 1`. Popping events from a max-heap
on generation visits children before parents, so a node's reachability flags are final when it
is popped, and a walk can stop as soon as every queued node is known to be common to both sides:
merge-base and diff cost O(divergence), `log -n N` costs O(N), never a walk of all history.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..errors import BadRevision
from ..objects import Event
from ..store import ObjectStore

_A, _B, _STALE = 1, 2, 4


class GraphDiff(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    base: str | None  # the best merge base (highest generation), None if unrelated
    only_a: list[str]  # newest first
    only_b: list[str]


class EventGraph:
    """Read-side view of the DAG with a small event cache (events are immutable, so caching is safe)."""

    def __init__(self, store: ObjectStore, cache_size: int = 65536) -> None:
        self.objects = store
        self._cache: OrderedDict[str, Event] = OrderedDict()
        self._cache_size = cache_size

    def event(self, event_id: str) -> Event:
        ev = self._cache.get(event_id)
        if ev is not None:
            return ev
        obj = self.objects.get(event_id)
        if not isinstance(obj, Event):
            raise BadRevision(f"object {event_id[:12]} is not an event")
        self._cache[event_id] = obj
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return obj

    def generation(self, event_id: str) -> int:
        return self.event(event_id).generation

    # -- ordered walks -------------------------------------------------------------------------
    def walk(self, tips: Iterable[str], limit: int | None = None,
             first_parent: bool = False) -> Iterator[tuple[str, Event]]:
        """Events reachable from `tips`, newest first (generation, then timestamp), each once."""
        heap: list[tuple[int, str, str]] = []
        seen: set[str] = set()
        for t in tips:
            if t not in seen:
                seen.add(t)
                ev = self.event(t)
                heapq.heappush(heap, (-ev.generation, _neg_ts(ev.ts), t))
        n = 0
        while heap and (limit is None or n < limit):
            _, _, eid = heapq.heappop(heap)
            ev = self.event(eid)
            yield eid, ev
            n += 1
            parents = ev.parents[:1] if first_parent else ev.parents
            for p in parents:
                if p not in seen:
                    seen.add(p)
                    pev = self.event(p)
                    heapq.heappush(heap, (-pev.generation, _neg_ts(pev.ts), p))

    def first_parents(self, start: str | None) -> Iterator[tuple[str, Event]]:
        """(id, event) from `start` back along first parents to the session root: the one
        first-parent walk (a branch's own line: projections, compaction ranges, the session
        an event belongs to). Callers stop it where they like."""
        eid = start
        while eid:
            ev = self.event(eid)
            yield eid, ev
            eid = ev.parents[0] if ev.parents else None

    def nth_ancestor(self, event_id: str, n: int) -> str:
        """Follow first parents n times (REV~N)."""
        cur = event_id
        for i in range(n):
            parents = self.event(cur).parents
            if not parents:
                raise BadRevision(f"{event_id[:12]}~{n}: history has only {i} ancestors")
            cur = parents[0]
        return cur

    def nth_parent(self, event_id: str, n: int) -> str:
        """REV^N: the N-th parent (1-based); REV^0 is REV itself."""
        if n == 0:
            return event_id
        parents = self.event(event_id).parents
        if n > len(parents):
            raise BadRevision(f"{event_id[:12]}^{n}: event has {len(parents)} parent(s)")
        return parents[n - 1]

    # -- two-sided walks -----------------------------------------------------------------------
    def _paint(self, a: str, b: str) -> tuple[list[str], list[str], list[str]]:
        """Paint down from a and b; returns (common candidates, only-a, only-b), newest first."""
        flags: dict[str, int] = {a: _A}
        flags[b] = flags.get(b, 0) | _B
        heap = [(-self.generation(x), x) for x in {a, b}]
        heapq.heapify(heap)
        active = {x for x in (a, b)}
        done: set[str] = set()
        common: list[str] = []
        only_a: list[str] = []
        only_b: list[str] = []
        while heap and active:
            _, eid = heapq.heappop(heap)
            if eid in done:
                continue
            done.add(eid)
            active.discard(eid)
            f = flags[eid]
            side = f & (_A | _B)
            if f & _STALE:
                pass
            elif side == _A | _B:
                common.append(eid)
                f |= _STALE
            elif side == _A:
                only_a.append(eid)
            else:
                only_b.append(eid)
            for p in self.event(eid).parents:
                old = flags.get(p, 0)
                new = old | f
                if new != old:
                    flags[p] = new
                    if new & _STALE:
                        active.discard(p)
                    elif p not in done:
                        active.add(p)
                    heapq.heappush(heap, (-self.generation(p), p))
        return common, only_a, only_b

    def merge_bases(self, a: str, b: str) -> list[str]:
        """Best common ancestors (none an ancestor of another), highest generation first."""
        if a == b:
            return [a]
        common, _, _ = self._paint(a, b)
        if len(common) <= 1:
            return common
        return [c for c in common
                if not any(o != c and self.is_ancestor(c, o) for o in common)]

    def merge_base(self, a: str, b: str) -> str | None:
        bases = self.merge_bases(a, b)
        return bases[0] if bases else None

    def diff(self, a: str, b: str) -> GraphDiff:
        if a == b:
            return GraphDiff(a, [], [])
        common, only_a, only_b = self._paint(a, b)
        bases = common if len(common) <= 1 else self.merge_bases(a, b)
        return GraphDiff(bases[0] if bases else None, only_a, only_b)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True if `ancestor` is reachable from `descendant` (a node is its own ancestor)."""
        if ancestor == descendant:
            return True
        target_gen = self.generation(ancestor)
        stack = [descendant]
        seen = {descendant}
        while stack:
            eid = stack.pop()
            for p in self.event(eid).parents:
                if p == ancestor:
                    return True
                if p not in seen and self.generation(p) > target_gen:
                    seen.add(p)
                    stack.append(p)
        return False

    def reachable_events(self, tips: Iterable[str]) -> set[str]:
        seen: set[str] = set()
        stack = [t for t in tips]
        while stack:
            eid = stack.pop()
            if eid in seen:
                continue
            seen.add(eid)
            stack.extend(p for p in self.event(eid).parents if p not in seen)
        return seen


def _neg_ts(ts: str) -> str:
    """Invert an ISO timestamp's order for the min-heap (newest first among equal generations)."""
    return "".join(chr(0x10FFFF - ord(c)) if c.isdigit() else c for c in ts)
