"""The search index: SQLite FTS5 under `.ctx/cache/search/index.sqlite`, derived from the
refs and never trusted over them (docs/search.md).

What it covers is recorded in the index itself, in the same SQLite transaction as the rows:
the operation-log head and the tip of every `refs/sessions/*` and `refs/memory/*` ref it
indexed. `catch_up` compares those with the store: an unchanged op head costs one file read;
otherwise each moved ref is walked from its new tip down to what the index already holds for
that branch (a fast-forward reads only the new events), and a ref that moved anywhere else
(reset, undo, session rm) has its branch re-walked and the events no branch reaches removed.
The refs are read after the op head, so a writer that commits meanwhile leaves the index
behind (caught up next time), never ahead of the store; a process killed mid catch-up leaves
SQLite's previous transaction, which is behind too.

The index is rebuilt from scratch — never patched — when its schema version, the identity of
the store it was built for or the checksum of what it claims to cover do not match, or when
SQLite reports it damaged.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import blake3

from ..errors import CtxError, Unsupported
from ..refs import SESSIONS_PREFIX
from ..refs.names import split_branch_ref
from .documents import Document, event_document, memory_document

Progress = Callable[[str, int, int], None]

SCHEMA_VERSION = "1"
INDEX_DIR = Path("cache") / "search"
INDEX_FILE = "index.sqlite"
_MEMORY_PREFIX = "refs/memory/"

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE covered(ref TEXT PRIMARY KEY, tip TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE sessions(sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, harness TEXT NOT NULL,
                      cwd TEXT NOT NULL);
CREATE TABLE branches(bid INTEGER PRIMARY KEY, sid INTEGER NOT NULL, name TEXT NOT NULL,
                      UNIQUE(sid, name));
CREATE TABLE docs(rowid INTEGER PRIMARY KEY, oid BLOB NOT NULL UNIQUE, sid INTEGER,
                  kind TEXT NOT NULL, etype TEXT NOT NULL, ts INTEGER NOT NULL, tool TEXT,
                  src_file TEXT, src_line INTEGER, texted INTEGER NOT NULL);
CREATE TABLE member(doc INTEGER NOT NULL, bid INTEGER NOT NULL, PRIMARY KEY(doc, bid))
    WITHOUT ROWID;
CREATE TABLE files(path TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(path, doc))
    WITHOUT ROWID;
CREATE INDEX files_doc ON files(doc);
CREATE TABLE replaced(oid BLOB NOT NULL, cdoc INTEGER NOT NULL, cid BLOB NOT NULL,
                      PRIMARY KEY(oid, cdoc)) WITHOUT ROWID;
CREATE INDEX replaced_cdoc ON replaced(cdoc);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize='unicode61 remove_diacritics 2');
"""


class SearchUnavailable(Unsupported):
    """This Python's SQLite was built without FTS5: `ctx search` cannot index."""


@dataclass(frozen=True)
class IndexStatus:
    """What a catch-up did: `rebuilt` names why the index was started afresh (or is "")."""

    path: str
    events_added: int
    events_removed: int
    memories: int
    rebuilt: str = ""
    up_to_date: bool = False

    def to_dict(self) -> dict:
        return {"path": self.path, "events_added": self.events_added,
                "events_removed": self.events_removed, "memories": self.memories,
                "rebuilt": self.rebuilt, "up_to_date": self.up_to_date}


def fts5_available() -> bool:
    """Whether this Python's sqlite3 has FTS5 compiled in (the CPython builds of python.org,
    Debian and Homebrew do; some minimal builds do not)."""
    try:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        finally:
            con.close()
    except sqlite3.OperationalError:
        return False
    return True


def index_path(repo) -> Path:
    if repo.path is None:
        raise Unsupported("ctx search needs a store on disk (its index lives in .ctx/cache/)")
    return Path(repo.path) / INDEX_DIR / INDEX_FILE


def store_identity(repo) -> str:
    """Which store an index was built for: the store's directory and the identity of its
    objects folder (a copied or re-created store is another store)."""
    objects = Path(repo.path) / "objects"
    st = objects.stat()
    return f"{Path(repo.path).resolve()}:{st.st_dev}:{st.st_ino}"


def current_refs(repo) -> dict[str, str]:
    out = dict(repo.refs.iter_refs(SESSIONS_PREFIX))
    out.update(repo.refs.iter_refs(_MEMORY_PREFIX))
    return out


