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
from typing import NamedTuple

import blake3

from .. import codec
from ..errors import CorruptObject, CtxError, IOFailure, LockHeld, Unsupported
from ..refs import SESSIONS_PREFIX
from ..refs.names import split_branch_ref
from .documents import Document, event_document, memory_document
from .hits import HIT_TYPES

Progress = Callable[[str, int, int], None]

SCHEMA_VERSION = "4"
INDEX_DIR = Path("cache") / "search"
INDEX_FILE = "index.sqlite"
_MEMORY_PREFIX = "refs/memory/"

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE covered(ref TEXT PRIMARY KEY, tip TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE names(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE sessions(sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, harness TEXT NOT NULL,
                      cwd TEXT NOT NULL);
CREATE TABLE branches(bid INTEGER PRIMARY KEY, sid INTEGER NOT NULL, name TEXT NOT NULL,
                      UNIQUE(sid, name));
CREATE TABLE docs(rowid INTEGER PRIMARY KEY, key INTEGER NOT NULL, sid INTEGER,
                  kind INTEGER NOT NULL, etype INTEGER NOT NULL, ts INTEGER NOT NULL,
                  tool INTEGER, src INTEGER, src_line INTEGER, texted INTEGER NOT NULL);
CREATE UNIQUE INDEX docs_key ON docs(key);
CREATE TABLE member(doc INTEGER NOT NULL, bid INTEGER NOT NULL, PRIMARY KEY(doc, bid))
    WITHOUT ROWID;
CREATE TABLE files(path TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(path, doc))
    WITHOUT ROWID;
CREATE INDEX files_doc ON files(doc);
CREATE TABLE replaced(key INTEGER NOT NULL, cdoc INTEGER NOT NULL, cid BLOB NOT NULL,
                      PRIMARY KEY(key, cdoc)) WITHOUT ROWID;
CREATE INDEX replaced_cdoc ON replaced(cdoc);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize='porter unicode61 remove_diacritics 2');
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


def _covered_digest(con: sqlite3.Connection) -> str:
    """A digest of the covered ref tips (read at each catch-up, where they are used)."""
    row = con.execute("SELECT group_concat(ref || ' ' || tip, char(10)) FROM "
                      "(SELECT ref, tip FROM covered ORDER BY ref)").fetchone()
    return blake3.blake3((row[0] or "").encode()).hexdigest()


def _checksum(con: sqlite3.Connection) -> str:
    """The checksum opening verifies: over the schema, the store and the covered point."""
    h = blake3.blake3()
    for key in ("schema", "store", "op_head", "covered"):
        h.update(f"{key}={_meta(con, key)}\n".encode())
    return h.hexdigest()


class _Stale(Exception):
    """The covered ref tips do not match their recorded digest."""


def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _set_meta(con: sqlite3.Connection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def connect(path: Path, *, create: bool = False) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    if create:  # before anything is written: pages a catch-up frees go back at its end
        con.execute("PRAGMA auto_vacuum=INCREMENTAL")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA journal_size_limit=8388608")  # a rebuild's WAL does not stay behind
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
    con = connect(path, create=True)
    con.executescript(_SCHEMA)
    con.execute("BEGIN IMMEDIATE")
    _set_meta(con, "schema", SCHEMA_VERSION)
    _set_meta(con, "store", store_identity(repo))
    _set_meta(con, "op_head", "")
    _set_meta(con, "covered", _covered_digest(con))
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IOFailure(f"{path.parent}: cannot create the search index's folder "
                        f"({exc.strerror})", path=str(path.parent)) from None
    if not os.access(path.parent, os.W_OK):
        raise IOFailure(f"{path.parent}: the search index's folder is not writable",
                        path=str(path.parent))
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
        try:
            return _catch_up(repo, con, progress, why)
        except (sqlite3.DatabaseError, _Stale) as exc:
            if "locked" in str(exc):  # a lock held past the timeout is no damage
                raise LockHeld(f"{index_path(repo)}: another process has been writing the "
                               f"search index for a minute (a first build of a large store "
                               f"takes that long); try again when it is done") from None
            if why:
                raise
            con.close()
            con, why = open_index(repo, rebuild=(
                "its checksum does not match what it covers" if isinstance(exc, _Stale)
                else f"SQLite reports it damaged ({exc})"))
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
        if _covered_digest(con) != _meta(con, "covered"):
            raise _Stale()
        head = repo.refs.read_op_head() or ""  # before the refs: never record a newer head
        new = current_refs(repo)
        writer = _Writer(repo, con, progress)
        old = dict(con.execute("SELECT ref, tip FROM covered"))
        writer.apply(old, new)
        con.executemany("DELETE FROM covered WHERE ref = ?", [(r,) for r in old if r not in new])
        con.executemany("INSERT OR REPLACE INTO covered(ref, tip) VALUES (?, ?)",
                        sorted((r, t) for r, t in new.items() if old.get(r) != t))
        _set_meta(con, "op_head", head)
        _set_meta(con, "covered", _covered_digest(con))
        _set_meta(con, "checksum", _checksum(con))
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    # a build writes its indexes in hash order, leaving pages part full: repack them (about
    # 7% of a build's time, 6% of its size); a catch-up only gives back the pages it freed
    con.execute("VACUUM" if why else "PRAGMA incremental_vacuum")
    return IndexStatus(path, writer.added, writer.removed, writer.memories, rebuilt=why)


class RawEvent(NamedTuple):
    """The fields of a stored event that indexing reads (documents.py takes it or an Event)."""

    type: str
    payload: dict
    parents: tuple[str, ...]
    ts: str
    causality: dict


def doc_key(oid: str) -> int:
    """How the index names an object: the first 64 bits of its id, as a signed integer (the
    whole id is 32 bytes a row; the store finds it again from this prefix). Two of a store's
    objects sharing them is as likely as a 64-bit hash collision among its events; should it
    happen, indexing stops with an error rather than confuse them."""
    return int.from_bytes(bytes.fromhex(oid[:16]), "big", signed=True)


def key_prefix(key: int) -> str:
    return (key & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "big").hex()


def full_id(repo, key: int) -> str:
    """The object a key names (the store's one id with that 16-digit prefix)."""
    ids = sorted(repo.objects.ids_with_prefix(key_prefix(key)))
    if len(ids) != 1:
        raise Unsupported(f"the search index names object {key_prefix(key)}, which is "
                          f"{'not in the store' if not ids else 'ambiguous'}: run "
                          f"`ctx search --reindex`")
    return ids[0]


class _Writer:
    """The rows one catch-up adds and removes, inside the caller's SQLite transaction.

    Rows are buffered and written with executemany after each branch walk; a session first
    seen in this catch-up cannot share events with the index, so its walk asks SQLite
    nothing (what import speed depends on)."""

    def __init__(self, repo, con: sqlite3.Connection, progress: Progress | None) -> None:
        self.repo, self.con, self.progress = repo, con, progress
        self.added = self.removed = self.memories = 0
        self._sessions: dict[str, tuple[int, str, bool]] = {}
        self._names: dict[str, int] = {}
        self._known: dict[int, int] = {}  # key -> row of the docs added by this catch-up
        self._held: dict[int, set[int]] = {}  # bid -> keys this catch-up made members
        self._next = (con.execute("SELECT max(rowid) FROM docs").fetchone()[0] or 0) + 1
        self._rows: dict[str, list[tuple]] = {k: [] for k in _INSERTS}

    # -- refs ----------------------------------------------------------------------------------
    def apply(self, old: dict[str, str], new: dict[str, str]) -> None:
        memories_moved = False
        shrunk: set[int] = set()  # docs of branches that moved other than forward
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
            sid, _harness, _fresh = self._session(parts[0])
            bid = self._branch(sid, parts[1])
            if before is not None and (after is None or not self._forward(before, after)):
                self._flush()
                shrunk.update(d for (d,) in self.con.execute(
                    "SELECT doc FROM member WHERE bid = ?", (bid,)))
                self.con.execute("DELETE FROM member WHERE bid = ?", (bid,))
                self._held.pop(bid, None)
            if after is not None:
                self._walk(parts[0], bid, after)
            else:
                self.con.execute("DELETE FROM branches WHERE bid = ?", (bid,))
        self._drop_unreached(shrunk)
        self.con.execute("DELETE FROM sessions WHERE NOT EXISTS "
                         "(SELECT 1 FROM branches b WHERE b.sid = sessions.sid)")
        if memories_moved:
            self._memories()

    def _forward(self, before: str, after: str) -> bool:
        try:
            return self.repo.graph.is_ancestor(before, after)
        except CtxError:
            return False  # the old tip is gone (gc): re-walk the branch

    def _session(self, session_id: str) -> tuple[int, str, bool]:
        """(row id, harness, whether this catch-up created the row)."""
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
            got = (cur.lastrowid, harness, True)
        else:
            got = (row[0], row[1], False)
        self._sessions[session_id] = got
        return got

    def _branch(self, sid: int, name: str) -> int:
        row = self.con.execute("SELECT bid FROM branches WHERE sid = ? AND name = ?",
                               (sid, name)).fetchone()
        if row is not None:
            return row[0]
        return self.con.execute("INSERT INTO branches(sid, name) VALUES (?, ?)",
                                (sid, name)).lastrowid

    def _name(self, text: str) -> int | None:
        if not text:
            return None
        got = self._names.get(text)
        if got is None:
            con = self.con
            row = con.execute("SELECT id FROM names WHERE text = ?", (text,)).fetchone()
            got = row[0] if row else con.execute("INSERT INTO names(text) VALUES (?)",
                                                 (text,)).lastrowid
            self._names[text] = got
        return got

    # -- events --------------------------------------------------------------------------------
    def _walk(self, session_id: str, bid: int, tip: str) -> None:
        """Every event reachable from TIP that this branch does not hold yet: down to the first
        one it holds (its ancestors are held too)."""
        con = self.con
        sid, harness, fresh = self._session(session_id)
        held = self._held.setdefault(bid, set())
        stack, seen = [tip], set()
        while stack:
            eid = stack.pop()
            if eid in seen:
                continue
            seen.add(eid)
            key = doc_key(eid)
            if key in held:
                continue
            doc = self._known.get(key)
            if not fresh and doc is None:
                row = con.execute("SELECT rowid FROM docs WHERE key = ?", (key,)).fetchone()
                doc = row[0] if row else None
                if doc is not None and con.execute(
                        "SELECT 1 FROM member WHERE doc = ? AND bid = ?", (doc, bid)).fetchone():
                    continue
            ev = self._event(eid)
            if doc is None:
                doc = self._add_event(key, ev, sid, harness)
            self._rows["member"].append((doc, bid))
            held.add(key)
            stack.extend(ev.parents)
        self._flush()

    def _event(self, eid: str) -> RawEvent:
        """An event as its stored fields, not frozen into an Event (a third of the cost of
        indexing an import)."""
        kind, body = self.repo.objects.get_raw(eid)
        if kind != "event":
            raise CorruptObject(f"object {eid[:12]} is a {kind}, not the event a parent names")
        d = codec.unpack_value(body)
        return RawEvent(d["type"], d.get("payload") or {}, tuple(d.get("parents") or ()),
                        d.get("ts") or "", d.get("causality") or {})

    def _add_event(self, key: int, ev, sid: int, harness: str) -> int:
        d = event_document(self.repo, ev, harness)
        doc = self._add(key, sid, d, ev.type, _ms(ev.ts))
        self.added += 1
        if self.progress is not None and self.added % 5000 == 0:
            self.progress("index", self.added, 0)
        return doc

    def _add(self, key: int, sid: int | None, d: Document, etype: str, ts: int) -> int:
        rows = self._rows
        doc, self._next = self._next, self._next + 1
        texted = 1 if d.text.strip() else 0
        rows["docs"].append((doc, key, sid, _KINDS[d.kind], self._name(etype), ts,
                             self._name(d.tool), self._name(d.source_file),
                             d.source_line or None, texted))
        self._known[key] = doc
        if texted:
            rows["fts"].append((doc, d.text))
        rows["files"].extend((p, doc) for p in d.files)
        if d.compaction:
            cid = bytes.fromhex(d.compaction)
            rows["replaced"].extend((doc_key(e), doc, cid) for e in d.replaces)
        return doc

    def _flush(self) -> None:
        try:
            for table, sql in _INSERTS.items():
                if self._rows[table]:
                    self.con.executemany(sql, self._rows[table])
                    self._rows[table].clear()
        except sqlite3.IntegrityError as exc:
            raise Unsupported(f"two objects of this store share the first 64 bits of their "
                              f"ids; `ctx search` cannot index both ({exc})") from None

    def _delete(self, doc: int, key: int, text: str) -> None:
        """Remove one row; a contentless FTS5 row is removed by giving its text again."""
        con = self.con
        if text.strip():
            con.execute("INSERT INTO fts(fts, rowid, body) VALUES ('delete', ?, ?)", (doc, text))
        for table, col in (("docs", "rowid"), ("member", "doc"), ("files", "doc"),
                           ("replaced", "cdoc")):
            con.execute(f"DELETE FROM {table} WHERE {col} = ?", (doc,))  # noqa: S608 (fixed names)
        self._known.pop(key, None)

    def _drop_unreached(self, docs: set[int]) -> None:
        """Remove those of DOCS no branch reaches any more."""
        self._flush()
        con = self.con
        for doc in sorted(docs):
            row = con.execute(
                "SELECT d.key, s.harness FROM docs d JOIN sessions s ON s.sid = d.sid "
                "WHERE d.rowid = ? AND NOT EXISTS (SELECT 1 FROM member m WHERE m.doc = d.rowid)",
                (doc,)).fetchone()
            if row is None:
                continue
            ev = self._event(full_id(self.repo, row[0]))
            self._delete(doc, row[0], event_document(self.repo, ev, row[1], effects=False).text)
            self.removed += 1

    # -- memories ------------------------------------------------------------------------------
    def _memories(self) -> None:
        """Memories are few: any move of a memory ref replaces them all with the live ones."""
        from ..memory.log import live_memories
        from ..objects.memory import Memory

        store = self.repo.objects
        for doc, key in self.con.execute(
                "SELECT rowid, key FROM docs WHERE sid IS NULL").fetchall():
            mem = store.get_typed(full_id(self.repo, key), Memory)
            self._delete(doc, key, memory_document(mem).text)
        for rec in live_memories(self.repo):
            ts = _ms(rec.memory.updated or rec.memory.created)
            self._add(doc_key(rec.id), None, memory_document(rec.memory), "Memory", ts)
            self.memories += 1
        self._flush()


_KINDS = {k: i for i, k in enumerate(HIT_TYPES)}
_INSERTS = {
    "docs": "INSERT INTO docs(rowid, key, sid, kind, etype, ts, tool, src, src_line, texted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "fts": "INSERT INTO fts(rowid, body) VALUES (?, ?)",
    "member": "INSERT INTO member(doc, bid) VALUES (?, ?)",
    "files": "INSERT OR IGNORE INTO files(path, doc) VALUES (?, ?)",
    "replaced": "INSERT OR IGNORE INTO replaced(key, cdoc, cid) VALUES (?, ?, ?)",
}


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
        oid = {d: key_prefix(k) for d, k in con.execute("SELECT rowid, key FROM docs")}
        con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, "
                    "'instance')")
        q = con.execute
        return {
            "covered": dict(q("SELECT ref, tip FROM covered")),
            "op_head": _meta(con, "op_head"),
            "sessions": sorted(q("SELECT id, harness, cwd FROM sessions")),
            "docs": sorted((key_prefix(r[0]), *r[1:]) for r in q(
                "SELECT d.key, s.id, d.kind, e.text, d.ts, t.text, f.text, d.src_line, d.texted "
                "FROM docs d LEFT JOIN sessions s ON s.sid = d.sid "
                "LEFT JOIN names e ON e.id = d.etype LEFT JOIN names t ON t.id = d.tool "
                "LEFT JOIN names f ON f.id = d.src")),
            "member": sorted((oid[d], s, b) for d, s, b in q(
                "SELECT m.doc, s.id, b.name FROM member m JOIN branches b ON b.bid = m.bid "
                "JOIN sessions s ON s.sid = b.sid")),
            "files": sorted((p, oid[d]) for p, d in q("SELECT path, doc FROM files")),
            "replaced": sorted((key_prefix(k), oid[c], cid.hex()) for k, c, cid in q(
                "SELECT key, cdoc, cid FROM replaced")),
            "terms": sorted((t, oid[d], off) for t, d, off in q(
                "SELECT term, doc, offset FROM temp.vocab")),
        }
    finally:
        con.close()
