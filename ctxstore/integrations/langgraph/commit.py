"""Moving branch refs for appended events: at once, or in group commits.

Every appended event is put in the store at once and the saver's index sees it at once; the
branch ref that publishes it to other processes moves in a commit:

* durability "always": a commit after every append (store flush, then a ref move with fsync);
* durability "batch" (the default): one commit per branch for everything appended in the last
  `interval` seconds, by a background thread, at `close()`, at interpreter exit, and before any
  operation that reads or moves refs wholesale (list all threads, copy, delete, prune).

A commit is one repository transaction (ctxstore/repo/transaction.py): objects durable before
a ref names them, every pending ref moved at once. If another writer moved a ref meanwhile, the
pending events are re-created on top of its new tip (new parents, same payloads).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import CtxError, IOFailure
from ...objects import Event
from ...repo import Repository

_log = logging.getLogger("ctxstore.langgraph")


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
        #: what the background thread met, until check() re-raises it
        self.error: Exception | None = None

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
            self.check()  # after recording: the event stays pending whatever happened before

    def check(self) -> None:
        """Re-raise, once, the first exception the background thread met since the last check
        (the events it could not publish stay pending and are retried). A CtxError is raised as
        it was; anything else as the CtxError for it (IOFailure for an OSError), chained."""
        with self._cond:
            exc, self.error = self.error, None
        if exc is None:
            return
        if isinstance(exc, CtxError):
            raise exc
        cls = IOFailure if isinstance(exc, OSError) else CtxError
        raise cls(f"the background commit of LangGraph checkpoints failed: "
                  f"{type(exc).__name__}: {exc}") from exc

    def commit(self, ref: str | None = None) -> None:
        """Publish pending events: of one ref, or of all, in one repository transaction (all
        the refs move together, as one operation), first re-raising what the background thread
        met (see check)."""
        self.check()
        self._commit(ref)

    def _commit(self, ref: str | None = None) -> None:
        """commit() without check(): what the background thread runs.

        The store is flushed first without holding the lock (puts go on meanwhile), so the
        transaction's own flush has little left to do."""
        with self._cond:
            names = [ref] if ref is not None else list(self.pending)
            if not any(n in self.pending for n in names):
                return
        self.repo.objects.flush()
        with self._cond:
            names = [n for n in names if n in self.pending]
            if names:
                self._publish(names)

    def _publish(self, names: list[str]) -> None:
        """Move each ref from its pending base over all its pending events. A ref another
        writer moved meanwhile gets our events re-created on its new tip (the transaction's
        rebase); a ref deleted meanwhile drops them."""
        adopted = {}
        with self.repo.transaction(actor=self._actor, message="langgraph") as tx:
            for name in names:
                pend = self.pending[name]
                kinds = Counter(ev.type.partition(":")[2] or ev.type for _, ev in pend.events)
                message = "langgraph: " + ", ".join(f"{k} {t}" for t, k in sorted(kinds.items()))
                adopted[name] = tx.adopt(name, pend.base, pend.events, message=message,
                                         drop_if_deleted=True)
        for name, br in adopted.items():
            del self.pending[name]
            if br.dropped:  # the branch was deleted meanwhile: our events go with it
                self._rebased(name, None)
            elif br.rebased:
                for eid, fields in zip(br.appended, br.fields, strict=True):
                    self._remember(eid, Event.from_dict(fields))
                self._rebased(name, br.tip)

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
                self._commit()
            except Exception as exc:  # noqa: BLE001 - kept for the caller (check); pending events stay pending
                with self._cond:
                    self.error = self.error or exc
            with self._cond:
                self._since = time.monotonic()

    def close(self) -> None:
        """Publish what is pending, stop the thread, then re-raise what it met (check)."""
        with self._cond:
            try:
                self._commit()
            finally:
                self._closed = True
                self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        _LIVE.discard(self)
        self.check()


_LIVE: weakref.WeakSet[Committer] = weakref.WeakSet()


@atexit.register
def _commit_at_exit() -> None:
    for committer in list(_LIVE):
        try:
            committer.commit()
        except Exception:  # noqa: BLE001 - no caller is left to raise to: say it on stderr
            _log.exception("ctxstore: LangGraph checkpoints not published at exit (their "
                           "objects are in the store; no branch names them)")