def _checksum(con: sqlite3.Connection) -> str:
    h = blake3.blake3()
    for key in ("schema", "store", "op_head"):
        h.update(f"{key}={_meta(con, key)}\n".encode())
    row = con.execute("SELECT group_concat(ref || ' ' || tip, char(10)) FROM "
                      "(SELECT ref, tip FROM covered ORDER BY ref)").fetchone()
    h.update((row[0] or "").encode())
    return h.hexdigest()


def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _set_meta(con: sqlite3.Connection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


def _why_stale(repo, con: sqlite3.Connection) -> str:
    """'' when the index is what it says it is, else why it must be rebuilt."""
    try:
        if _meta(con, "schema") != SCHEMA_VERSION:
            return "its schema version differs"
        if _meta(con, "store") != store_identity(repo):
            return "it was built for another store"
        if _meta(con, "checksum") != _checksum(con):
            return "its checksum does not match what it covers"
    except sqlite3.DatabaseError as exc:
        return f"SQLite reports it damaged ({exc})"
    return ""


def _create(repo, path: Path) -> sqlite3.Connection:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    con = connect(path)
    con.executescript(_SCHEMA)
    con.execute("BEGIN IMMEDIATE")
    _set_meta(con, "schema", SCHEMA_VERSION)
    _set_meta(con, "store", store_identity(repo))
    _set_meta(con, "op_head", "")
    _set_meta(con, "checksum", _checksum(con))
    con.execute("COMMIT")
    return con


def open_index(repo, *, rebuild: str = "") -> tuple[sqlite3.Connection, str]:
    """The index connection, and why it was created afresh ('' if it was not)."""
    if not fts5_available():
        raise SearchUnavailable(
            "this Python's SQLite has no FTS5, so `ctx search` cannot build its index; "
            "`ctx grep --all PATTERN` scans every session instead (docs/search.md)")
    path = index_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    why = rebuild
    if not why and not path.exists():
        why = "there was none"
    if not why:
        try:
            con = connect(path)
        except sqlite3.DatabaseError as exc:
            why = f"SQLite cannot open it ({exc})"
        else:
            why = _why_stale(repo, con)
            if not why:
                return con, ""
            con.close()
    return _create(repo, path), why


def catch_up(repo, progress: Progress | None = None, *, rebuild: str = "") -> IndexStatus:
    """Bring the index up to the store's committed refs (building it if it is missing or not
    to be trusted). Cheap when nothing moved: one read of the op head."""
    con, why = open_index(repo, rebuild=rebuild)
    try:
        return _catch_up(repo, con, progress, why)
    except sqlite3.DatabaseError as exc:
        con.close()
        if why:
            raise
        con, why = open_index(repo, rebuild=f"SQLite reports it damaged ({exc})")
        return _catch_up(repo, con, progress, why)
    finally:
        con.close()


def reindex(repo, progress: Progress | None = None) -> IndexStatus:
    """Throw the index away and build it again from the refs (`ctx search --reindex`)."""
    return catch_up(repo, progress, rebuild="--reindex asked for it")


def _catch_up(repo, con: sqlite3.Connection, progress: Progress | None, why: str) -> IndexStatus:
    path = str(index_path(repo))
    head = repo.refs.read_op_head() or ""
    if not why and head and _meta(con, "op_head") == head:
        return IndexStatus(path, 0, 0, 0, up_to_date=True)
    con.execute("BEGIN IMMEDIATE")
    try:
        if not why and head and _meta(con, "op_head") == head:  # another process caught up
            con.execute("ROLLBACK")
            return IndexStatus(path, 0, 0, 0, up_to_date=True)
        head = repo.refs.read_op_head() or ""  # before the refs: never record a newer head
        new = current_refs(repo)
        writer = _Writer(repo, con, progress)
        writer.apply(dict(con.execute("SELECT ref, tip FROM covered")), new)
        con.execute("DELETE FROM covered")
        con.executemany("INSERT INTO covered(ref, tip) VALUES (?, ?)", sorted(new.items()))
        _set_meta(con, "op_head", head)
        _set_meta(con, "checksum", _checksum(con))
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    return IndexStatus(path, writer.added, writer.removed, writer.memories, rebuilt=why)


class _Writer:
    """The rows one catch-up adds and removes, inside the caller's SQLite transaction."""

    def __init__(self, repo, con: sqlite3.Connection, progress: Progress | None) -> None:
        self.repo, self.con, self.progress = repo, con, progress
        self.added = self.removed = self.memories = 0
        self._sessions: dict[str, tuple[int, str]] = {}

    # -- refs ----------------------------------------------------------------------------------
    def apply(self, old: dict[str, str], new: dict[str, str]) -> None:
        memories_moved = False
        shrunk: set[int] = set()  # sessions where a branch moved other than forward
        for ref in sorted(set(old) | set(new)):
            before, after = old.get(ref), new.get(ref)
            if before == after:
                continue
            if ref.startswith(_MEMORY_PREFIX):
                memories_moved = True
                continue
            parts = split_branch_ref(ref)
            if not parts:
                continue
            sid, _harness = self._session(parts[0])
            bid = self._branch(sid, parts[1])
            if before is not None and (after is None or not self._forward(before, after)):
                self.con.execute("DELETE FROM member WHERE bid = ?", (bid,))
                shrunk.add(sid)
            if after is not None:
                self._walk(parts[0], bid, after)
            else:
                self.con.execute("DELETE FROM branches WHERE bid = ?", (bid,))
        for sid in sorted(shrunk):
            self._drop_unreached(sid)
        self.con.execute("DELETE FROM sessions WHERE NOT EXISTS "
                         "(SELECT 1 FROM branches b WHERE b.sid = sessions.sid)")
        self._sessions.clear()
        if memories_moved:
            self._memories()

    def _forward(self, before: str, after: str) -> bool:
        try:
            return self.repo.graph.is_ancestor(before, after)
        except CtxError:
            return False  # the old tip is gone (gc): re-walk the branch

    def _session(self, session_id: str) -> tuple[int, str]:
        got = self._sessions.get(session_id)
        if got is not None:
            return got
        row = self.con.execute("SELECT sid, harness FROM sessions WHERE id = ?",
                               (session_id,)).fetchone()
        if row is None:
            sess = self.repo.session(session_id)
            harness = str(sess.origin.get("format") or "ctx")
            cur = self.con.execute("INSERT INTO sessions(id, harness, cwd) VALUES (?, ?, ?)",
                                   (session_id, harness, sess.cwd or ""))
            row = (cur.lastrowid, harness)
        self._sessions[session_id] = (row[0], row[1])
        return row[0], row[1]

    def _branch(self, sid: int, name: str) -> int:
        row = self.con.execute("SELECT bid FROM branches WHERE sid = ? AND name = ?",
                               (sid, name)).fetchone()
        if row is not None:
            return row[0]
        return self.con.execute("INSERT INTO branches(sid, name) VALUES (?, ?)",
                                (sid, name)).lastrowid

    # -- events --------------------------------------------------------------------------------
    def _walk(self, session_id: str, bid: int, tip: str) -> None:
        """Every event reachable from TIP that this branch does not hold yet: down to the first
        one it holds (its ancestors are held too)."""
        con, graph = self.con, self.repo.graph
        sid, harness = self._session(session_id)
        stack, seen = [tip], set()
        while stack:
            eid = stack.pop()
            if eid in seen:
                continue
            seen.add(eid)
            oid = bytes.fromhex(eid)
            row = con.execute("SELECT rowid FROM docs WHERE oid = ?", (oid,)).fetchone()
            if row is not None and con.execute("SELECT 1 FROM member WHERE doc = ? AND bid = ?",
                                               (row[0], bid)).fetchone():
                continue
            ev = graph.event(eid)
            doc = row[0] if row is not None else self._add_event(eid, ev, sid, harness)
            con.execute("INSERT INTO member(doc, bid) VALUES (?, ?)", (doc, bid))
            stack.extend(ev.parents)

    def _add_event(self, eid: str, ev, sid: int, harness: str) -> int:
        d = event_document(self.repo, ev, harness)
        doc = self._insert(bytes.fromhex(eid), sid, d, ev.type, _ms(ev.ts))
        self.added += 1
        if self.progress is not None and self.added % 5000 == 0:
            self.progress("index", self.added, 0)
        return doc

    def _insert(self, oid: bytes, sid: int | None, d: Document, etype: str, ts: int) -> int:
        con = self.con
        texted = 1 if d.text.strip() else 0
        doc = con.execute(
            "INSERT INTO docs(oid, sid, kind, etype, ts, tool, src_file, src_line, texted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (oid, sid, d.kind, etype, ts, d.tool or None, d.source_file or None,
             d.source_line or None, texted)).lastrowid
        if texted:
            con.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (doc, d.text))
        con.executemany("INSERT OR IGNORE INTO files(path, doc) VALUES (?, ?)",
                        [(p, doc) for p in d.files])
        if d.compaction:
            cid = bytes.fromhex(d.compaction)
            con.executemany("INSERT OR IGNORE INTO replaced(oid, cdoc, cid) VALUES (?, ?, ?)",
                            [(bytes.fromhex(e), doc, cid) for e in d.replaces])
        return doc

    def _delete(self, doc: int, text: str) -> None:
        """Remove one row; a contentless FTS5 row is removed by giving its text again."""
        con = self.con
        if text.strip():
            con.execute("INSERT INTO fts(fts, rowid, body) VALUES ('delete', ?, ?)", (doc, text))
        for table, col in (("docs", "rowid"), ("member", "doc"), ("files", "doc"),
                           ("replaced", "cdoc")):
            con.execute(f"DELETE FROM {table} WHERE {col} = ?", (doc,))  # noqa: S608 (fixed names)

    def _drop_unreached(self, sid: int) -> None:
        rows = self.con.execute(
            "SELECT d.rowid, d.oid, s.harness FROM docs d JOIN sessions s ON s.sid = d.sid "
            "WHERE d.sid = ? AND NOT EXISTS (SELECT 1 FROM member m WHERE m.doc = d.rowid)",
            (sid,)).fetchall()
        for doc, oid, harness in rows:
            ev = self.repo.graph.event(oid.hex())
            self._delete(doc, event_document(self.repo, ev, harness, effects=False).text)
            self.removed += 1

    # -- memories ------------------------------------------------------------------------------
    def _memories(self) -> None:
        """Memories are few: any move of a memory ref replaces them all with the live ones."""
        from ..memory.log import live_memories
        from ..objects.memory import Memory

        store = self.repo.objects
        for doc, oid in self.con.execute(
                "SELECT rowid, oid FROM docs WHERE kind = 'memory' AND sid IS NULL").fetchall():
            self._delete(doc, memory_document(store.get_typed(oid.hex(), Memory)).text)
        for rec in live_memories(self.repo):
            ts = _ms(rec.memory.updated or rec.memory.created)
            self._insert(bytes.fromhex(rec.id), None, memory_document(rec.memory), "Memory", ts)
            self.memories += 1


