"""A repository: an object store, refs and config found in one `.ctx` directory.

Sessions are created here and grow through append transactions: write events to the store,
make them durable with one group-commit flush, then move the branch once by compare-and-swap.
This is the only module that creates sessions or moves branch refs after appends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import codec
from .. import config as config_mod
from ..clock import now_iso
from ..errors import BadRevision, CtxError, InvalidInput, RefConflict, StoreNotFound
from ..objects import DEFAULT_SESSION_CONFIG, Event, Session, is_valid_event_type
from ..refs import (
    DEFAULT_BRANCH,
    SESSIONS_PREFIX,
    FileRefs,
    MemoryRefs,
    RefStore,
    branch_ref,
    split_branch_ref,
)
from ..store import MemoryStore, ObjectStore
from .eventcache import SESSION_MARK_EVERY, EventCache
from .graph import EventGraph

CTX_DIRNAME = ".ctx"


def _open_pack_store(objects_dir: Path, cfg: dict[str, Any], create: bool) -> ObjectStore:
    try:
        from ..store.packstore import PackStore
    except ImportError:  # pragma: no cover - only while the pack store is being built
        raise CtxError("the pack store is not available in this build") from None
    return PackStore(objects_dir, durability=cfg["durability"],
                     level=cfg.get("compression_level", 3), create=create)


@dataclass(frozen=True)
class Current:
    """Where HEAD points: a session branch, or a detached event."""

    session: str | None
    branch: str | None
    tip: str | None
    ref: str | None


class Repository:
    def __init__(self, path: Path | None, store: ObjectStore, refs: RefStore,
                 config: dict[str, Any] | None = None) -> None:
        self.path = path
        self.store = store
        self.refs = refs
        self.config = config if config is not None else dict(config_mod.DEFAULTS)
        self.graph = EventGraph(store)
        self.session_marks = EventCache(path, "sessions")
        self._session_memo: dict[str, str] = {}

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def init(cls, directory: str | os.PathLike = ".", **settings: Any) -> Repository:
        """Create `DIRECTORY/.ctx` (or reuse it if it exists); returns the opened repository."""
        root = Path(directory) / CTX_DIRNAME
        cfg_path = root / "config.json"
        if not cfg_path.exists():
            root.mkdir(parents=True, exist_ok=True)
            (root / "refs" / "sessions").mkdir(parents=True, exist_ok=True)
            (root / "objects").mkdir(exist_ok=True)
            cfg = dict(config_mod.DEFAULTS)
            cfg.update(settings)
            config_mod.save(cfg_path, cfg)
        return cls.open(root)

    @classmethod
    def open(cls, ctx_dir: str | os.PathLike) -> Repository:
        root = Path(ctx_dir)
        if root.name != CTX_DIRNAME and (root / CTX_DIRNAME).is_dir():
            root = root / CTX_DIRNAME
        if not (root / "config.json").exists():
            raise StoreNotFound(f"no ctxstore at {ctx_dir} (run `ctx init`)")
        cfg = config_mod.load(root / "config.json")
        store = _open_pack_store(root / "objects", cfg, create=True)
        return cls(root, store, FileRefs(root), cfg)

    @classmethod
    def discover(cls, store_path: str | None = None, cwd: str | None = None) -> Repository:
        """Find the store like git: --store, then CTX_DIR, then walk up from the cwd."""
        if store_path:
            return cls.open(store_path)
        env = os.environ.get("CTX_DIR")
        if env:
            return cls.open(env)
        here = Path(cwd or os.getcwd()).resolve()
        for d in (here, *here.parents):
            if (d / CTX_DIRNAME / "config.json").exists():
                return cls.open(d / CTX_DIRNAME)
        raise StoreNotFound("no ctxstore found here or in any parent directory "
                            "(run `ctx init`, or pass --store / set CTX_DIR)")

    @classmethod
    def memory(cls) -> Repository:
        return cls(None, MemoryStore(), MemoryRefs())

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sessions ------------------------------------------------------------------------------
    def new_session(self, title: str = "", goal: str = "", *, config: dict | None = None,
                    ts: str | None = None, kind: str = "main", parent_session: str = "",
                    spawn_event: str = "", origin: dict | None = None, nonce: str | None = None,
                    cwd: str = "", repo_root: str = "", branch: str = DEFAULT_BRANCH,
                    checkout: bool = True, actor: str = "ctx") -> tuple[str, str]:
        """Create a session object, its SessionStarted root event and its first branch.

        Returns (session id, root event id). Without a nonce every call makes a new session;
        with one (importers use the source's session id) the same inputs give the same ids.
        """
        ts = ts or now_iso()
        cfg = dict(DEFAULT_SESSION_CONFIG)
        cfg.update(config or {})
        session = Session(title=title, created=ts, config=cfg, cwd=cwd, repo_root=repo_root,
                          parent_session=parent_session, spawn_event=spawn_event, kind=kind,
                          origin=origin or {}, nonce=nonce if nonce is not None else os.urandom(8).hex())
        sid = self.store.put_object(session)
        payload: dict[str, Any] = {"session": sid}
        if title:
            payload["title"] = title
        if goal:
            payload["goal"] = goal
        root = self.store.put_object(Event("SessionStarted", "system", payload, (), 1, ts))
        self.store.flush()
        ref = branch_ref(sid, branch)
        current = self.refs.read(ref)
        if current is None:
            self.refs.set_if_equals(ref, None, root, actor=actor, message="session: created")
        elif current != root and not self.graph.is_ancestor(root, current):
            raise RefConflict(f"ref {ref} exists and does not descend from this session's root")
        if checkout:
            try:
                self.refs.set_head_symbolic(ref, actor=actor,
                                            message=f"checkout: new session {sid[:12]}")
            except CtxError:
                if current is None:  # undo the branch this call created: no half-made session
                    self.refs.set_if_equals(ref, root, None, actor=actor,
                                            message="session: creation rolled back")
                raise
        return sid, root

    def session(self, session_id: str) -> Session:
        return self.store.get_typed(session_id, Session)

    def session_ids(self) -> list[str]:
        out: list[str] = []
        root = SESSIONS_PREFIX
        seen: set[str] = set()
        for name, _ in self.refs.iter_refs(root):
            parts = split_branch_ref(name)
            if parts and parts[0] not in seen:
                seen.add(parts[0])
                out.append(parts[0])
        return out

    def branches(self, session_id: str) -> dict[str, str]:
        prefix = f"{SESSIONS_PREFIX}{session_id}/"
        return {name[len(prefix):]: tip for name, tip in self.refs.iter_refs(prefix)}

    def current(self) -> Current:
        head = self.refs.read_head()
        if head.ref:
            parts = split_branch_ref(head.ref)
            if parts:
                return Current(parts[0], parts[1], head.target, head.ref)
            return Current(None, None, head.target, head.ref)
        return Current(None, None, head.target, None)

    def session_of_event(self, event_id: str) -> str | None:
        """The session an event belongs to: the one whose root its first-parent chain reaches.

        The walk stops at a session mark (written every SESSION_MARK_EVERY generations by
        append transactions) or a memoised answer, so it is short; without marks it goes to
        the root once per process."""
        walked: list[str] = []
        eid: str | None = event_id
        sid: str | None = None
        while eid is not None:
            sid = self._session_memo.get(eid) or self.session_marks.get(eid)
            if sid is not None:
                break
            walked.append(eid)
            ev = self.graph.event(eid)
            if not ev.parents:
                found = ev.payload.get("session")
                sid = found if isinstance(found, str) else None
                break
            eid = ev.parents[0]
        if sid is not None:
            for w in walked:
                self._session_memo[w] = sid
        return sid

    def check_same_session(self, event_id: str, session_id: str, what: str) -> None:
        """Refuse to graft another session's history into this session's refs."""
        other = self.session_of_event(event_id)
        if other != session_id:
            raise BadRevision(f"{what} {event_id[:12]} belongs to session "
                              f"{(other or '?')[:12]}, not to {session_id[:12]}: branches and "
                              f"resets stay within one session")

    def resolve_session(self, text: str) -> str:
        """A session id from a full id or a unique prefix (>= 4 hex digits)."""
        text = text.strip().lower()
        matches = [s for s in self.session_ids() if s.startswith(text)]
        if len(text) < 4 or not matches:
            raise BadRevision(f"no session {text!r}")
        if len(matches) > 1:
            from ..errors import AmbiguousId

            raise AmbiguousId(f"session prefix {text} is ambiguous: {', '.join(m[:12] for m in matches[:3])}")
        return matches[0]

    # -- appending -----------------------------------------------------------------------------
    def transaction(self, ref: str | None = None, *, rebase: bool = False,
                    actor: str = "ctx", message: str = "append") -> AppendTransaction:
        """Append events to `ref` (default: HEAD's branch) and move it once, by CAS, at commit."""
        if ref is None:
            cur = self.current()
            if cur.ref is None:
                raise BadRevision("HEAD is detached: check out a branch (ctx checkout BRANCH) "
                                  "or fork one (ctx fork NAME) before appending")
            ref = cur.ref
        tip = self.refs.read(ref)
        if tip is None:
            raise BadRevision(f"branch {ref} does not exist")
        return AppendTransaction(self, ref, tip, rebase=rebase, actor=actor, message=message)

    def make_event(self, type: str, actor: str = "system", payload: dict | None = None,
                   parents: tuple[str, ...] = (), causality: dict | None = None,
                   ts: str | None = None) -> Event:
        if not is_valid_event_type(type):
            raise InvalidInput(f"invalid event type {type!r}: use a core type (e.g. "
                               f"UserPromptSubmitted) or a namespaced one (x.yourtool.Thing)")
        if payload is not None and not isinstance(payload, dict):
            raise InvalidInput("an event payload must be a JSON object")
        gen = 1 + max((self.graph.generation(p) for p in parents), default=0)
        return Event(type, actor, payload or {}, tuple(parents), gen, ts or now_iso(),
                     causality or {})


class AppendTransaction:
    """Many events, one durable flush, one ref move. A lost race raises RefConflict, or with
    `rebase=True` re-parents the new events onto the ref's new tip and tries again.

    Events are encoded straight from their field map (the same canonical bytes as
    `Event.to_dict()`), and generations are tracked here, so a batch never re-reads its own
    parents from the store."""

    def __init__(self, repo: Repository, ref: str, tip: str, *, rebase: bool, actor: str,
                 message: str) -> None:
        self.repo = repo
        self.ref = ref
        self.base = tip
        self.tip = tip
        self.rebase = rebase
        self.actor = actor
        self.message = message
        self.appended: list[str] = []
        self._fields: list[dict[str, Any]] = []
        self._gen: dict[str, int] = {}
        parts = split_branch_ref(ref)
        self._session = parts[0] if parts else None
        self.committed = False

    def _generation(self, eid: str) -> int:
        gen = self._gen.get(eid)
        return gen if gen is not None else self.repo.graph.generation(eid)

    def append(self, type: str, actor: str = "system", payload: dict | None = None,
               causality: dict | None = None, ts: str | None = None,
               extra_parents: tuple[str, ...] = ()) -> str:
        if not is_valid_event_type(type):
            raise InvalidInput(f"invalid event type {type!r}: use a core type (e.g. "
                               f"UserPromptSubmitted) or a namespaced one (x.yourtool.Thing)")
        if payload is not None and not isinstance(payload, dict):
            raise InvalidInput("an event payload must be a JSON object")
        parents = [self.tip, *extra_parents]
        gen = 1 + max(self._generation(p) for p in parents)
        return self._put({"type": type, "actor": actor, "payload": payload or {},
                          "parents": parents, "generation": gen, "ts": ts or now_iso(),
                          "causality": causality or {}})

    def append_event(self, ev: Event) -> str:
        """Append a prepared event; its parents must include the current tip."""
        if self.tip not in ev.parents:
            raise InvalidInput("an appended event must name the branch tip as a parent")
        return self._put(ev.to_dict())

    def _put(self, fields: dict[str, Any]) -> str:
        eid, body = codec.encode_object("event", fields)
        self.repo.store.put_encoded(eid, "event", body)
        if fields["generation"] % SESSION_MARK_EVERY == 0 and self._session:
            self.repo.session_marks.put(eid, self._session)
        self._fields.append(fields)
        self._gen[eid] = fields["generation"]
        self.appended.append(eid)
        self.tip = eid
        return eid

    def _replay_onto(self, new_base: str) -> None:
        """Re-create the appended events on top of `new_base` (new parents, so new ids)."""
        mapping = {self.base: new_base}
        old_ids, old_fields = self.appended, self._fields
        self.base = self.tip = new_base
        self.appended, self._fields = [], []
        for old_id, f in zip(old_ids, old_fields, strict=True):
            parents = [mapping.get(p, p) for p in f["parents"]]
            gen = 1 + max(self._generation(p) for p in parents)
            mapping[old_id] = self._put({**f, "parents": parents, "generation": gen})

    def commit(self) -> str:
        if self.committed or self.tip == self.base:
            self.committed = True
            return self.tip
        refs = self.repo.refs
        for _attempt in range(20):
            self.repo.store.flush()  # objects durable before a ref names them
            try:
                refs.set_if_equals(self.ref, self.base, self.tip, actor=self.actor,
                                   message=f"{self.message}: {len(self.appended)} event(s)")
                self.committed = True
                return self.tip
            except RefConflict:
                if not self.rebase:
                    raise
                now = refs.read(self.ref)
                if now is None:
                    raise
                self._replay_onto(now)
        raise RefConflict(f"ref {self.ref} kept moving; gave up after 20 rebases")

    def __enter__(self) -> AppendTransaction:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()


def iter_session_refs(repo: Repository) -> Iterator[tuple[str, str, str]]:
    """(session, branch, tip) for every session branch."""
    for name, tip in repo.refs.iter_refs(SESSIONS_PREFIX):
        parts = split_branch_ref(name)
        if parts:
            yield parts[0], parts[1], tip
