"""The snapshot-caching projector: the state at any event of a repository.

`ctxstore.state.project` is a pure fold; this module is where it meets the repository. It walks
the first-parent chain back from an event to the newest cached snapshot on it (an entry of the
`snapshots` EventCache naming a "snapshot" object) and folds only the events after it. Merged
branches contribute through the merge event itself, not their raw events.

Snapshots are written only at generations that are multiples of SNAPSHOT_EVERY, so a line of n
events has at most n / SNAPSHOT_EVERY of them whoever projects (read-only commands included), and
a projection folds fewer than SNAPSHOT_EVERY events past the newest one. A cache entry that does
not name a readable snapshot of the event it is keyed by is ignored, never trusted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CtxError, NotFound
from ..objects import Event
from ..repo import Repository
from ..repo.eventcache import EventCache
from .model import AgentState, snapshot_value, state_from_snapshot
from .projection_cache import ProjectionCache

if TYPE_CHECKING:
    from ..objects.message import Message

#: Snapshots are written at events whose generation is a multiple of this.
SNAPSHOT_EVERY = 256


class Projector:
    """Projects state at events of one repository, reading and writing its snapshot cache."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.snapshots = EventCache(repo.path, "snapshots")
        self.recent = ProjectionCache(repo.path)

    def message(self, mid: str) -> Message | None:
        """The message with this id, or None if absent or not a message."""
        from ..objects.message import Message

        try:
            obj = self.repo.objects.get(mid)
        except NotFound:
            return None
        return obj if isinstance(obj, Message) else None

    def project(self, tip: str, *, use_snapshots: bool = True) -> AgentState:
        """The state at event TIP: a fold of its first-parent chain, starting from the newest
        cached projection or snapshot on it (with use_snapshots=False: from the root, writing
        nothing)."""
        graph = self.repo.graph
        chain: list[tuple[str, Event]] = []
        start: AgentState | None = None
        recent = self.recent.ids() if use_snapshots else ()
        for eid, ev in graph.first_parents(tip):
            if eid in recent:
                start = self._load_recent(eid)
                if start is not None:
                    break
            # snapshots exist only where they are written: looking elsewhere would cost a
            # cache-file open per event (hundreds per `ctx state`)
            if use_snapshots and ev.generation % SNAPSHOT_EVERY == 0:
                snap = self._load_snapshot(eid)
                if snap is not None:
                    start = snap
                    break
            chain.append((eid, ev))
        chain.reverse()
        if not chain and start is not None:
            return start
        from .folds import project  # start-up: a cached projection needs no fold

        state = start
        done = 0
        for i, (eid, ev) in enumerate(chain):
            if use_snapshots and ev.generation % SNAPSHOT_EVERY == 0:
                state = project(chain[done:i + 1], start=state, messages=self.message)
                done = i + 1
                self._save_snapshot(eid, state)
        if done < len(chain) or state is None:
            state = project(chain[done:], start=state, messages=self.message)
        if use_snapshots and chain and chain[-1][0] == tip:
            self.recent.save(tip, snapshot_value(state))
        return state

    def _load_recent(self, event_id: str) -> AgentState | None:
        value = self.recent.load(event_id)
        return state_from_snapshot(value) if value is not None else None

    def _load_snapshot(self, event_id: str) -> AgentState | None:
        sid = self.snapshots.get(event_id)
        if sid is None:
            return None
        try:
            value = self.repo.objects.get(sid)
        except (NotFound, CtxError):  # a broken cache entry is ignored, never trusted
            return None
        if not isinstance(value, dict) or value.get("state", {}).get("source_event") != event_id:
            return None
        return state_from_snapshot(value)

    def _save_snapshot(self, event_id: str, state: AgentState) -> None:
        sid = self.repo.objects.put("snapshot", snapshot_value(state))
        self.snapshots.put(event_id, sid)
