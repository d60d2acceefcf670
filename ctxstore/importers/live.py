"""Incremental Claude Code import: lines in as they are written, the same events as `ctx import`.

`ctx import` reads a whole transcript; a session captured while it runs (the Claude Agent SDK
SessionStore, `ctx hook claude-code`) arrives a batch of lines at a time. `LiveImporter.append`
imports one batch with the very same mapping (claude_code.ClaudeFile, claude_map) so that after
every batch the store holds exactly the events `ctx import` would write for the transcript so
far, and at the end the events of the whole file.

What makes that O(batch): the importer's per-file tables (uuid -> place, open tool calls,
response parts, spawn links) live in a SQLite file beside the store (`.ctx/live.sqlite`) and
are read row by row as the new lines need them; the per-session rest (tips of its lines, the
head fields the session id derives from, the resume chain's leaf) is one small row.

The whole-file importer is not prefix-stable in two places, and both are checked per batch:
- the session object derives from the first lines' session id, first timestamp, cwd and first
  prompt's title (`_head`, first 200 lines); while those can still change, a batch that
  changes them re-imports the session from its first line (a new session id; the old
  session's refs are deleted in the same transaction);
- main is the chain Claude Code resumes, walked back from the newest message. A batch whose
  chain does not run through the previous leaf (a rewind) re-imports the session from its
  first line, which puts the abandoned lines on a `rewind-*` branch exactly as `ctx import`.
Both are rare and cost O(session) once; every other batch costs O(batch).

The SQLite file is a cache of what the repository already holds, never the truth: it is
committed after the repository's transaction, and holds the branch tips it was written with.
If they differ from the refs (a crash between the two commits, `ctx undo`, a delete), the
session is re-imported from its lines on the next append.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import CtxError
from ..refs import branch_ref, split_branch_ref
from ..repo import Repository
from .claude_code import (
    ClaudeFile,
    _Entry,
    _head_of,
    _meta,
    chain_of,
    is_agent_file,
    is_leaf,
    is_request,
)
from .claude_map import FMT, FileState
from .common import ImportContext, SessionBuilder, SessionStats
from .records import MALFORMED, event_line

STATE_FILE = "live.sqlite"
LOCK_FILE = "live.lock"  # capture_lock
HEAD_LINES = 200  # _head reads this many lines
STATE_VERSION = 1

#: (text, parsed value, MALFORMED, or None for a blank line) of one transcript line
Line = tuple[str, Any]

_MISSING = object()
_DELETED = object()
_GLOBAL = ""  # state key of the cross-file tables (spawn links, source -> session)


class LiveState:
    """The SQLite side table. One connection; `begin()` takes the write lock (BEGIN IMMEDIATE),
    so appends from several processes are serialised."""

    def __init__(self, path, check_same_thread: bool = True) -> None:
        self.path = path
        try:
            self.db = self._open(check_same_thread)
        except sqlite3.DatabaseError:
            # a cache: a damaged file (say, after a power loss) is rebuilt from the store
            Path(path).unlink(missing_ok=True)
            self.db = self._open(check_same_thread)

    def _open(self, check_same_thread: bool) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None,
                             check_same_thread=check_same_thread)
        db.execute("PRAGMA journal_mode=WAL")
        # no fsync of its own: the repository's commit, before it, is the durable one; a
        # state row that did not survive is re-derived (its tips no longer match the refs)
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE IF NOT EXISTS source (s TEXT PRIMARY KEY, v TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS kv (s TEXT, m TEXT, k TEXT, v TEXT, "
                   "PRIMARY KEY (s, m, k)) WITHOUT ROWID")
        return db

    @classmethod
    def of(cls, repo: Repository, check_same_thread: bool = True) -> LiveState:
        if repo.path is None:
            raise CtxError("live capture needs an on-disk store (Repository.open / ctx init)")
        return cls(repo.path / STATE_FILE, check_same_thread)

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def close(self) -> None:
        self.db.close()

    def get(self, skey: str) -> dict | None:
        row = self.db.execute("SELECT v FROM source WHERE s=?", (skey,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, skey: str, value: dict) -> None:
        self.db.execute("INSERT OR REPLACE INTO source VALUES (?, ?)",
                        (skey, json.dumps(value, separators=(",", ":"))))

    def drop(self, skey: str) -> None:
        self.db.execute("DELETE FROM source WHERE s=?", (skey,))
        self.db.execute("DELETE FROM kv WHERE s=?", (skey,))

    def keys(self, prefix: str) -> list[str]:
        rows = self.db.execute("SELECT s FROM source WHERE s >= ? AND s < ?",
                               (prefix, prefix + "\U0010ffff"))
        return [r[0] for r in rows]


class PMap:
    """A dict the importer reads and writes key by key, backed by one SQLite table slice.
    Every value read or written in this batch is written back at `flush` (the importer
    mutates entries and lists in place)."""

    def __init__(self, state: LiveState, skey: str, name: str,
                 enc: Callable[[Any], Any] = lambda v: v,
                 dec: Callable[[Any], Any] = lambda v: v,
                 kenc: Callable[[Any], str] = str) -> None:
        self.state, self.skey, self.name = state, skey, name
        self.enc, self.dec, self.kenc = enc, dec, kenc
        self.cache: dict[Any, Any] = {}

    def _read(self, k: Any) -> Any:
        if k in self.cache:
            return self.cache[k]
        row = self.state.db.execute("SELECT v FROM kv WHERE s=? AND m=? AND k=?",
                                    (self.skey, self.name, self.kenc(k))).fetchone()
        v = _MISSING if row is None else self.dec(json.loads(row[0]))
        self.cache[k] = v
        return v

    def _load(self, k: Any) -> Any:
        v = self._read(k)
        return _MISSING if v is _DELETED else v

    def get(self, k: Any, default: Any = None) -> Any:
        v = self._load(k)
        return default if v is _MISSING else v

    def __getitem__(self, k: Any) -> Any:
        v = self._load(k)
        if v is _MISSING:
            raise KeyError(k)
        return v

    def __contains__(self, k: Any) -> bool:
        return self._load(k) is not _MISSING

    def __setitem__(self, k: Any, v: Any) -> None:
        self.cache[k] = v

    def add(self, k: Any) -> None:  # set-like use (the resume chain)
        self.cache[k] = 1

    def discard(self, k: Any) -> None:
        self.cache[k] = _DELETED

    def setdefault(self, k: Any, default: Any) -> Any:
        v = self._load(k)
        if v is _MISSING:
            self.cache[k] = v = default
        return v

    def flush(self) -> None:
        rows = [(self.skey, self.name, self.kenc(k), json.dumps(self.enc(v), separators=(",", ":")))
                for k, v in self.cache.items() if v is not _MISSING and v is not _DELETED]
        gone = [(self.skey, self.name, self.kenc(k)) for k, v in self.cache.items()
                if v is _DELETED]
        db = self.state.db
        db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?, ?)", rows)
        db.executemany("DELETE FROM kv WHERE s=? AND m=? AND k=?", gone)
        self.cache.clear()


def _pair_key(k: tuple) -> str:
    return json.dumps(list(k), separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Builders to and from their state

_BUILDER_FIELDS = ("sid", "root", "fmt", "file", "source_id", "cwd", "last_ts", "lines", "cur",
                   "last_compaction",
                   "pending_boundary", "pending_meta")


def _builder_state(b: SessionBuilder) -> dict:
    out = {f: getattr(b, f) for f in _BUILDER_FIELDS}
    out["calls"] = [[tcid, mid] for tcid, (mid, _form) in b._call_messages.items()]
    stats = b.stats.to_dict()
    stats["new_events"] = 0
    out["stats"] = stats
    return out


def _restore_builder(ctx: ImportContext, st: dict) -> SessionBuilder:
    """A SessionBuilder as it was after the previous batch (its session already exists, so
    __init__, which creates it, is not run)."""
    b = SessionBuilder.__new__(SessionBuilder)
    b.ctx, b.repo, b.objects, b.tx = ctx, ctx.repo, ctx.repo.objects, ctx.tx
    for f in _BUILDER_FIELDS:
        setattr(b, f, st[f])
    b._source, b._pending, b._line_messages = None, None, []
    b._call_messages = {tcid: (mid, None) for tcid, mid in st["calls"]}
    b.stats = SessionStats(**st["stats"])
    ctx.report.sessions.append(b.stats)
    return b


# ---------------------------------------------------------------------------------------------
# One transcript file, fed a batch at a time

class LiveFile(ClaudeFile):
    """ClaudeFile with its tables in LiveState and an optional `.meta.json` given by the
    caller (the SDK sends it as an entry; a hook finds it on disk)."""

    def __init__(self, ctx: ImportContext, path: PurePosixPath, state: LiveState, skey: str,
                 meta: dict | None = None) -> None:
        super().__init__(ctx, path)  # type: ignore[arg-type]
        self._meta_value = meta
        self.index = PMap(state, skey, "uuid", self._enc_entry, self._dec_entry)
        self.chain_map = PMap(state, skey, "chain")
        #: typed requests, and the uuids one was asked from: whether a line whose membership
        #: of the resume chain changes stays where it was placed (LiveImporter._rejoin)
        self.requests = PMap(state, skey, "request")
        self.asked = PMap(state, skey, "asked")
        self.state, self.skey = state, skey

    def _one(self, n: int, text: str, rec: dict) -> None:
        super()._one(n, text, rec)
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and is_request(rec):
            self.requests.add(uuid)
            parent = _parent(rec)
            if parent:
                self.asked.add(parent)

    def meta(self) -> dict:
        return dict(self._meta_value or {})

    def _enc_entry(self, e: _Entry) -> list:
        return [self.builders.index(e.builder), e.parent, e.event, e.gen, e.marked, e.line]

    def _dec_entry(self, v: list) -> _Entry:
        e = _Entry(self.builders[v[0]], v[1], v[2], v[3], v[5])
        e.marked = v[4]
        return e

    def bind_tables(self) -> None:
        """ImportContext's cross-file tables, row by row from LiveState (before `start`,
        which looks up a subagent's spawning call in them)."""
        self.ctx.agent_spawns = PMap(self.state, _GLOBAL, "spawns", kenc=_pair_key)
        self.ctx.task_prompts = PMap(self.state, _GLOBAL, "prompts", kenc=_pair_key)

    def bind_file_tables(self) -> None:
        """FileState's tables (after `start` made it)."""
        self.fs.calls = PMap(self.state, self.skey, "calls", list, tuple)
        self.fs.parts = PMap(self.state, self.skey, "parts")

    def flush(self) -> None:
        for m in (self.index, self.chain_map, self.requests, self.asked, self.fs.calls, self.fs.parts,
                  self.ctx.agent_spawns, self.ctx.task_prompts):
            m.flush()


