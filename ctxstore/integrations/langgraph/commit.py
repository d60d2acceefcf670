"""Moving branch refs for appended events: at once, or in group commits.

Every appended event is put in the store at once and the saver's index sees it at once; the
branch ref that publishes it to other processes moves in a commit:

* durability "always": a commit after every append (store flush, then a ref move with fsync);
* durability "batch" (the default): one commit per branch for everything appended in the last
  `interval` seconds, by a background thread, at `close()`, at interpreter exit, and before any
  operation that reads or moves refs wholesale (list all threads, copy, delete, prune).

A commit always makes the objects durable (store flush) before the ref names them. If another
writer moved the ref meanwhile, the pending events are re-created on top of its new tip (new
parents, same payloads) and the commit is tried again.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import RefConflict
from ...objects import Event
from ...repo import Repository

_RETRIES = 50


@dataclass
class Pending:
    base: str  # the ref's value when the first pending event was appended
    events: list[tuple[str, Event]] = field(default_factory=list)

    @property
    def tip(self) -> str:
        return self.events[-1][0] if self.events else self.base


class Committer:
    def __init__(self, repo: Repository, lock: threading.RLock, *, immediate: bool,
                 interval: float, remember: Callable[[str, Event], None],
                 rebased: Callable[[str, str | None], None], actor: str) -> None:
        self.repo = repo
        self.immediate = immediate
        self.interval = interval
        self._remember = remember
        self._rebased = rebased  # (ref, new tip or None if the ref was deleted meanwhile)
        self._actor = actor
        self.pending: dict[str, Pending] = {}
        self._cond = threading.Condition(lock)
        self._since = 0.0
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, ref: str, base: str, eid: str, ev: Event) -> None:
        """Record an event appended on `base` (the branch's tip before it)."""
        with self._cond:
            pend = self.pending.get(ref)
            if pend is None:
                pend = self.pending[ref] = Pending(base)
                if len(self.pending) == 1:
                    self._since = time.monotonic()
            pend.events.append((eid, ev))
            if self.immediate:
                self.commit(ref)
            elif not self._closed:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name="ctxstore-langgraph-commit")
                    self._thread.start()
                    _LIVE.add(self)
                self._cond.notify()

    def commit(self, ref: str | None = None) -> None:
        """Publish pending events: of one ref, or of all.

        The store is flushed without holding the lock (puts go on meanwhile); then each ref
        moves to the last event that flush covered, and later events stay pending."""
        with self._cond:
            names = [ref] if ref is not None else list(self.pending)
            snap = {n: (self.pending[n].base, len(self.pending[n].events))
                    for n in names if n in self.pending}
        if not snap:
            return
        self.repo.store.flush()  # objects durable before a ref names them
        with self._cond:
            for name, (base, n) in snap.items():
                pend = self.pending.get(name)
                if pend is not None and pend.base == base and len(pend.events) >= n:
                    self._publish(name, pend, n)  # (else another commit got there first)

    def _publish(self, ref: str, pend: Pending, n: int) -> None:
        """Move `ref` from `pend.base` over the first `n` pending events (already durable)."""
        refs = self.repo.refs
        for _ in range(_RETRIES):
            done = pend.events[:n]
            kinds = Counter(ev.type.partition(":")[2] or ev.type for _, ev in done)
            message = "langgraph: " + ", ".join(f"{k} {t}" for t, k in sorted(kinds.items()))
            try:
                refs.set_if_equals(ref, pend.base, done[-1][0], actor=self._actor,
                                   message=message)
            except RefConflict:
                now = refs.read(ref)
                if now is None:  # the branch was deleted meanwhile: our events go with it
                    del self.pending[ref]
                    self._rebased(ref, None)
                    return
                pend = self.pending[ref] = self._replay(pend, now)
                n = len(pend.events)
                self.repo.store.flush()  # the re-created events
                self._rebased(ref, pend.tip)
                continue
            pend.base, pend.events = done[-1][0], pend.events[n:]
            if not pend.events:
                del self.pending[ref]
            return
        raise RefConflict(f"ref {ref} kept moving; gave up after {_RETRIES} attempts")

    def _replay(self, pend: Pending, onto: str) -> Pending:
        graph, store = self.repo.graph, self.repo.store
        mapping = {pend.base: onto}
        out = Pending(onto)
        for eid, ev in pend.events:
            parents = tuple(mapping.get(p, p) for p in ev.parents)
            gen = 1 + max(graph.generation(p) for p in parents)
            nev = Event(ev.type, ev.actor, ev.payload, parents, gen, ev.ts, ev.causality)
            mapping[eid] = new_id = store.put_object(nev)
            self._remember(new_id, nev)
            out.events.append((new_id, nev))
        return out

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    delay = self._since + self.interval - time.monotonic()
                    if self.pending and delay <= 0:
                        break
                    self._cond.wait(delay if self.pending else None)
                if self._closed:
                    return
            try:
                self.commit()
            except Exception:  # noqa: BLE001 - keep the thread; the next commit retries
                pass
            with self._cond:
                self._since = time.monotonic()

    def close(self) -> None:
        with self._cond:
            try:
                self.commit()
            finally:
                self._closed = True
                self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        _LIVE.discard(self)


_LIVE: weakref.WeakSet[Committer] = weakref.WeakSet()


@atexit.register
def _commit_at_exit() -> None:
    for committer in list(_LIVE):
        try:
            committer.commit()
        except Exception:  # noqa: BLE001 - best effort at exit; the objects are in the store
            pass
