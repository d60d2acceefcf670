"""The repository side of the saver: threads, their branches and indexes, appends, and the
ref moves that delete, copy and prune. Knows nothing of LangGraph's API (saver.py maps it)."""

from __future__ import annotations

import threading
from typing import Any

from ...clock import now_iso
from ...errors import CtxError, InvalidInput, RefConflict
from ...objects import Event
from ...refs import DEFAULT_BRANCH, SESSIONS_PREFIX, branch_ref, split_branch_ref
from ...repo import Repository
from .commit import Committer
from .threads import (
    CHECKPOINT,
    COPIED,
    THREADS_PREFIX,
    WRITES,
    BranchIndex,
    Thread,
    branch_ns,
    ns_branch,
    thread_id_of,
    thread_ref,
)

ACTOR = "langgraph"


class ThreadStore:
    """Threads of one repository, with caches; every method expects the caller to hold `lock`."""

    def __init__(self, repo: Repository, lock: threading.RLock, *, durability: str,
                 commit_interval: float) -> None:
        self.repo = repo
        self._threads: dict[str, Thread] = {}
        self._branches: dict[str, BranchIndex] = {}
        self._origins: dict[str, list[str]] | None = None  # thread id -> sessions (see _adopt)
        self.commits = Committer(repo, lock, immediate=durability == "always",
                                 interval=commit_interval, remember=self._remember,
                                 rebased=self._rebased, actor=ACTOR)

    def thread(self, thread_id: str, create: bool = False, cached: bool = False,
               **session: Any) -> Thread | None:
        """The thread, re-checked against its ref; `cached`: trust a cached one (writers do:
        a concurrent change is found, and resolved, when their events are committed)."""
        tid = str(thread_id)
        if cached and tid in self._threads:
            return self._threads[tid]
        ref = thread_ref(tid)
        root = self.repo.refs.read(ref) or self._adopt(tid, ref)
        if root is None:
            if not create:
                self._threads.pop(tid, None)
                return None
            root = self._create(tid, ref, **session)
        cached = self._threads.get(tid)
        if cached is not None and cached.root == root:
            return cached
        th = Thread(tid, self.repo.graph.event(root).payload["session"], root)
        self._threads[tid] = th
        return th

    def _adopt(self, tid: str, ref: str) -> str | None:
        """A thread whose session came without its thread ref (unpacked from `ctx pack SESSION`):
        found by the session's origin, once per saver, and given its thread ref back."""
        if self._origins is None:
            self._origins = {}
            for sid in self.repo.session_ids():
                try:
                    origin = self.repo.session(sid).origin
                except CtxError:
                    continue
                if origin.get("format") == "langgraph":
                    self._origins.setdefault(str(origin.get("thread_id")), []).append(sid)
        for sid in self._origins.get(tid, ()):
            main = self.repo.branches(sid).get(DEFAULT_BRANCH)
            root = self._session_root(sid, main) if main else None
            if root is not None:
                try:
                    with self.repo.transaction(actor=ACTOR,
                                               message="langgraph: thread found by origin") as tx:
                        tx.create_ref(ref, root)
                except RefConflict:
                    return self.repo.refs.read(ref)
                return root
        return None

    def _session_root(self, sid: str, tip: str) -> str | None:
        """The SessionStarted event of `sid` behind a branch tip (a copy's: its marker's 2nd parent)."""
        for eid, ev in self.repo.graph.first_parents(tip):
            if ev.type == COPIED and ev.payload.get("session") == sid:
                return ev.parents[1]
            if not ev.parents:
                return eid if ev.payload.get("session") == sid else None
        return None

    def _create(self, tid: str, ref: str, kind: str = "main",
                       parent_session: str = "") -> str:
        """A session, its root event and `main`, and the thread ref, in one transaction."""
        try:
            with self.repo.transaction(actor=ACTOR, message="langgraph: thread created") as tx:
                _sid, root = tx.new_session(
                    f"LangGraph thread {tid}", kind=kind, parent_session=parent_session,
                    origin={"format": "langgraph", "thread_id": tid}, nonce=tid, checkout=False)
                tx.create_ref(ref, root)
        except RefConflict:  # another writer created the thread first: use theirs
            return self.repo.refs.read(ref) or self._create(tid, ref, kind, parent_session)
        return root

    def branch(self, th: Thread, checkpoint_ns: str, create: bool = False,
               cached: bool = False) -> BranchIndex | None:
        """The branch's index, brought up to date from its ref (`cached`: as for `thread`)."""
        ref = branch_ref(th.session, ns_branch(checkpoint_ns))
        if cached and ref in self._branches:
            return self._branches[ref]
        tip = self.repo.refs.read(ref)
        pend = self.commits.pending.get(ref)
        if pend is not None:
            if tip == pend.base:
                tip = pend.tip  # our index is ahead of the ref by the uncommitted events
            else:  # another writer moved the ref: rebase ours on it now
                self.commits.commit(ref)
                tip = self.repo.refs.read(ref)
        if tip is None:
            if not create:
                self._branches.pop(ref, None)
                return None
            try:
                with self.repo.transaction(actor=ACTOR,
                                           message="langgraph: namespace created") as tx:
                    tx.create_ref(ref, th.root)
                tip = th.root
            except RefConflict:
                tip = self.repo.refs.read(ref) or th.root
        br = self._branches.get(ref)
        if br is None:
            br = self._branches[ref] = BranchIndex(ref, checkpoint_ns)
        br.sync(tip, self.repo.graph)
        return br

    def namespaces(self, th: Thread) -> list[tuple[str, BranchIndex]]:
        out = []
        for branch in self.repo.branches(th.session):
            ns = branch_ns(branch)
            if ns is not None:
                br = self.branch(th, ns)
                if br is not None:
                    out.append((ns, br))
        return out

    def thread_ids(self) -> list[str]:
        return [thread_id_of(name) for name, _ in self.repo.refs.iter_refs(THREADS_PREFIX)]

    def _remember(self, eid: str, ev: Event) -> None:
        # Seed the graph's event cache with an event we just wrote (saves decoding it again).
        self.repo.graph._cache[eid] = ev

    def _rebased(self, ref: str, tip: str | None) -> None:
        br = self._branches.get(ref)
        if tip is None:  # deleted by another writer: forget the thread too
            self._branches.pop(ref, None)
            session = ref[len(SESSIONS_PREFIX):].partition("/")[0]
            for tid in [t for t, th in self._threads.items() if th.session == session]:
                del self._threads[tid]
        elif br is not None:
            br.sync(tip, self.repo.graph)

    def append(self, br: BranchIndex, etype: str, actor: str, payload: dict, ids: list[str],
                relates_to: str | None) -> str:
        """Append an event to the branch; `relates_to` (the parent checkpoint's event, or the
        checkpoint's a writes event belongs to) becomes a second parent unless it is the tip."""
        parents = (br.tip,) if relates_to in (None, br.tip) else (br.tip, relates_to)
        gen = 1 + max([br.generation] + [self.repo.graph.generation(p) for p in parents[1:]])
        ev = Event(etype, actor, payload, parents, gen, now_iso(), {"values": ids})
        eid = self.repo.objects.put_object(ev)
        self._remember(eid, ev)
        base = br.tip
        br.apply(eid, ev)
        self.commits.add(br.ref, base, eid, ev)
        return eid

    def copy(self, src: Thread, target_thread_id: str) -> None:
        """A new session whose branches name `src`'s tips, and a marker event on its `main`."""
        old = self.thread(target_thread_id)
        if old is not None and any(br.checkpoints for _, br in self.namespaces(old)):
            raise InvalidInput(f"cannot copy into thread {target_thread_id!r}: "
                               f"it already has checkpoints")
        tips = {b: t for b, t in self.repo.branches(src.session).items()
                if branch_ns(b) is not None}
        # (no spawn_event: it would keep the source's history alive after a prune)
        dst = old or self.thread(target_thread_id, create=True, kind="fork",
                                 parent_session=src.session)
        tips.setdefault(DEFAULT_BRANCH, src.root)
        message = f"langgraph: copied from thread {src.thread_id}"
        with self.repo.transaction(actor=ACTOR, message=message) as tx:
            tips[DEFAULT_BRANCH] = tx.event(
                COPIED, "system", {"session": dst.session, "source_thread": src.thread_id,
                                   "summary": f"copy of thread {src.thread_id}"},
                (tips[DEFAULT_BRANCH], dst.root), session=dst.session)
            for branch, tip in tips.items():
                tx.set_ref(branch_ref(dst.session, branch), tip)

    def delete(self, th: Thread) -> None:
        """Every branch of the thread's session and the thread ref, in one transaction."""
        refs = self.repo.refs
        with self.repo.transaction(actor=ACTOR, message="langgraph: deleted") as tx:
            for name, _tip in refs.iter_refs(f"{SESSIONS_PREFIX}{th.session}/"):
                tx.delete_ref(name)
                self._branches.pop(name, None)
            tx.set_ref(thread_ref(th.thread_id), None, expected=th.root,
                       message="langgraph: thread deleted")
        self._threads.pop(th.thread_id, None)

    def rewrite(self, br: BranchIndex, drop: set[str]) -> None:
        """Move the branch to a copy of its log without the events in `drop`.

        Kept events are re-created with new parents (the unchanged prefix gets the same ids);
        the dropped ones, and values only they named, become unreachable."""
        if not drop:
            return
        graph = self.repo.graph
        tip = br.root
        new_ids: dict[str, str] = {}
        message = f"langgraph: rewritten without {len(drop)} event(s)"
        session = split_branch_ref(br.ref)[0]  # type: ignore[index]
        with self.repo.transaction(actor=ACTOR, message=message) as tx:
            for eid in br.order:
                if eid in drop:
                    continue
                ev = graph.event(eid)
                # second parents: re-created ones mapped, dropped ones cut, older ones kept
                extra = tuple(q for q in (new_ids.get(p, p) for p in ev.parents[1:]
                                          if p not in drop) if q != tip)
                old = ev.to_dict()
                fields = tx.event_fields(old["type"], old["actor"], old["payload"],
                                         (tip, *extra), old["causality"], old["ts"])
                tip = new_ids[eid] = tx.put_event(fields, session)
                self._remember(tip, Event.from_dict(fields))
            tx.set_ref(br.ref, tip, expected=br.tip)
        br.sync(tip, graph)

    def events_of(self, br: BranchIndex, cids: set[str]) -> set[str]:
        """Every checkpoint and writes event of the branch belonging to one of `cids`."""
        out = set()
        for eid in br.order:
            ev = self.repo.graph.event(eid)
            if ev.type in (CHECKPOINT, WRITES) and ev.payload.get("checkpoint_id") in cids:
                out.add(eid)
        return out