@dataclass
class AppendResult:
    session: str
    lines: int
    new_events: int
    replayed: bool = False  # the batch re-imported the session from its first line
    warnings: list[dict] = field(default_factory=list)


class NeedsReplay(Exception):
    """Internal: this batch cannot extend the saved state (see the module docstring)."""


class LiveImporter:
    """Appends batches of Claude Code lines to the sessions named by state keys."""

    def __init__(self, repo: Repository, state: LiveState | None = None, *,
                 check_same_thread: bool = True) -> None:
        self.repo = repo
        self.state = state or LiveState.of(repo, check_same_thread)

    def close(self) -> None:
        self.state.close()

    # -- the one entry point -----------------------------------------------------------------
    def append(self, skey: str, vpath: PurePosixPath, batch: list[Line],
               history: Callable[[], list[Line]], *, meta: dict | None = None,
               extra: Callable[[dict], dict] | None = None, source_hint: str = "",
               restart: bool = False, message: str = "live capture") -> AppendResult:
        """Import `batch`, the lines after those already imported under `skey` (a transcript
        named `vpath`). `meta` is a subagent's `.meta.json` (None: as before; a new one
        re-imports, since the session object holds it). `history()` gives the lines already imported; it is called only when
        the session must be re-imported. `extra(saved_extra)` returns the caller's own fields
        for the state row (`row(skey)["extra"]`), called under the write lock.
        `restart`: `batch` is the whole transcript again (its earlier lines were rewritten).
        `source_hint` names the source session when no line of the head carries a
        `sessionId` (instead of the file name, which the SDK's keys share across projects).
        The repository transaction commits before this returns: the batch is durable."""
        st = self.state
        st.begin()
        try:
            saved = st.get(skey)
            stale = saved is not None and not self._tips_hold(saved)
            with self.repo.transaction(actor="ctx-live", message=f"{message}: {vpath.name}") as tx:
                ctx = ImportContext(self.repo, tx)
                ctx._indexed = True  # the source -> session table is LiveState's, not a scan
                ctx.sessions = _SessionTable(st)  # type: ignore[assignment]
                replayed = False
                f = None
                if meta is None and saved is not None:
                    meta = saved.get("meta")
                if saved is not None and not stale and not restart:
                    try:
                        if meta != saved.get("meta"):
                            raise NeedsReplay  # the session object holds the meta
                        f = self._extend(ctx, skey, vpath, saved, batch, meta)
                    except NeedsReplay:
                        f = None
                if f is None:
                    old = history() if saved is not None and not restart else []
                    replayed = bool(old)
                    f = self._full(ctx, skey, vpath, old + batch, meta,
                                   None if stale else saved, source_hint)
                cur = f.main.cur
                f.end()
                tips = {branch_ref(b.sid, name): tip for b in f.builders
                        for name, tip in b.branch_names().items()}
                f.main.cur = cur  # the line the next record continues (end() named main)
                new_events = sum(b.stats.new_events for b in f.builders)
                row = self._row(f, tips, saved)
                row["meta"] = meta
                if extra is not None:
                    row["extra"] = {**row["extra"], **extra(row["extra"])}
                f.flush()
                ctx.sessions.flush()  # type: ignore[attr-defined]
            st.put(skey, row)
            st.commit()
        except BaseException:
            st.rollback()
            raise
        return AppendResult(f.main.sid, row["n"], new_events, replayed, ctx.report.warnings)

    def row(self, skey: str) -> dict | None:
        return self.state.get(skey)

    # -- subagent transcripts waiting for their spawning call (capture's `defer`) -----------
    def spawn_known(self, source: str, agent: str, prompt: str | None) -> bool:
        """Whether the store holds the Task/Agent call that spawned this subagent (by its
        agent id, or the prompt it was asked: the two ways the importer links a spawn)."""
        if PMap(self.state, _GLOBAL, "spawns", kenc=_pair_key).get((source, agent)):
            return True
        return prompt is not None and \
            bool(PMap(self.state, _GLOBAL, "prompts", kenc=_pair_key).get((source, prompt)))

    def deferred(self, source: str) -> list[str]:
        return list(PMap(self.state, _GLOBAL, "deferred").get(source) or [])

    def defer(self, source: str, path: str) -> None:
        self._set_deferred(source, sorted({*self.deferred(source), path}))

    def undefer(self, source: str, path: str) -> None:
        self._set_deferred(source, [p for p in self.deferred(source) if p != path])

    def _set_deferred(self, source: str, paths: list[str]) -> None:
        m = PMap(self.state, _GLOBAL, "deferred")
        if paths:
            m[source] = paths
        else:
            m.discard(source)
        m.flush()

    def keys(self, prefix: str) -> list[str]:
        return self.state.keys(prefix)

    def delete(self, skeys: list[str], message: str = "live capture: delete") -> str | None:
        """Delete the branch refs of the sessions captured under `skeys`, in one operation
        (`ctx undo` restores them; the events stay until gc), and forget their state."""
        st = self.state
        st.begin()
        try:
            with self.repo.transaction(actor="ctx-live", message=message) as tx:
                for skey in skeys:
                    for ref in (st.get(skey) or {}).get("tips", {}):
                        if tx.read(ref) is not None:
                            tx.delete_ref(ref, message=message)
            for skey in skeys:
                st.drop(skey)
            st.commit()
        except BaseException:
            st.rollback()
            raise
        return tx.op_id

    def stored_lines(self, skey: str, uuids: set[str]) -> dict[str, Any]:
        """uuid -> the line stored for it under `skey`, for those of `uuids` imported."""
        row = self.state.get(skey)
        if row is None:
            return {}
        index = PMap(self.state, skey, "uuid")
        graph = self.repo.graph
        out: dict[str, Any] = {}
        for u in uuids:
            ent = index.get(u)
            if ent is None:
                continue
            eid: str | None = ent[2]
            while eid:  # back to the line's first event, which keeps the line
                ev = graph.event(eid)
                if isinstance(ev.payload.get("source"), dict):
                    text = event_line(self.repo.objects, ev.payload, ev.causality)
                    out[u] = json.loads(text) if text is not None else None
                    break
                eid = ev.parents[0] if ev.parents else None
        return out

    # -- the two ways of importing a batch ------------------------------------------------------
    def _full(self, ctx: ImportContext, skey: str, vpath: PurePosixPath, lines: list[Line],
              meta: dict | None, saved: dict | None, source_hint: str = "") -> LiveFile:
        """Import `lines` (the whole transcript so far) from the first line, as `ctx import`."""
        st = self.state
        st.drop(skey)
        head = _head_of(v for _t, v in lines[:HEAD_LINES])
        agent = is_agent_file(vpath)  # type: ignore[arg-type]
        if not agent:  # spawn links this transcript made are made again below
            prefix = json.dumps([head["session"] or source_hint or vpath.stem])[:-1] + ","
            st.db.execute("DELETE FROM kv WHERE s=? AND m IN ('spawns', 'prompts') AND "
                          "k >= ? AND k < ?", (_GLOBAL, prefix, prefix + "\U0010ffff"))
        f = LiveFile(ctx, vpath, st, skey, meta)
        f.head = head
        f.bind_tables()
        f.start({**head, "session": head["session"] or source_hint}, None)
        f.bind_file_tables()
        chain = None if agent else chain_of(v for _t, v in lines)
        if chain is not None:
            f.chain = f.chain_map
            for u in chain:
                f.chain_map.add(u)
        for n, (text, value) in enumerate(lines, 1):
            if value is not None:  # a blank line: counted, as iter_jsonl counts it
                f.feed(n, text, value)
        f.n = len(lines)
        f.newest_leaf = _newest_leaf(lines) if chain is not None else ""
        f.saw_uuid = any(_uuid(v) for _t, v in lines)
        if saved is not None:  # the session id may have changed: the old one's refs go
            keep = {b.sid for b in f.builders}
            for ref in saved.get("tips", {}):
                parts = split_branch_ref(ref)
                if parts and parts[0] not in keep and ctx.tx.read(ref) is not None:
                    ctx.tx.delete_ref(ref, message="live capture: session re-imported")
        return f

    def _extend(self, ctx: ImportContext, skey: str, vpath: PurePosixPath, saved: dict,
                batch: list[Line], meta: dict | None) -> LiveFile:
        """The saved state plus `batch`; NeedsReplay if that would not be what `ctx import`
        of the whole transcript writes."""
        n0 = saved["n"]
        if n0 < HEAD_LINES and batch:
            head = _head_of((v for _t, v in batch[:HEAD_LINES - n0]), dict(saved["head"]))
            if head != saved["head"]:
                raise NeedsReplay("the session object derives from these fields")
        f = LiveFile(ctx, vpath, self.state, skey, meta)
        f.head = saved["head"]
        f.fs = FileState(saved["source"])
        for bst in saved["builders"]:
            f.builders.append(_restore_builder(ctx, bst))
        f.main = f.builders[0]
        f.groups = {k: f.builders[i] for k, i in saved["groups"].items()}
        f.newest_on_line = {int(k): v for k, v in saved["newest_on_line"].items()}
        f.bind_tables()
        f.bind_file_tables()
        leaf = saved["leaf"]
        parents: dict[str, str | None] = {}
        for _t, v in batch:
            u = _uuid(v)
            if u:
                if u in parents or u in f.index:
                    raise NeedsReplay("a uuid written twice: the whole-file rule decides")
                parents[u] = _parent(v)
        new_leaf = "" if is_agent_file(vpath) else _newest_leaf(batch)  # type: ignore[arg-type]
        f.chain = f.chain_map if leaf else None
        if new_leaf:
            walk: list[str] = []
            cur: str | None = new_leaf
            while cur is not None and cur in parents and cur not in walk:
                walk.append(cur)
                cur = parents[cur]
            if leaf and cur != leaf:
                self._rejoin(f, leaf, cur)
            if not leaf and saved["had_uuid"]:
                raise NeedsReplay("earlier lines were placed by the rule without a chain")
            f.chain = f.chain_map
            for u in walk:
                f.chain_map.add(u)
        for i, (text, value) in enumerate(batch, n0 + 1):
            if value is not None:
                f.feed(i, text, value)
        f.n = n0 + len(batch)
        f.newest_leaf = new_leaf or leaf
        f.saw_uuid = saved["had_uuid"] or bool(parents)
        return f

    @staticmethod
    def _rejoin(f: LiveFile, leaf: str, cur: str | None) -> None:
        """The new resume chain, walked back through this batch, reached the earlier line
        `cur`, not the previous leaf. Claude Code answers parallel tool calls on sibling
        lines and hangs attachments off the newest line, so this is common and rarely a
        rewind. Lines that join the chain (from `cur` back to the old chain) and lines that
        leave it (from the old leaf back to the junction) are placed the same way by
        `ctx import` iff all are on main's line, none is a typed request and none was asked
        from; then only the chain table changes. Anything else re-imports the session."""
        joined: list[str] = []
        while cur is not None and cur not in f.chain_map:
            ent = f.index.get(cur)
            if ent is None or len(joined) > 1000:
                raise NeedsReplay
            if ent.builder is not f.main or ent.line != 0 or cur in f.requests \
                    or cur in f.asked:
                raise NeedsReplay
            joined.append(cur)
            cur = ent.parent
        if cur is None:
            raise NeedsReplay  # a chain with no line in common with the old one
        left: list[str] = []
        at = leaf
        while at != cur:
            ent = f.index.get(at)
            if ent is None or ent.parent is None or len(left) > 1000:
                raise NeedsReplay
            if at in f.requests or at in f.asked:
                raise NeedsReplay  # a rewind
            left.append(at)
            at = ent.parent
        for u in left:
            f.chain_map.discard(u)
        for u in joined:
            f.chain_map.add(u)

    # -- state rows ------------------------------------------------------------------------------
    def _row(self, f: LiveFile, tips: dict, saved: dict | None) -> dict:
        return {"v": STATE_VERSION, "n": f.n, "head": f.head, "source": f.fs.source_id,
                "builders": [_builder_state(b) for b in f.builders],
                "groups": {k: f.builders.index(b) for k, b in f.groups.items()},
                "newest_on_line": {str(k): v for k, v in f.newest_on_line.items()},
                "leaf": f.newest_leaf, "had_uuid": f.saw_uuid, "tips": tips,
                "extra": dict((saved or {}).get("extra") or {})}

    def _tips_hold(self, saved: dict) -> bool:
        if saved.get("v") != STATE_VERSION:
            return False
        refs = self.repo.refs
        return all(refs.read(ref) == tip for ref, tip in saved["tips"].items())


