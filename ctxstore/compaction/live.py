"""The live history of a branch: what no compaction replaced.

One walk used by both the context builder and the compaction engine, so they always agree on
where the summarized range ends. Newest first along first parents, skipping
CompactionCompleted events; the newest compaction met is the boundary (its summary stands for
everything before it). The walk stops at the first event that a compaction met on the way
replaced (one of its `source_event_ids`, i.e. its `last_event` for a contiguous range): the
events from a compaction's `first_event` through `last_event` are never live again, and the
next compaction therefore starts after `last_event`.

That rule holds for every kind of record, whatever it says about `first_kept`:

- made here: `first_kept` is the child of `last_event`; the walk stops just after yielding it;
- Claude Code `compact_boundary` and Codex `compacted` imports replace everything since the
  previous compaction and keep nothing (`first_kept == ""`): the walk stops at `last_event`;
- pi's `compaction` keeps from `firstKeptEntryId`, which may lie before the compaction's own
  event and even before its range is empty (nothing replaced): the walk yields down to
  `first_kept` and stops after it, unless a replaced event comes first.

A compaction that replaced nothing and kept nothing (a harness compacting twice in a row)
stands for everything before it: the walk stops there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..objects import Compaction, Event


@dataclass
class Boundary:
    """Filled in by `live_events` when it meets the newest compaction."""

    record: Compaction | None = None
    record_id: str = ""
    event: str | None = None  # the CompactionCompleted event naming it
    #: every event replaced by a compaction met on the walk (the newest and those it chains to)
    replaced: set[str] = field(default_factory=set)


def live_events(graph, store, tip: str, boundary: Boundary) -> Iterator[tuple[str, Event]]:
    stop_after: str | None = None  # the newest compaction's first_kept: yield it, then stop
    for eid, ev in graph.first_parents(tip):
        if ev.type == "CompactionCompleted":
            cid = ev.causality.get("compaction_id")
            obj = store.get(cid) if cid else None
            if not isinstance(obj, Compaction) or obj.kind == "merge":
                continue
            boundary.replaced.update(obj.source_event_ids)
            if boundary.record is None:
                boundary.record, boundary.record_id, boundary.event = obj, cid, eid
                stop_after = obj.first_kept or None
                if not obj.source_event_ids and not obj.first_kept:
                    return  # it replaced nothing and kept nothing: it stands for all before it
            continue
        if eid in boundary.replaced:
            return
        yield eid, ev
        if eid == stop_after:
            return
