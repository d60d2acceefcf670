"""`CtxstoreSaver`: a LangGraph checkpointer over a ctxstore repository.

Threads are sessions, namespaces are branches, checkpoints and pending writes are events
(see threads.py); channel values are content-addressed objects shared by every checkpoint and
thread that holds them (see values.py). Objects are made durable before the one ref move that
publishes them. Deleting never rewrites an object: refs are removed or moved to a rewritten
branch, and what no ref reaches any more is left for gc.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)

from ... import codec
from ...errors import CodecError, InvalidInput
from ...objects import thaw
from ...repo import Repository
from ..stores import open_repository
from .threads import (
    CHECKPOINT,
    WRITES,
    BranchIndex,
    Thread,
)
from .threadstore import ThreadStore
from .values import ValueStore, pack_refs, unpack_refs


def _plain(value: Any, serde: Any, key: str, payload: dict) -> None:
    """Put `value` in the payload as canonical msgpack, or serde bytes if it has no canonical form."""
    try:
        payload[key] = codec.canonicalize(value)
    except CodecError:
        t, data = serde.dumps_typed(value)
        payload[key + "_serde"] = [t, bytes(data)]


def _unplain(payload: Any, serde: Any, key: str) -> Any:
    if key in payload:
        return thaw(payload[key])
    t, data = payload[key + "_serde"]
    return serde.loads_typed((t, data))


def _checkpoint_summary(md: dict) -> str:
    """One line for `ctx log`: the step, the source, and who wrote (from metadata)."""
    text = f"step {md.get('step', '?')} {md.get('source', '')}".strip()
    return text


class CtxstoreSaver(BaseCheckpointSaver[int]):
    """A checkpointer storing LangGraph threads in a ctxstore repository.

    `CtxstoreSaver(path)` opens (or creates) the store in directory PATH; `CtxstoreSaver(repo)`
    uses an open `Repository` (e.g. `Repository.memory()`) and leaves closing it to the caller.
    Safe to share between threads; several processes may share one store.
    """

    def __init__(self, store: str | os.PathLike | Repository, *, serde: Any = None,
                 durability: str = "batch", commit_interval: float = 0.05) -> None:
        super().__init__(serde=serde)
        if durability not in ("always", "batch"):
            raise InvalidInput(f"durability must be 'always' or 'batch', not {durability!r}")
        if isinstance(store, Repository):
            self.repo, self._owns_repo = store, False
        else:
            self.repo, self._owns_repo = open_repository(store), True
        self.durability = durability
        self._lock = threading.RLock()
        self._values = ValueStore(self.repo.objects)
        self._ts = ThreadStore(self.repo, self._lock, durability=durability,
                               commit_interval=commit_interval)
        self._closed = False

    @classmethod
    def open(cls, path: str | os.PathLike, **kwargs: Any) -> CtxstoreSaver:
        return cls(path, **kwargs)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        # Not under self._lock: the committer's thread needs that lock to see it is closed and
        # exit; holding it here made every close wait out the 5 s join timeout.
        try:
            self._ts.commits.close()  # re-raises what the background commit met
        finally:
            with self._lock:
                self.repo.objects.flush()
                if self._owns_repo:
                    self.repo.close()

    def __enter__(self) -> CtxstoreSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def session_of(self, thread_id: str) -> str | None:
        """The id of the session holding a thread (for `ctx log SESSION/main`), or None."""
        self._ts.commits.check()
        with self._lock:
            th = self._ts.thread(thread_id)
            return th.session if th is not None else None

    def flush(self) -> None:
        """Publish every checkpoint and write put so far (durability "batch" does it by itself
        within `commit_interval` seconds)."""
        self._ts.commits.commit()

    # -- reading -------------------------------------------------------------------------------
    def _tuple(self, th: Thread, ns: str, br: BranchIndex, cid: str) -> CheckpointTuple:
        ev = self.repo.graph.event(br.checkpoints[cid])
        p = ev.payload
        serde = self.serde
        checkpoint = _unplain(p, serde, "checkpoint")
        checkpoint["id"] = cid
        refs = unpack_refs(p.get("values", {}), ev.causality.get("values", ()))
        checkpoint["channel_values"] = {k: self._values.get(serde, ref) for k, ref in refs.items()}
        parent = p.get("parent_checkpoint_id")
        conf = {"thread_id": th.thread_id, "checkpoint_ns": ns}
        return CheckpointTuple(
            config={"configurable": {**conf, "checkpoint_id": cid}},
            checkpoint=checkpoint,
            metadata=_unplain(p, serde, "metadata"),
            parent_config={"configurable": {**conf, "checkpoint_id": parent}} if parent else None,
            pending_writes=[(w.task_id, w.channel, self._values.get(serde, w.ref))
                            for w in br.pending(cid)],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        ns = conf.get("checkpoint_ns") or ""
        self._ts.commits.check()  # what the background commit met surfaces on the next call
        with self._lock:
            th = self._ts.thread(conf["thread_id"])
            br = self._ts.branch(th, ns) if th is not None else None
            if br is None:
                return None
            cid = get_checkpoint_id(config) or br.latest()
            if cid is None or cid not in br.checkpoints:
                return None
            return self._tuple(th, ns, br, cid)

    def get_delta_channel_history(self, *, config: RunnableConfig,
                                  channels: Sequence[str]) -> Mapping[str, Any]:
        """The writes and seed of each `DeltaChannel` along the checkpoint's parent chain (the
        contract of BaseCheckpointSaver.get_delta_channel_history), read from the branch index:
        only the requested channels' values are loaded, not every ancestor's whole state."""
        if not channels:
            return {}
        conf = config["configurable"]
        ns = conf.get("checkpoint_ns") or ""
        self._ts.commits.check()
        writes: dict[str, list] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        with self._lock:
            th = self._ts.thread(conf["thread_id"])
            br = self._ts.branch(th, ns) if th is not None else None
            cid = (get_checkpoint_id(config) or br.latest()) if br is not None else None
            if br is not None and cid in br.checkpoints:
                self._delta_walk(br, cid, set(channels), writes, seeds)
        out: dict[str, Any] = {}
        for ch in channels:
            entry: dict[str, Any] = {"writes": writes[ch][::-1]}
            if ch in seeds:
                entry["seed"] = seeds[ch]
            out[ch] = entry
        return out

    def _delta_walk(self, br: BranchIndex, cid: str, remaining: set[str],
                    writes: dict[str, list], seeds: dict[str, Any],
                    load: bool = True) -> list[str]:
        """Walk the ancestors of checkpoint `cid` (not `cid` itself), newest first, collecting
        the pending writes of the `remaining` channels until each has a stored value (its
        seed). Returns the ancestors visited (prune keeps them); `load=False` only walks."""
        graph, serde, visited = self.repo.graph, self.serde, []
        parent = graph.event(br.checkpoints[cid]).payload.get("parent_checkpoint_id")
        while parent and remaining and parent in br.checkpoints and parent not in visited:
            visited.append(parent)
            ev = graph.event(br.checkpoints[parent])
            for w in reversed(br.pending(parent)):
                if w.channel in remaining and load:
                    writes[w.channel].append((w.task_id, w.channel, self._values.get(serde, w.ref)))
            refs = unpack_refs(ev.payload.get("values", {}), ev.causality.get("values", ()))
            for ch in [c for c in remaining if c in refs]:
                if load:
                    seeds[ch] = self._values.get(serde, refs[ch])
                remaining.discard(ch)
            parent = ev.payload.get("parent_checkpoint_id")
        return visited

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None,
             ) -> Iterator[CheckpointTuple]:
        self._ts.commits.check()
        conf = config["configurable"] if config else {}
        want_ns = conf.get("checkpoint_ns")
        want_id = conf.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        with self._lock:
            tids = [conf["thread_id"]] if conf.get("thread_id") is not None else self._ts.thread_ids()
            found: list[tuple[str, Thread, str, BranchIndex]] = []
            for tid in tids:
                th = self._ts.thread(tid)
                if th is None:
                    continue
                for ns, br in self._ts.namespaces(th):
                    if want_ns is not None and ns != want_ns:
                        continue
                    for cid in br.checkpoints:
                        if (want_id and cid != want_id) or (before_id and cid >= before_id):
                            continue
                        found.append((cid, th, ns, br))
        found.sort(key=lambda f: f[0], reverse=True)
        left = limit
        for cid, th, ns, br in found:
            if left is not None and left <= 0:
                return
            with self._lock:
                if filter:
                    ev = self.repo.graph.event(br.checkpoints[cid])
                    md = _unplain(ev.payload, self.serde, "metadata")
                    if not all(md.get(k) == v for k, v in filter.items()):
                        continue
                tup = self._tuple(th, ns, br, cid)
            if left is not None:
                left -= 1
            yield tup

    # -- writing -------------------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        conf = config["configurable"]
        tid, ns = str(conf["thread_id"]), conf.get("checkpoint_ns") or ""
        parent_id = conf.get("checkpoint_id")
        cid = checkpoint["id"]
        serde = self.serde
        rest = {k: v for k, v in checkpoint.items() if k not in ("channel_values", "id")}
        md = get_checkpoint_metadata(config, metadata)
        md.pop("writes", None)
        with self._lock:
            th = self._ts.thread(tid, create=True, cached=True)
            br = self._ts.branch(th, ns, create=True, cached=True)
            values = checkpoint["channel_values"]
            versions = checkpoint["channel_versions"]
            parent_eid = br.checkpoints.get(parent_id) if parent_id else None
            if parent_eid is not None:
                pev = self.repo.graph.event(parent_eid)
                p_refs = unpack_refs(pev.payload.get("values", {}), pev.causality.get("values", ()))
                p_versions = pev.payload.get("checkpoint", {}).get("channel_versions", {})
            else:
                p_refs, p_versions = {}, {}
            refs: dict[str, Any] = {}
            for k, v in values.items():
                unchanged = (k not in new_versions and k in p_refs and k in versions
                             and p_versions.get(k) == versions[k])
                refs[k] = (p_refs[k] if unchanged
                           else self._values.put(serde, v, (th.session, ns, k)))
            for k, ver in versions.items():  # a channel left out but unchanged keeps its value
                if k not in values and k in p_refs and p_versions.get(k) == ver:
                    refs[k] = p_refs[k]
            counts, ids = pack_refs(refs)
            payload: dict[str, Any] = {"checkpoint_ns": ns, "checkpoint_id": cid, "values": counts,
                                       "summary": _checkpoint_summary(md)}
            if parent_id:
                payload["parent_checkpoint_id"] = parent_id
            _plain(rest, serde, "checkpoint", payload)
            _plain(md, serde, "metadata", payload)
            self._ts.append(br, CHECKPOINT, "system", payload, ids, parent_eid)
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        conf = config["configurable"]
        tid, ns = str(conf["thread_id"]), conf.get("checkpoint_ns") or ""
        cid = conf["checkpoint_id"]
        keyed = [(WRITES_IDX_MAP.get(c, i), c, v) for i, (c, v) in enumerate(writes)]
        if not keyed:
            return
        serde = self.serde
        with self._lock:
            th = self._ts.thread(tid, create=True, cached=True)
            br = self._ts.branch(th, ns, create=True, cached=True)
            have = br.writes.get(cid, {})
            todo = [(idx, c, v) for idx, c, v in keyed if idx < 0 or (task_id, idx) not in have]
            if not todo:
                return  # idempotent: these writes are stored already
            entries, ids = [], []
            for idx, c, v in todo:
                ref = self._values.put(serde, v)
                entries.append([idx, c, 0 if isinstance(ref, str) else len(ref)])
                ids.extend([ref] if isinstance(ref, str) else ref)
            node = task_path.rsplit(",", 1)[-1].strip() if task_path else ""
            channels = ", ".join(dict.fromkeys(c for _, c, _ in todo))
            payload = {"checkpoint_ns": ns, "checkpoint_id": cid, "task_id": task_id,
                       "task_path": task_path, "writes": entries,
                       "summary": f"{node} wrote {channels}" if node else f"wrote {channels}"}
            self._ts.append(br, WRITES, "agent", payload, ids, br.checkpoints.get(cid))

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._ts.commits.commit()
            th = self._ts.thread(thread_id)
            if th is not None:
                self._ts.delete(th)
                self._values.forget((th.session,))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Fork a thread: a new session whose branches name the source's tips. O(namespaces):
        no object is copied, and the two threads share every checkpoint and value."""
        with self._lock:
            self._ts.commits.commit()
            src = self._ts.thread(source_thread_id)
            if src is None:
                return
            self._ts.copy(src, target_thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        with self._lock:
            self._ts.commits.commit()
            for tid in self._ts.thread_ids():
                th = self._ts.thread(tid)
                if th is None:
                    continue
                for _, br in self._ts.namespaces(th):
                    doomed = set()
                    for cid, eid in br.checkpoints.items():
                        md = _unplain(self.repo.graph.event(eid).payload, self.serde, "metadata")
                        if str(md.get("run_id")) in runs:
                            doomed.add(cid)
                    if doomed:
                        self._ts.rewrite(br, self._ts.events_of(br, doomed))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInput(f"unknown prune strategy {strategy!r} (keep_latest or delete)")
        with self._lock:
            self._ts.commits.commit()
            for tid in thread_ids:
                th = self._ts.thread(tid)
                if th is None:
                    continue
                if strategy == "delete":
                    self._ts.delete(th)
                    self._values.forget((th.session,))
                    continue
                for _, br in self._ts.namespaces(th):
                    latest = br.latest()
                    if latest is None:
                        continue
                    doomed = set(br.checkpoints) | set(br.writes)
                    doomed.discard(latest)
                    doomed.difference_update(self._delta_ancestors(br, latest))
                    keep_last = br.checkpoints[latest]
                    drop = self._ts.events_of(br, doomed)
                    # an older put of the same checkpoint id is superseded too
                    drop |= {e for e in self._ts.events_of(br, {latest})
                             if e != keep_last and self.repo.graph.event(e).type == CHECKPOINT}
                    self._ts.rewrite(br, drop)

    def _delta_ancestors(self, br: BranchIndex, cid: str) -> list[str]:
        """The ancestors a DeltaChannel of checkpoint `cid` is rebuilt from: back to the nearest
        one holding a stored value of every delta channel (its metadata's
        counters_since_delta_snapshot names them). keep_latest keeps them, or those channels
        would silently come back empty (LangGraph's warning on BaseCheckpointSaver.prune)."""
        md = _unplain(self.repo.graph.event(br.checkpoints[cid]).payload, self.serde, "metadata")
        delta = md.get("counters_since_delta_snapshot")
        if not isinstance(delta, dict) or not delta:
            return []
        return self._delta_walk(br, cid, set(delta), {c: [] for c in delta}, {}, load=False)

    # -- async ---------------------------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def aget_delta_channel_history(self, *, config: RunnableConfig,
                                         channels: Sequence[str]) -> Mapping[str, Any]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels))

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None,
                    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

