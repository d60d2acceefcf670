"""A repository: an object store, refs and config found in one `.ctx` directory.

Sessions are created here and grow through append transactions: write events to the store,
make them durable with one group-commit flush, then move the branch once by compare-and-swap.
This is the only module that creates sessions or moves branch refs after appends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import config as config_mod
from ..clock import now_iso
from ..errors import BadRevision, CtxError, StoreNotFound
from ..objects import Event, Session
from ..refs import (
    SESSIONS_PREFIX,
    FileRefs,
    MemoryRefs,
    RefStore,
    split_branch_ref,
)
from ..store import MemoryStore, ObjectStore
from .eventcache import SESSION_MARK_EVERY, EventCache
from .graph import EventGraph

if TYPE_CHECKING:
    from ..store.journal import JournalFile
    from .transaction import Transaction

CTX_DIRNAME = ".ctx"


def _open_pack_store(objects_dir: Path, cfg: dict[str, Any], create: bool) -> ObjectStore:
    try:
        from ..store.packstore import PackStore
    except ImportError:  # pragma: no cover - only while the pack store is being built
        raise CtxError("the pack store is not available in this build") from None
    return PackStore(objects_dir, durability=cfg["durability"],
                     level=cfg.get("compression_level", 3), create=create)


def _journal_wanted(cfg: dict[str, Any]) -> bool:
    """The write-ahead journal is on where config.json says `"journal": true` (or, where it
    says nothing, CTXSTORE_JOURNAL=1: how the whole test suite is run over the journal), for
    durability "batch" only: "always" syncs every record anyway, "never" syncs nothing."""
    wanted = cfg["journal"] is True if "journal" in cfg else \
        os.environ.get("CTXSTORE_JOURNAL") == "1"
    return wanted and cfg["durability"] == "batch"


class Current(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    """Where HEAD points: a session branch, or a detached event."""

    session: str | None
    branch: str | None
    tip: str | None
    ref: str | None


class Repository:
    def __init__(self, path: Path | None, store: ObjectStore, refs: RefStore,
                 config: dict[str, Any] | None = None) -> None:
        self.path = path
        self.objects = store
        self.refs = refs
        self.config = config if config is not None else dict(config_mod.DEFAULTS)
        self.graph = EventGraph(store)
        self.session_marks = EventCache(path, "sessions")
        self._session_memo: dict[str, str] = {}
        #: The command line operations record (the CLI sets it); None: "api: <what>".
        self.command: str | None = None
        self._open_transactions = 0
        #: the write-ahead journal (`"journal": true` in config.json; store/journal.py)
        self.journal: JournalFile | None = None
        #: small transactions commit as journal records (else the journal is only read, and
        #: checkpointed before the next commit)
        self.journal_commits = False

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
        journal = None
        wanted = _journal_wanted(cfg)
        # a journal written while it was on is read (and checkpointed by the next writer)
        # however the store is configured now: its records are the newest ref values
        if wanted or (root / "wal").exists():  # refs resolve journal-first (refs/journalrefs.py)
            from ..refs.journalrefs import JournalRefs
            from .journal_apply import journal_file

            journal = journal_file(root)
            refs: FileRefs = JournalRefs(root, journal)
        else:
            refs = FileRefs(root)
        if refs.has_journal():  # a transaction was interrupted after its commit point
            from .transaction_journal import roll_forward  # only recovery needs it

            with refs.transaction_lock():
                roll_forward(refs, fsync=True)
        repo = cls(root, store, refs, cfg)
        if journal is not None:
            from . import journal_apply

            repo.journal, repo.journal_commits = journal, wanted
            if journal_apply.needs_recovery(repo):
                with refs.transaction_lock():
                    journal_apply.recover(repo)
        return repo

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
        self.objects.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sessions ------------------------------------------------------------------------------
    def new_session(self, title: str = "", goal: str = "", *, actor: str = "ctx",
                    **kw: Any) -> tuple[str, str]:
        """Create a session, its root event and first branch in one transaction (see
        Transaction.new_session for the arguments). Returns (session id, root event id)."""
        with self.transaction(actor=actor, message="new session") as tx:
            return tx.new_session(title, goal, **kw)

    def session(self, session_id: str) -> Session:
        return self.objects.get_typed(session_id, Session)

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
        if head.target is not None and head.target not in self.objects:
            self._missing_target(head.ref or "HEAD", head.target)
        if head.ref:
            parts = split_branch_ref(head.ref)
            if parts:
                return Current(parts[0], parts[1], head.target, head.ref)
            return Current(None, None, head.target, head.ref)
        return Current(None, None, head.target, None)

    def ref_file(self, name: str) -> str:
        """The file a ref (or HEAD) lives in, for messages."""
        return str(Path(self.path) / name) if self.path is not None else name

    def _missing_target(self, name: str, target: str) -> None:
        """CorruptStore naming the file of ref NAME, which names TARGET the store lacks: a
        well-formed ref that points nowhere is damage of that file, not an unknown id."""
        from ..errors import CorruptStore

        raise CorruptStore(f"{self.ref_file(name)}:1: {name} names {target}, which is not in "
                           f"the store (`ctx fsck` lists all damage)", path=self.ref_file(name))

    def session_of_event(self, event_id: str) -> str | None:
        """The session an event belongs to: the one whose root its first-parent chain reaches.

        The walk stops at a session mark (written every SESSION_MARK_EVERY generations by
        append transactions) or a memoised answer, so it is short; without marks it goes to
        the root once per process."""
        walked: list[str] = []
        sid: str | None = self._session_memo.get(event_id)
        if sid is not None:
            return sid
        for eid, ev in self.graph.first_parents(event_id):
            sid = self._session_memo.get(eid)
            # marks exist only where they are written: looking elsewhere costs a cache-file
            # open per event (a quarter of `ctx show HEAD` on a 1k-event session)
            if sid is None and ev.generation % SESSION_MARK_EVERY == 0:
                sid = self.session_marks.get(eid)
            if sid is not None:
                break
            walked.append(eid)
            if not ev.parents:
                found = ev.payload.get("session")
                sid = found if isinstance(found, str) else None
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

    # -- writing -------------------------------------------------------------------------------
    def transaction(self, ref: str | None = None, *, rebase: bool = True, actor: str = "ctx",
                    message: str = "", command: str | None = None) -> Transaction:
        """The one write path (repo/transaction.py): events and objects now, every ref move at
        commit, atomically, as one operation. `ref` is the branch `append` writes to (default:
        HEAD's); with `rebase` its appends move onto a new tip if another writer moved it."""
        from .transaction import Transaction  # readers never load the write path

        return Transaction(self, ref, rebase=rebase, actor=actor, message=message,
                           command=command)

    def head_branch(self) -> str:
        """The branch HEAD names; BadRevision when HEAD is detached."""
        cur = self.current()
        if cur.ref is None:
            raise BadRevision("HEAD is detached: check out a branch (ctx checkout BRANCH) "
                              "or fork one (ctx fork NAME) before appending")
        return cur.ref

    def make_event(self, type: str, actor: str = "system", payload: dict | None = None,
                   parents: tuple[str, ...] = (), causality: dict | None = None,
                   ts: str | None = None) -> Event:
        """An event value with its generation computed (not stored: see Transaction.event)."""
        from .transaction import check_event

        check_event(type, payload)
        gen = 1 + max((self.graph.generation(p) for p in parents), default=0)
        return Event(type, actor, payload or {}, tuple(parents), gen, ts or now_iso(),
                     causality or {})


#: The name writers used before there was one transaction type.


def iter_session_refs(repo: Repository) -> Iterator[tuple[str, str, str]]:
    """(session, branch, tip) for every session branch."""
    for name, tip in repo.refs.iter_refs(SESSIONS_PREFIX):
        parts = split_branch_ref(name)
        if parts:
            yield parts[0], parts[1], tip


def command_line(argv: list[str] | None = None) -> str:
    """The command line an operation records: `ctx reset main~2`."""
    import shlex

    argv = sys.argv if argv is None else argv
    prog = os.path.basename(argv[0]) if argv else "ctx"
    return shlex.join(["ctx" if prog in ("ctx", "__main__.py", "-m") else prog, *argv[1:]])