def _ms(text: str) -> int:
    """Milliseconds since the epoch of a stored ISO time (0 when it is not one)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return 0
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def index_size(repo) -> int:
    """Bytes the index takes on disk (the database and its write-ahead log)."""
    path = index_path(repo)
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.exists(p))



def snapshot(repo) -> dict[str, object]:
    """Everything the index holds, named by object ids instead of row ids: two indexes of
    the same store are equal exactly when their snapshots are (the tests compare a caught-up
    index with a fresh --reindex this way)."""
    con = connect(index_path(repo))
    try:
        oid = dict(con.execute("SELECT rowid, oid FROM docs"))
        con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, "
                    "'instance')")
        q = con.execute
        return {
            "covered": dict(q("SELECT ref, tip FROM covered")),
            "op_head": _meta(con, "op_head"),
            "sessions": sorted(q("SELECT id, harness, cwd FROM sessions")),
            "docs": sorted((r[0].hex(), *r[1:]) for r in q(
                "SELECT d.oid, s.id, d.kind, d.etype, d.ts, d.tool, d.src_file, d.src_line, "
                "d.texted FROM docs d LEFT JOIN sessions s ON s.sid = d.sid")),
            "member": sorted((r[0].hex(), r[1], r[2]) for r in q(
                "SELECT d.oid, s.id, b.name FROM member m JOIN docs d ON d.rowid = m.doc "
                "JOIN branches b ON b.bid = m.bid JOIN sessions s ON s.sid = b.sid")),
            "files": sorted((p, oid[d].hex()) for p, d in q("SELECT path, doc FROM files")),
            "replaced": sorted((o.hex(), oid[d].hex(), c.hex()) for o, d, c in q(
                "SELECT oid, cdoc, cid FROM replaced")),
            "terms": sorted((t, oid[d].hex(), off) for t, d, off in q(
                "SELECT term, doc, offset FROM temp.vocab")),
        }
    finally:
        con.close()
