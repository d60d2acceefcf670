"""The live history of a branch: what the newest compaction did not replace.

One walk used by both the context builder and the compaction engine, so they always agree on
where the summarized range ends: newest first along first parents, skipping CompactionCompleted
events, stopping after the newest compaction's `first_kept` event.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..objects import Compaction, Event


@dataclass
class Boundary:
    """Filled in by `live_events` when it meets the newest compaction."""

    record: Compaction | None = None
    record_id: str = ""
    event: str | None = None  # the CompactionCompleted event naming it


def live_events(graph, store, tip: str, boundary: Boundary) -> Iterator[tuple[str, Event]]:
    stop: str | None = None
    for eid, ev in graph.first_parents(tip):
        if ev.type == "CompactionCompleted":
            cid = ev.causality.get("compaction_id")
            if boundary.record is None and cid:
                obj = store.get(cid)
                if isinstance(obj, Compaction):
                    boundary.record, boundary.record_id, boundary.event = obj, cid, eid
                    stop = obj.first_kept
            continue
        yield eid, ev
        if eid == stop:
            return
