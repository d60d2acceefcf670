"""`CtxstoreSession`: the OpenAI Agents SDK `Session` protocol over a ctxstore repository.

* An Agents SDK session is a ctxstore session. `refs/openai-agents/sessions/<id>` names its
  root event (SessionStarted), so the SDK's id finds it with one ref read, and creating it is
  one compare-and-swap: two writers cannot make two sessions for one id.
* Each item is one event on a branch of that session (items.py), appended through the
  repository transaction: `add_items` is one transaction (objects durable, then the branch
  moves once), so what it acknowledged survives a crash.
* `pop_item` moves the branch back past its newest item; `clear_session` moves `main` back to
  the root and removes the other branches. Both are ref moves, recorded as operations: the
  events stay in the store, the reflog names them, and `ctx undo` (or `ctx op restore`) puts
  them back until gc expires them. Nothing the SDK calls ever deletes an event.
* Branches are the session's ctxstore branches, the same ones `ctx branch`, `ctx log` and
  `ctx checkout` show: `create_branch_from_turn(n)` makes a branch at the item before the n-th
  user message (the AdvancedSQLiteSession meaning) and switches to it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from ...errors import InvalidInput, RefConflict
from ...objects import Event
from ...refs import DEFAULT_BRANCH, branch_ref, check_ref_name
from ...repo import Repository
from ..refnames import id_of, id_ref
from ..stores import open_repository
from .items import FMT, ItemChain, ItemMapper, is_item_event, item_of

SESSIONS_REF_PREFIX = "refs/openai-agents/sessions/"
ACTOR = "openai-agents"
_T = TypeVar("_T")


class BranchError(InvalidInput, ValueError):
    """A branch operation the session refuses (no such branch or turn, a name in use, deleting
    main). A ValueError too, as AdvancedSQLiteSession raises for the same cases."""


def session_ref(session_id: str) -> str:
    return id_ref(SESSIONS_REF_PREFIX, session_id)


def session_ids(repo: Repository) -> list[str]:
    """Every Agents SDK session id stored in `repo`."""
    return [id_of(SESSIONS_REF_PREFIX, name)
            for name, _ in repo.refs.iter_refs(SESSIONS_REF_PREFIX)]


class _Shared:
    """One open repository per store and process, shared by its sessions (like SQLiteSession's
    per-file lock): one lock orders their writes, and the object caches are shared."""

    _guard = threading.Lock()
    _open: dict[Path, _Shared] = {}

    def __init__(self, key: Path | None, repo: Repository, owned: bool) -> None:
        self.key, self.repo, self.owned = key, repo, owned
        self.lock = threading.RLock()
        self.users = 0

    @classmethod
    def acquire(cls, path: str | os.PathLike | Repository) -> _Shared:
        if isinstance(path, Repository):
            shared = cls(None, path, owned=False)
            shared.users = 1
            return shared
        with cls._guard:
            repo = open_repository(path)
            key = Path(repo.path).resolve() if repo.path is not None else None
            shared = cls._open.get(key) if key is not None else None
            if shared is None:
                shared = cls(key, repo, owned=True)
                if key is not None:
                    cls._open[key] = shared
            else:
                repo.close()
            shared.users += 1
            return shared

    def release(self) -> None:
        with self._guard:
            self.users -= 1
            if self.users > 0:
                return
            if self.key is not None:
                self._open.pop(self.key, None)
        if self.owned:
            with self.lock:
                self.repo.close()


async def _finish(fn: Callable[[], _T]) -> _T:
    """Run a write in a worker thread and wait for its outcome even if the caller is cancelled
    meanwhile (then re-raise the cancellation): a write is never left half-known."""
    task = asyncio.ensure_future(asyncio.to_thread(fn))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    result = task.result()
    if cancelled is not None:
        raise cancelled
    return result


def _coerce_settings(value: Any) -> Any:
    from agents.memory.session_settings import SessionSettings, coerce_session_settings

    return SessionSettings() if value is None else coerce_session_settings(value)


def _resolve_limit(limit: int | None, settings: Any) -> int | None:
    if limit is not None:
        return limit
    return getattr(settings, "limit", None) if settings is not None else None


class CtxstoreSession:
    """An Agents SDK session stored in a ctxstore repository.

        session = CtxstoreSession("user-42", "path/to/project")   # creates .ctx if absent
        result = await Runner.run(agent, "Hi", session=session)

    `path` is a directory holding `.ctx` (created if absent), `.ctx` itself, or an open
    `Repository`. `branch` is the branch to read and append to (default `main`).
    Sessions of one store in one process share one open repository; `close()` releases it.
    """

    session_settings: Any = None

    def __init__(self, session_id: str, path: str | os.PathLike | Repository = ".", *,
                 branch: str = DEFAULT_BRANCH, session_settings: Any = None) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput("a session id must be a non-empty string")
        check_ref_name(branch, "branch name")
        self.session_id = session_id
        self.session_settings = _coerce_settings(session_settings)
        self._shared = _Shared.acquire(path)
        self.repo = self._shared.repo
        self._lock = self._shared.lock
        self._mapper = ItemMapper(self.repo.objects, self.repo.config)
        self._chain = ItemChain(self.repo.objects)
        self._branch = branch
        self._closed = False
        self._root: str | None = None
        self._sid: str | None = None

    # -- identity ------------------------------------------------------------------------------
    @property
    def current_branch(self) -> str:
        return self._branch

    @property
    def ctx_session(self) -> str | None:
        """The ctxstore session id (what `ctx log`, `ctx state` take), or None before the
        first write."""
        with self._lock:
            return self._find()

    def _find(self) -> str | None:
        if self._sid is not None:
            return self._sid
        root = self.repo.refs.read(session_ref(self.session_id))
        if root is None:
            return None
        self._root = root
        self._sid = str(self.repo.graph.event(root).payload["session"])
        return self._sid

    def _ensure(self) -> str:
        """The ctxstore session, created with its lookup ref in one transaction if absent."""
        sid = self._find()
        if sid is not None:
            return sid
        ref = session_ref(self.session_id)
        try:
            with self.repo.transaction(actor=ACTOR, message=f"{FMT}: session created") as tx:
                _sid, root = tx.new_session(
                    f"OpenAI Agents session {self.session_id}", nonce=self.session_id,
                    origin={"format": FMT, "session_id": self.session_id}, checkout=False)
                tx.create_ref(ref, root)
        except RefConflict:  # another writer created it first: use theirs
            pass
        sid = self._find()
        assert sid is not None
        return sid

    def _ref(self, branch: str | None = None) -> str:
        assert self._sid is not None
        return branch_ref(self._sid, branch or self._branch)

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput(f"CtxstoreSession {self.session_id!r} is closed")

    # -- reading -------------------------------------------------------------------------------
    def _items_back(self, tip: str | None, limit: int | None = None) -> list[tuple[str, Event]]:
        """Item events from `tip` back along first parents, newest first, at most `limit`."""
        out: list[tuple[str, Event]] = []
        if tip is None or limit == 0:
            return out
        for eid, ev in self.repo.graph.first_parents(tip):
            if is_item_event(ev):
                out.append((eid, ev))
                if limit is not None and len(out) >= limit:
                    break
        return out

    def _get_items_sync(self, limit: int | None) -> list[Any]:
        with self._lock:
            self._check_open()
            if self._find() is None:
                return []
            if limit is not None and limit < 0:
                limit = None  # SQLiteSession's LIMIT -1: everything
            return self._chain.back(self.repo.refs.read(self._ref()), limit)[::-1]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The branch's items, oldest first; with `limit` (or session_settings.limit) the
        newest `limit` of them."""
        return await asyncio.to_thread(self._get_items_sync,
                                       _resolve_limit(limit, self.session_settings))

    # -- writing -------------------------------------------------------------------------------
    def _add_items_sync(self, items: list[Any]) -> None:
        with self._lock:
            self._check_open()
            if not items:
                return
            self._ensure()
            ref = self._ref()
            if self.repo.refs.read(ref) is None:
                raise BranchError(f"Branch '{self._branch}' does not exist")
            mapper = self._mapper
            with self.repo.transaction(ref, actor=ACTOR,
                                       message=f"{FMT}: add_items ({len(items)})") as tx:
                br = tx.branch()
                for item in items:
                    etype, actor, payload, causality = mapper.event_fields(item)
                    tx.append(etype, actor, payload, causality)
            parent = br.base  # after a rebase: the other writer's tip, and our new ids
            for eid, item in zip(br.appended, items, strict=True):
                self._chain.note(eid, parent, item)
                parent = eid

    async def add_items(self, items: list[Any]) -> None:
        """Append items; durable when this returns (one transaction, one ref move)."""
        items = list(items)
        await _finish(lambda: self._add_items_sync(items))

    def _pop_item_sync(self) -> Any:
        with self._lock:
            self._check_open()
            if self._find() is None:
                return None
            ref = self._ref()
            while True:
                tip = self.repo.refs.read(ref)
                newest = self._items_back(tip, 1)
                if not newest:
                    return None
                eid, ev = newest[0]
                item = item_of(self.repo.objects, ev)
                try:
                    with self.repo.transaction(actor=ACTOR, message=f"{FMT}: pop_item") as tx:
                        tx.set_ref(ref, ev.parents[0], expected=tip,
                                   message=f"{FMT}: pop_item {eid[:12]}")
                except RefConflict:
                    continue  # another writer moved the branch: pop its newest item instead
                return item

    async def pop_item(self) -> Any:
        """Move the branch back past its newest item and return that item (None if empty).
        The item's event stays in the store; `ctx undo` brings it back."""
        return await _finish(self._pop_item_sync)

    def _clear_sync(self) -> None:
        with self._lock:
            self._check_open()
            if self._find() is None:
                return
            assert self._root is not None
            branches = self.repo.branches(self._sid)  # type: ignore[arg-type]
            with self.repo.transaction(actor=ACTOR, message=f"{FMT}: clear_session") as tx:
                for name, tip in branches.items():
                    ref = self._ref(name)
                    if name == DEFAULT_BRANCH:
                        tx.set_ref(ref, self._root, expected=tip)
                    else:
                        tx.delete_ref(ref)
                if DEFAULT_BRANCH not in branches:
                    tx.create_ref(self._ref(DEFAULT_BRANCH), self._root)
            self._branch = DEFAULT_BRANCH

    async def clear_session(self) -> None:
        """Empty the session: `main` back to the root, other branches removed, in one
        operation that `ctx undo` reverts. No event is deleted."""
        await _finish(self._clear_sync)

    # -- branches ------------------------------------------------------------------------------
    def _user_turns(self, tip: str | None) -> list[tuple[str, Event]]:
        """The user-message item events of a branch, oldest first (turn n is index n-1)."""
        return [(eid, ev) for eid, ev in reversed(self._items_back(tip))
                if ev.type == "UserPromptSubmitted"]

    def _create_branch_sync(self, turn_number: int, branch_name: str | None) -> str:
        with self._lock:
            self._check_open()
            if branch_name is not None and not branch_name.strip():
                raise BranchError("Branch name cannot be empty")
            if self._find() is None:
                raise BranchError(f"Turn {turn_number} does not contain a user message in "
                                  f"branch '{self._branch}'")
            turns = self._user_turns(self.repo.refs.read(self._ref()))
            if not isinstance(turn_number, int) or not 1 <= turn_number <= len(turns):
                raise BranchError(f"Turn {turn_number} does not contain a user message in "
                                  f"branch '{self._branch}'")
            base = turns[turn_number - 1][1].parents[0]
            existing = self.repo.branches(self._sid)  # type: ignore[arg-type]
            if branch_name is None:
                stem = f"branch_from_turn_{turn_number}_{int(time.time())}"
                name, n = stem, 1
                while name in existing:
                    n += 1
                    name = f"{stem}_{n}"
            else:
                name = check_ref_name(branch_name, "branch name")
                if name in existing:
                    raise BranchError(f"Branch ID '{name}' has already been used. "
                                      f"Choose a new branch ID.")
            try:
                with self.repo.transaction(
                        actor=ACTOR, message=f"{FMT}: branch {name} from turn {turn_number}") as tx:
                    tx.create_ref(self._ref(name), base)
            except RefConflict:
                raise BranchError(f"Branch ID '{name}' has already been used. "
                                  f"Choose a new branch ID.") from None
            self._branch = name
            return name

    async def create_branch_from_turn(self, turn_number: int,
                                      branch_name: str | None = None) -> str:
        """A new branch holding the items before the `turn_number`-th user message of the
        current branch (1-based), and switch to it; returns its name."""
        return await _finish(lambda: self._create_branch_sync(turn_number, branch_name))

    def _switch_sync(self, branch: str) -> None:
        with self._lock:
            self._check_open()
            if self._find() is None or self.repo.refs.read(self._ref(branch)) is None:
                raise BranchError(f"Branch '{branch}' does not exist")
            self._branch = branch

    async def switch_to_branch(self, branch_id: str) -> None:
        """Read and append on another branch of this session from now on."""
        await asyncio.to_thread(self._switch_sync, branch_id)

    def _delete_branch_sync(self, branch: str, force: bool) -> None:
        with self._lock:
            self._check_open()
            if not branch or not branch.strip():
                raise BranchError("Branch ID cannot be empty")
            if branch == DEFAULT_BRANCH:
                raise BranchError("Cannot delete the 'main' branch")
            if self._find() is None or self.repo.refs.read(self._ref(branch)) is None:
                raise BranchError(f"Branch '{branch}' does not exist")
            if branch == self._branch and not force:
                raise BranchError(f"Cannot delete current branch '{branch}'. Use force=True "
                                  f"or switch branches first")
            with self.repo.transaction(actor=ACTOR, message=f"{FMT}: delete branch {branch}") as tx:
                tx.delete_ref(self._ref(branch))
            if branch == self._branch:
                self._branch = DEFAULT_BRANCH

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Remove a branch ref (its events stay; `ctx undo` restores it)."""
        await _finish(lambda: self._delete_branch_sync(branch_id, force))

    def _list_branches_sync(self) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            if self._find() is None:
                return []
            out = []
            for name, tip in self.repo.branches(self._sid).items():  # type: ignore[arg-type]
                items = self._items_back(tip)
                log = self.repo.refs.reflog(self._ref(name))
                created = _iso(log[0].ts_ms) if log else ""
                out.append({"branch_id": name, "message_count": len(items),
                            "user_turns": sum(ev.type == "UserPromptSubmitted" for _, ev in items),
                            "is_current": name == self._branch, "created_at": created})
            out.sort(key=lambda b: (b["created_at"], b["branch_id"]))
            return out

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every branch: branch_id, message_count, user_turns, is_current, created_at."""
        return await asyncio.to_thread(self._list_branches_sync)

    def _turns_sync(self, branch: str | None) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            if self._find() is None:
                return []
            tip = self.repo.refs.read(self._ref(branch))
            if tip is None:
                raise BranchError(f"Branch '{branch}' does not exist")
            out = []
            for n, (_eid, ev) in enumerate(self._user_turns(tip), 1):
                content = item_of(self.repo.objects, ev)
                content = content.get("content", "") if isinstance(content, dict) else ""
                text = content if isinstance(content, str) else str(ev.payload.get("text", ""))
                out.append({"turn": n, "content": text[:100] + ("..." if len(text) > 100 else ""),
                            "full_content": content, "timestamp": ev.ts, "can_branch": True})
            return out

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns of a branch (default: the current one), to choose where to branch."""
        return await asyncio.to_thread(self._turns_sync, branch_id)

    # -- closing -------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the repository (closed when the store's last session closes)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._shared.release()

    def __enter__(self) -> CtxstoreSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


__all__ = ["SESSIONS_REF_PREFIX", "BranchError", "CtxstoreSession",
           "session_ids", "session_ref"]
