"""How LangGraph threads live in a repository: names, events and a per-branch index.

* A thread is a session. `refs/langgraph/threads/<thread>` names the session's root event
  (SessionStarted, whose payload names the session), so a thread id finds its session with one
  ref read, and creating a thread is one compare-and-swap (two writers cannot make two sessions).
* A checkpoint namespace is a branch of that session: `main` for the root namespace "", and
  `ns/<hex of the namespace>` for a subgraph's.
* `copy_thread` makes a session whose branches name the source's tips; its `main` gets one
  `langgraph:copied` marker event (see COPIED). Nothing else is written or copied.
* Each branch is a linear log: every `put` appends a `langgraph:checkpoint` event and every
  `put_writes` a `langgraph:writes` event. The first parent is always the branch's previous
  tip (so `ctx log --first-parent` is the log); a checkpoint's parent checkpoint, and the
  checkpoint a writes event belongs to, are added as a second parent when they differ from it,
  so LangGraph's checkpoint tree is in the DAG.
* `BranchIndex` maps checkpoint ids to events and holds each checkpoint's pending writes. It is
  rebuilt by one walk of the branch and then brought up to date from the ref: a moved tip costs
  a walk of the new events only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import codec
from ...objects import Event
from ...refs import DEFAULT_BRANCH
from ...repo.graph import EventGraph
from ..refnames import id_of, id_ref
from .values import split_refs

THREADS_PREFIX = "refs/langgraph/threads/"
NS_BRANCH_PREFIX = "ns/"
CHECKPOINT = "langgraph:checkpoint"
WRITES = "langgraph:writes"
#: On a copied thread's `main`: first parent the source's tip, second the copy's own root, so
#: the copy's session is reachable from its branches (and travels in a pack of them).
COPIED = "langgraph:copied"


def thread_ref(thread_id: str) -> str:
    """The ref naming a thread's root event; ids that are not safe ref components are hex."""
    return id_ref(THREADS_PREFIX, thread_id)


def thread_id_of(ref: str) -> str:
    return id_of(THREADS_PREFIX, ref)


def ns_branch(checkpoint_ns: str) -> str:
    if not checkpoint_ns:
        return DEFAULT_BRANCH
    return NS_BRANCH_PREFIX + checkpoint_ns.encode("utf-8").hex()


def branch_ns(branch: str) -> str | None:
    """The namespace a branch holds, or None for a branch that is not a LangGraph namespace."""
    if branch == DEFAULT_BRANCH:
        return ""
    if branch.startswith(NS_BRANCH_PREFIX):
        try:
            return bytes.fromhex(branch[len(NS_BRANCH_PREFIX):]).decode("utf-8")
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class Thread:
    thread_id: str
    session: str
    root: str  # the session's SessionStarted event, named by the thread ref


@dataclass
class Write:
    task_id: str
    channel: str
    ref: Any  # a value ref (see values.py)
    task_path: str
    idx: int


class _LightEvent:
    """The fields `BranchIndex.apply` reads, from the plain decoded event: indexing a long
    branch then skips building (freezing) a whole Event per checkpoint (most of a fresh
    saver's first load of a 10,000-step thread went there)."""

    __slots__ = ("type", "payload", "causality", "parents", "generation")

    def __init__(self, fields: dict) -> None:
        self.type = fields["type"]
        self.payload = fields.get("payload") or {}
        self.causality = fields.get("causality") or {}
        self.parents = fields.get("parents") or ()
        self.generation = fields["generation"]


def _light_event(graph: EventGraph, eid: str) -> Any:
    cached = graph._cache.get(eid)
    if cached is not None:
        return cached
    return _LightEvent(codec.unpack_value(graph.objects.get_raw(eid)[1]))


@dataclass
class BranchIndex:
    """Checkpoints and pending writes of one branch, as of `tip`."""

    ref: str
    ns: str = ""
    tip: str = ""
    root: str = ""
    generation: int = 0  # of the tip
    order: list[str] = field(default_factory=list)  # event ids after the root, oldest first
    checkpoints: dict[str, str] = field(default_factory=dict)  # checkpoint id -> event id
    writes: dict[str, dict[tuple[str, int], Write]] = field(default_factory=dict)

    def apply(self, eid: str, ev: Event | _LightEvent) -> None:
        self.order.append(eid)
        self.tip, self.generation = eid, ev.generation
        if ev.payload.get("checkpoint_ns") != self.ns:
            return  # not ours (a marker, or an event another tool appended)
        if ev.type == CHECKPOINT:
            self.checkpoints[ev.payload["checkpoint_id"]] = eid
        elif ev.type == WRITES:
            p = ev.payload
            stored = self.writes.setdefault(p["checkpoint_id"], {})
            refs = split_refs([w[2] for w in p["writes"]], ev.causality.get("values", ()))
            for (idx, channel, _), ref in zip(p["writes"], refs, strict=True):
                key = (p["task_id"], idx)
                if idx >= 0 and key in stored:
                    continue  # first write wins for regular writes; special ones overwrite
                stored[key] = Write(p["task_id"], channel, ref, p.get("task_path", ""), idx)

    def sync(self, tip: str, graph: EventGraph) -> None:
        """Bring the index to `tip`: walk first parents back to the known tip, or rebuild."""
        if tip == self.tip:
            return
        new: list[tuple[str, Any]] = []
        eid: str | None = tip
        while eid is not None and eid != self.tip:
            ev = _light_event(graph, eid)
            if not ev.parents:
                break
            new.append((eid, ev))
            eid = ev.parents[0]
        if eid != self.tip or not self.tip:  # rewritten (prune) or first load: start over
            root = eid if eid is not None else tip
            self.order, self.checkpoints, self.writes = [], {}, {}
            self.root, self.tip = root, root
            self.generation = graph.event(root).generation
        for eid, ev in reversed(new):
            self.apply(eid, ev)

    def latest(self) -> str | None:
        return max(self.checkpoints) if self.checkpoints else None

    def pending(self, checkpoint_id: str) -> list[Write]:
        stored = self.writes.get(checkpoint_id)
        if not stored:
            return []
        return sorted(stored.values(), key=lambda w: (w.task_path, w.task_id, w.idx))