def _uuid(v: Any) -> str:
    return v["uuid"] if isinstance(v, dict) and isinstance(v.get("uuid"), str) else ""


def _newest_leaf(lines: list[Line]) -> str:
    for _t, v in reversed(lines):
        if is_leaf(v):
            return v["uuid"]
    return ""


def _parent(rec: dict) -> str | None:
    p = rec.get("parentUuid")
    if p is None:
        p = rec.get("logicalParentUuid")
    return p if isinstance(p, str) else None


class _SessionTable(PMap):
    """ImportContext.sessions ((format, source, agent) -> ctx session) in LiveState, so a
    subagent transcript finds its parent session without scanning the store."""

    def __init__(self, state: LiveState) -> None:
        super().__init__(state, _GLOBAL, "sessions", kenc=_pair_key)


def read_lines(path, start: int, end: int | None = None) -> tuple[list[Line], int, list[str]]:
    """The complete lines of a growing file from byte `start` (to `end`): (lines, the offset
    after the last newline, problems). A last line still being written is left for the next
    call. Lines parse as iter_jsonl parses them (bad ones kept as raw text, blank ones
    counted); problems are "line k: ..." relative to `start`."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read() if end is None else fh.read(max(0, end - start))
    cut = data.rfind(b"\n") + 1
    out: list[Line] = []
    problems: list[str] = []
    for k, raw in enumerate(data[:cut].split(b"\n")[:-1], 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"line {k}: invalid UTF-8 ({exc.reason}); replaced")
            text = raw.decode("utf-8", errors="replace")
        text = text.rstrip("\r")
        if not text.strip():
            out.append((text, None))
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            problems.append(f"line {k}: malformed JSON ({exc.msg}); kept as raw text")
            out.append((text, MALFORMED))
            continue
        out.append((text, value if isinstance(value, dict) else MALFORMED))
    return out, start + cut, problems


# ---------------------------------------------------------------------------------------------
# A transcript file that grows (ctx hook claude-code, ctx import --follow)

WINDOW = 4096  # bytes hashed at each end of the imported prefix (the rewrite check)


def _digest(path: Path, start: int, end: int) -> str:
    with open(path, "rb") as fh:
        fh.seek(start)
        return hashlib.blake2b(fh.read(max(0, end - start)), digest_size=16).hexdigest()


def _marks(path: Path, offset: int) -> dict[str, Any]:
    return {"offset": offset, "head": _digest(path, 0, min(WINDOW, offset)),
            "tail": _digest(path, max(0, offset - WINDOW), offset)}


def _rewritten(path: Path, saved: dict) -> bool:
    off = saved.get("offset", 0)
    if os.path.getsize(path) < off:
        return True
    return _marks(path, off) != {k: saved.get(k) for k in ("offset", "head", "tail")}


@contextmanager
def capture_lock(repo: Repository) -> Iterator[None]:
    """One capture at a time per store (flock on .ctx/live.lock, dropped by the kernel if the
    process dies). Claude Code runs async hooks as concurrent processes in no order; each
    reads the offset the previous capture reached and the lines after it under this lock,
    so no line is read twice or skipped (the SQLite lock alone is taken after the read)."""
    if repo.path is None:
        raise CtxError("live capture needs an on-disk store (Repository.open / ctx init)")
    fd = os.open(repo.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def capture(live: LiveImporter, transcript: Path, *, defer: bool = False) -> dict[str, Any]:
    """Import what the Claude Code transcript gained since the last call (from the byte
    offset that call reached); returns what happened. Before reading on, checks that the
    file still starts with what was imported (its size, and hashes of the first and the
    last WINDOW bytes before the offset: O(1), not a hash of the whole prefix); a rewritten
    transcript is imported again from its first line. The caller holds capture_lock.

    `seen` in the result is the file's (size, mtime_ns, inode) before it was read: every
    complete line up to that size is imported once this returns (the hook's fast path
    compares the next call's stat with it).

    `defer` (the hook): a subagent transcript whose spawning call the store does not hold
    yet is not imported now but queued under its parent's source id and imported by the
    capture of the parent that brings the call (or by `flush_deferred`), so its session
    links to the call exactly as `ctx import`, which reads parents first, links it."""
    path = transcript.resolve()
    skey = "hook\x1f" + str(path)
    st = os.stat(path)
    seen = [st.st_size, st.st_mtime_ns, st.st_ino]
    row = live.row(skey)
    if defer and row is None and is_agent_file(path):
        head = _head_of(v for _t, v in read_lines(path, 0)[0][:HEAD_LINES])
        agent = head["agent"] or path.stem[len("agent-"):]
        if head["session"] and not live.spawn_known(head["session"], agent, head["prompt"]):
            live.defer(head["session"], str(path))
            return {"transcript": str(path), "session": "", "lines": 0, "deferred": True,
                    "seen": seen, "problems": []}
    saved = (row or {}).get("extra") or {}
    restart = bool(row) and _rewritten(path, saved)
    start = 0 if restart or not row else saved["offset"]
    lines, offset, problems = read_lines(path, start)
    if not lines and not restart:
        builders = (row or {}).get("builders") or [{}]
        return {"transcript": str(path), "session": builders[0].get("sid", ""), "lines": 0,
                "source": (row or {}).get("source") or "", "seen": seen, "problems": problems}
    meta = _meta(path) if is_agent_file(path) else None
    res = live.append(
        skey, PurePosixPath(path), lines,
        lambda: read_lines(path, 0, start)[0],
        meta=meta or None, restart=restart,
        extra=lambda _old: _marks(path, offset), message="claude-code hook")
    out = {"transcript": str(path), "session": res.session, "lines": len(lines),
           "new_events": res.new_events, "rewritten": restart, "replayed": res.replayed,
           "source": (live.row(skey) or {}).get("source") or "", "seen": seen,
           "problems": problems + [f"{w['file']}:{w['line']}: {w['message']}"
                                   for w in res.warnings]}
    if defer and not is_agent_file(path):
        out["subagents"] = flush_deferred(live, out["source"], only_linked=True)
    return out


def flush_deferred(live: LiveImporter, source: str, only_linked: bool = False) -> list[dict]:
    """Capture the subagent transcripts queued under `source` (see capture's `defer`): with
    `only_linked`, those whose spawning call the store now holds; else all (SessionEnd: a
    call that never came must not keep a subagent out of the store)."""
    out = []
    for p in live.deferred(source):
        if not Path(p).exists():
            live.undefer(source, p)
            continue
        if only_linked:
            head = _head_of(v for _t, v in read_lines(Path(p), 0)[0][:HEAD_LINES])
            agent = head["agent"] or Path(p).stem[len("agent-"):]
            if not live.spawn_known(source, agent, head["prompt"]):
                continue
        live.undefer(source, p)
        out.append(capture(live, Path(p)))
    return out


def parse_entries(entries: Iterable[Any]) -> list[Line]:
    """SDK entries (JSON values) as (text, value) lines; a non-object is kept as raw text."""
    out: list[Line] = []
    for e in entries:
        text = json.dumps(e, ensure_ascii=False, separators=(",", ":"))
        out.append((text, e if isinstance(e, dict) else MALFORMED))
    return out


__all__ = ["AppendResult", "LiveImporter", "LiveState", "Line", "capture", "capture_lock",
           "flush_deferred", "parse_entries", "read_lines", "FMT"]
