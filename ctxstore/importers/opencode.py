"""OpenCode sessions (sst/opencode): the SQLite database, the older JSON storage tree, exports.

OpenCode keeps its data in `$XDG_DATA_HOME/opencode` (else `~/.local/share/opencode`):

- current versions: `opencode.db` (`opencode-<channel>.db` for other release channels,
  `$OPENCODE_DB` overrides), tables `session` (one row per session, `parent_id` for a child
  session started by the `task` tool), `message` and `part` (`data`: the message info or part as
  JSON, without the ids kept in their own columns). Read with the standard library, read-only
  (`mode=ro`), with a short busy timeout: a database OpenCode holds locked is reported
  (LockHeld), never waited for; `immutable=1` is used only when a read-only open fails and no
  write-ahead log exists beside the file.
- older versions: the storage tree `storage/session/<project>/<session>.json`,
  `storage/message/<session>/<message>.json`, `storage/part/<message>/<part>.json` (or the flat
  `part/<part>.json` naming its `messageID`). The tree's folder is one session unit that can
  hold many sessions. Files are found by listing folders, never by a path built from the data,
  and a symlink is never followed (it is skipped with a warning).
- `opencode export` documents `{info: <session>, messages: [{info, parts}]}`.

Each source record (a file, a row, a message of an export document) is kept whole; `export`
gives back an `opencode export` document for every source (what `opencode import` reads):
JSON-equal to an imported export document; assembled from the files of a storage tree (each
file JSON-equal) or from the rows of a database (message info = `{...data, id, sessionID}`,
part = `{...data, id, sessionID, messageID}`, session info built from the row as OpenCode's
`fromRow` does). docs/harnesses/opencode.md has the record -> event table.

`payload.source.line` of a storage or database record is `crc32(session id) << 24` plus its
place in the session (1 the session, then each message followed by its parts, in OpenCode's
order), so that lines are unique in a unit holding many sessions and do not move when other
sessions are added; an export document's are 0 (the document without `messages`) and i for
message i.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .. import jsonparse
from ..errors import InvalidInput
from ..objects import TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from .common import ImportContext, SessionBuilder, as_str, preview, tool_requested_payload
from .sqlitesource import connect_read_only, db_error, is_locked

FMT = "opencode"
LABEL = "OpenCode"

SQLITE_MAGIC = b"SQLite format 3\x00"
DB_TABLES = frozenset({"session", "message", "part"})
BUSY_TIMEOUT = 0.5  # seconds a read waits for a lock OpenCode holds before giving up
LINE_BITS = 24
_DB_NAME = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
_EXPORT_HEAD = re.compile(r'^\s*\{\s*"(?:info|messages)"\s*:')
_DEFAULT_TITLE = re.compile(r"^(?:New session - |Child session - )\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
#: Part types that are bookkeeping, and the fields of each kept in the event payload.
BOOKKEEPING = {"step-start": (), "snapshot": (), "patch": ("hash",), "file": ("mime", "filename"),
               "agent": ("name",), "subtask": ("agent", "description", "command"),
               "retry": ("attempt",), "compaction": ("auto", "overflow", "tail_start_id")}
TOOL_STATUSES = frozenset({"pending", "running", "completed", "error"})
#: The key a storage message file that is not a JSON object is kept under (its text).
UNPARSED_MESSAGE = "opencode_unparsed_message_file"
SESSION_JSON_COLUMNS = frozenset({"summary_diffs", "revert", "permission", "model", "goal",
                                  "metadata"})


# ---------------------------------------------------------------------------------------------
# The harness surface


def sniff(path: Path) -> bool:
    """A storage tree folder, an OpenCode database or an `opencode export` document."""
    try:
        if path.is_symlink():
            return False
        if path.is_dir():
            return is_storage_root(path)
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if head.startswith(SQLITE_MAGIC):
        return bool(_DB_NAME.match(path.name)) or _has_tables(path)
    return _looks_like_export(head)


def _looks_like_export(head: bytes) -> bool:
    text = head.decode("utf-8", "ignore").lstrip("\ufeff")
    return bool(_EXPORT_HEAD.match(text)) and ('"projectID"' in text or '"sessionID"' in text)


def _has_tables(path: Path) -> bool:
    try:
        con = connect_read_only(path, timeout=0.2)
    except (sqlite3.Error, OSError):
        return False
    try:
        return DB_TABLES <= _tables(con)
    except sqlite3.Error:
        return False
    finally:
        con.close()


def _scan(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def is_storage_root(path: Path) -> bool:
    """`session/<project>/*.json` beside `message/` or `part/` (real folders, not symlinks)."""
    names = {e.name: e for e in _scan(path) if _is_dir(e)}
    if "session" not in names or not ({"message", "part"} & set(names)):
        return False
    for project in _scan(Path(names["session"].path)):
        if _is_dir(project) and any(_is_file(e) and e.name.endswith(".json")
                                    for e in _scan(Path(project.path))):
            return True
    return False


def session_units(root: Path) -> list[Path]:
    """Storage trees (taken whole), OpenCode databases and export documents under `root`;
    symlinks are not followed."""
    root = Path(root)
    if is_storage_root(root):
        return [root]
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if sub.is_symlink():
                continue
            if is_storage_root(sub):
                out.append(sub)
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            if f.endswith((".db", ".json")):
                p = here / f
                if not p.is_symlink() and sniff(p):
                    out.append(p)
    return sorted(out)


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """OpenCode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`
    (xdg-basedir's rule, on every platform); it holds `opencode.db` and `storage/`. A relative
    `$OPENCODE_DB` names a database in that folder; an absolute one is imported by its path."""
    base = env.get("XDG_DATA_HOME")
    return [(Path(base).expanduser() if base else home / ".local" / "share") / "opencode"]


def import_file(ctx: ImportContext, path: Path) -> None:
    path = Path(path)
    if path.is_dir():
        _import_storage(ctx, path)
        return
    with open(path, "rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        _import_db(ctx, path)
    else:
        _import_export(ctx, path)


# ---------------------------------------------------------------------------------------------
# Sources, read into one shape


@dataclass
class Rec:
    """One source record: what is kept (`value`) and its text (kept raw if `value` has no
    canonical form)."""

    value: Any
    text: str
    size: int = 0
    where: str = ""  # the file a warning names (a storage file, the database, the document)
    line: int = 0  # and its line there (an export document's message index)


@dataclass
class Msg:
    info: dict
    rec: Rec | None
    parts: list[tuple[Any, Rec | None]] = field(default_factory=list)


@dataclass
class Ses:
    id: str
    info: dict
    rec: Rec | None
    messages: list[Msg] = field(default_factory=list)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parse(ctx: ImportContext, where: str, raw: bytes) -> tuple[Any, str]:
    """(value, text) of a JSON file's bytes; a file that does not parse is warned about and
    kept as its text (a JSON string value)."""
    text = raw.decode("utf-8", "replace")
    try:
        return jsonparse.loads(raw), text
    except UnicodeDecodeError as exc:
        ctx.warn(where, 1, f"invalid UTF-8 ({exc.reason}); kept as raw text")
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        ctx.warn(where, line, f"malformed JSON ({getattr(exc, 'msg', exc)}); kept as raw text")
    return text, text


# -- the storage tree --------------------------------------------------------------------------


class _Tree:
    """A storage tree read by listing its folders: nothing outside it, no symlink followed."""

    def __init__(self, ctx: ImportContext, root: Path) -> None:
        self.ctx = ctx
        self.root = root
        top = {e.name: e for e in _scan(root)}
        self.message_dirs = self._dirs(top.get("message"))
        self.part_dirs = self._dirs(top.get("part"))
        self.flat_parts: dict[str, list[tuple[str, Any, Rec]]] = {}
        if "part" in top and _is_dir(top["part"]):
            for e in _scan(Path(top["part"].path)):
                if _is_file(e) and e.name.endswith(".json"):
                    value, rec = self.read(e, f"part/{e.name}")
                    mid = value.get("messageID") if isinstance(value, dict) else None
                    if not isinstance(mid, str):
                        ctx.warn(self.where(f"part/{e.name}"), 0,
                                 "part without a messageID in the flat part folder; not imported")
                        continue
                    self.flat_parts.setdefault(mid, []).append((e.name, value, rec))
        self.used_parts: set[str] = set()

    def where(self, rel: str) -> str:
        return f"{self.root.name}/{rel}"

    def _dirs(self, entry: os.DirEntry | None) -> dict[str, os.DirEntry]:
        if entry is None:
            return {}
        if not _is_dir(entry):
            self._symlink(entry, entry.name)
            return {}
        out = {}
        for e in _scan(Path(entry.path)):
            if _is_dir(e):
                out[e.name] = e
            elif e.is_symlink():
                self._symlink(e, f"{entry.name}/{e.name}")
        return out

    def _symlink(self, entry: os.DirEntry, rel: str) -> None:
        if entry.is_symlink():
            self.ctx.warn(self.where(rel), 0, "a symlink in the storage tree; not followed")

    def files(self, entry: os.DirEntry, rel: str) -> list[os.DirEntry]:
        out = []
        for e in _scan(Path(entry.path)):
            if e.is_symlink():
                self._symlink(e, f"{rel}/{e.name}")
            elif _is_file(e) and e.name.endswith(".json"):
                out.append(e)
        return out

    def read(self, entry: os.DirEntry, rel: str) -> tuple[Any, Rec]:
        fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with open(fd, "rb") as fh:
            raw = fh.read()
        self.ctx.advance(len(raw), str(self.root))
        value, text = _parse(self.ctx, self.where(rel), raw)
        return value, Rec(value, text, len(raw), self.where(rel))

    def sessions(self) -> list[Ses]:
        out: list[Ses] = []
        top = {e.name: e for e in _scan(self.root)}
        seen: set[str] = set()
        session_dir = top.get("session")
        for project in _scan(Path(session_dir.path)) if session_dir is not None else []:
            if not _is_dir(project):
                self._symlink(project, f"session/{project.name}")
                continue
            for e in self.files(project, f"session/{project.name}"):
                value, rec = self.read(e, f"session/{project.name}/{e.name}")
                info = value if isinstance(value, dict) else {}
                sid = info.get("id") if isinstance(info.get("id"), str) and info["id"] else e.name[:-5]
                if sid in seen:
                    self.ctx.warn(self.where(f"session/{project.name}/{e.name}"), 0,
                                  f"session {sid!r} is listed twice; the first file is imported")
                    continue
                seen.add(sid)
                out.append(Ses(sid, info, rec))
        for name in self.message_dirs:
            if name not in seen:
                self.ctx.warn(self.where(f"message/{name}"), 0,
                              "messages of a session without a session file; imported as that "
                              "session")
                out.append(Ses(name, {}, None))
                seen.add(name)
        return out

    def load(self, ses: Ses) -> None:
        entry = self.message_dirs.get(ses.id)
        if entry is None:
            return
        for e in self.files(entry, f"message/{ses.id}"):
            value, rec = self.read(e, f"message/{ses.id}/{e.name}")
            info = value if isinstance(value, dict) else {}
            if not isinstance(value, dict):  # kept raw, marked as a message for export
                rec.value = {UNPARSED_MESSAGE: rec.text}
            mid = info.get("id") if isinstance(info.get("id"), str) and info["id"] else e.name[:-5]
            msg = Msg(info, rec)
            pdir = self.part_dirs.get(mid)
            if pdir is not None:
                self.used_parts.add(mid)
                for p in self.files(pdir, f"part/{mid}"):
                    pv, prec = self.read(p, f"part/{mid}/{p.name}")
                    msg.parts.append((pv, prec))
            if mid in self.flat_parts:
                self.used_parts.add(mid)
                msg.parts.extend((pv, prec) for _n, pv, prec in self.flat_parts[mid])
            ses.messages.append(msg)

    def orphans(self) -> None:
        for mid in sorted(set(self.part_dirs) | set(self.flat_parts)):
            if mid not in self.used_parts:
                self.ctx.warn(self.where(f"part/{mid}"), 0,
                              "parts of a message no session lists; not imported")


def _import_storage(ctx: ImportContext, root: Path) -> None:
    tree = _Tree(ctx, root)
    skipped = 0
    for ses in _parents_first(tree.sessions(), lambda s: as_str(s.info.get("parentID"))):
        prev = ctx.find_session(FMT, ses.id)
        if prev and ctx.repo.session(prev).origin.get("source") == "db":
            skipped += 1  # OpenCode migrated it into its database, which is imported instead
            continue
        tree.load(ses)
        _SessionImport(ctx, root.name, ses, "storage").run()
    tree.orphans()
    if skipped:
        ctx.report.notes.append(f"{root.name}: {skipped} session(s) skipped, imported from "
                                f"OpenCode's database (which holds them since its migration)")


# -- the database -------------------------------------------------------------------------------


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _db_error(path: Path, exc: sqlite3.Error) -> Exception:
    return db_error(path, exc, LABEL, BUSY_TIMEOUT)


class _Db:
    """Read-only access to opencode.db: never a write lock, never a wait beyond BUSY_TIMEOUT."""

    def __init__(self, ctx: ImportContext, path: Path) -> None:
        self.ctx = ctx
        self.path = path
        try:
            self.con = connect_read_only(path, BUSY_TIMEOUT)
            try:
                tables = _tables(self.con)
            except sqlite3.OperationalError as exc:
                self.con.close()
                if is_locked(exc) or "unable to open" not in str(exc):
                    raise
                # a WAL database in a folder we may not write (no -shm can be made): safe to
                # read as immutable only when no write-ahead log holds newer pages
                if os.path.exists(f"{path}-wal") and os.path.getsize(f"{path}-wal") > 0:
                    raise
                self.con = connect_read_only(path, BUSY_TIMEOUT, immutable=True)
                tables = _tables(self.con)
                ctx.report.notes.append(f"{path.name}: read as immutable (read-only folder, "
                                        f"no write-ahead log)")
        except sqlite3.Error as exc:
            raise _db_error(path, exc) from None
        missing = DB_TABLES - tables
        if missing:
            self.con.close()
            raise InvalidInput(f"{path}: not an OpenCode database (no table "
                               f"{', '.join(sorted(missing))})")
        self.con.row_factory = sqlite3.Row

    def rows(self, sql: str, args: Iterable = ()) -> list[dict]:
        try:
            return [{k: _column(r[k]) for k in r.keys()} for r in self.con.execute(sql, tuple(args))]
        except sqlite3.Error as exc:
            raise _db_error(self.path, exc) from None

    def close(self) -> None:
        self.con.close()

    def data(self, row: dict, what: str) -> tuple[dict, Rec]:
        """The row as kept (its `data` column parsed) and its `data` object."""
        raw = row.get("data")
        size = len(raw) if isinstance(raw, str) else 0
        self.ctx.advance(size, str(self.path))
        value = raw
        if isinstance(raw, str):
            try:
                value = jsonparse.loads(raw)
            except ValueError as exc:
                self.ctx.warn(self.path.name, 0, f"{what} {row.get('id')!r}: data is not JSON "
                                                 f"({getattr(exc, 'msg', exc)}); kept as text")
                value = raw
        kept = {**row, "data": value}
        if value is raw:
            text = _dumps(kept)
        else:  # the row's text with its data column as stored: no second serialisation
            head = _dumps({k: v for k, v in row.items() if k != "data"})[:-1]
            text = f'{head}{"," if len(head) > 1 else ""}"data":{raw}}}'
        return (value if isinstance(value, dict) else {}), Rec(kept, text, size, self.path.name)

    def sessions(self) -> list[tuple[dict, Rec]]:
        out = []
        for row in self.rows("SELECT * FROM session ORDER BY time_created, id"):
            text = _dumps(row)
            self.ctx.advance(len(text), str(self.path))
            out.append((row, Rec(row, text, len(text), self.path.name)))
        return out

    def load(self, ses: Ses) -> None:
        try:
            self.con.execute("BEGIN")  # one read snapshot per session (never a write lock)
        except sqlite3.Error as exc:
            raise _db_error(self.path, exc) from None
        try:
            msgs = self.rows("SELECT * FROM message WHERE session_id = ? ORDER BY time_created, id",
                             (ses.id,))
            parts = self.rows("SELECT * FROM part WHERE session_id = ? ORDER BY message_id, id",
                              (ses.id,))
        finally:
            if self.con.in_transaction:
                try:
                    self.con.execute("COMMIT")
                except sqlite3.Error:
                    pass
        by_message: dict[str, list[dict]] = {}
        for p in parts:
            by_message.setdefault(str(p.get("message_id")), []).append(p)
        for row in msgs:
            data, rec = self.data(row, "message")
            info = {**data, "id": row.get("id"), "sessionID": row.get("session_id")}
            msg = Msg(info, rec)
            for prow in by_message.pop(str(row.get("id")), []):
                pdata, prec = self.data(prow, "part")
                if not isinstance(prec.value["data"], dict):  # warned: mapped as malformed
                    msg.parts.append((prec.value["data"], prec))
                    continue
                msg.parts.append(({**pdata, "id": prow.get("id"), "sessionID": prow.get("session_id"),
                                   "messageID": prow.get("message_id")}, prec))
            ses.messages.append(msg)
        for mid, rows in by_message.items():
            self.ctx.warn(self.path.name, 0, f"{len(rows)} part(s) of message {mid!r}, which "
                                             f"session {ses.id!r} does not hold; not imported")


def _column(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def session_info(row: Mapping[str, Any]) -> dict:
    """OpenCode's Session.Info from a `session` row (its `fromRow`)."""
    def col(k: str) -> Any:
        v = row.get(k)
        if isinstance(v, str) and k in SESSION_JSON_COLUMNS:
            try:
                return json.loads(v)
            except ValueError:
                return v
        return v

    info: dict[str, Any] = {"id": row.get("id"), "slug": row.get("slug"),
                            "projectID": row.get("project_id")}
    for key, column in (("workspaceID", "workspace_id"), ("directory", "directory"),
                        ("path", "path"), ("parentID", "parent_id"), ("title", "title"),
                        ("agent", "agent"), ("model", "model"), ("version", "version")):
        v = col(column)
        if v is not None or key in ("directory", "title", "version"):
            info[key] = v
    if any(row.get(k) is not None for k in ("summary_additions", "summary_deletions", "summary_files")):
        summary = {"additions": row.get("summary_additions") or 0,
                   "deletions": row.get("summary_deletions") or 0,
                   "files": row.get("summary_files") or 0}
        if col("summary_diffs") is not None:
            summary["diffs"] = col("summary_diffs")
        info["summary"] = summary
    if row.get("share_url"):
        info["share"] = {"url": row["share_url"]}
    for key in ("revert", "permission"):
        if col(key) is not None:
            info[key] = col(key)
    time = {"created": row.get("time_created"), "updated": row.get("time_updated")}
    for key in ("compacting", "archived"):
        if row.get(f"time_{key}") is not None:
            time[key] = row[f"time_{key}"]
    info["time"] = time
    return info


def _import_db(ctx: ImportContext, path: Path) -> None:
    db = _Db(ctx, path)
    try:
        stray = db.rows("SELECT count(*) AS n FROM message WHERE session_id NOT IN "
                        "(SELECT id FROM session)")[0]["n"]
        if stray:
            ctx.warn(path.name, 0, f"{stray} message row(s) of no listed session; not imported")
        listed = [Ses(str(row.get("id")), session_info(row), rec) for row, rec in db.sessions()]
        for ses in _parents_first(listed, lambda s: as_str(s.info.get("parentID"))):
            db.load(ses)
            _SessionImport(ctx, path.name, ses, "db").run()
    finally:
        db.close()


# -- export documents --------------------------------------------------------------------------


def _import_export(ctx: ImportContext, path: Path) -> None:
    with open(path, "rb") as fh:
        raw = fh.read()
    ctx.advance(len(raw), str(path))
    try:
        doc = jsonparse.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"{path}: not a JSON document ({getattr(exc, 'msg', exc)}); nothing "
                           f"imported") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict) \
            or not isinstance(doc.get("messages", []), list):
        raise InvalidInput(f"{path}: not an `opencode export` document ({{info, messages}})")
    info = doc["info"]
    head = {k: v for k, v in doc.items() if k != "messages"}
    sid = as_str(info.get("id")) or path.stem
    ses = Ses(sid, info, Rec(head, _dumps(head), 0, path.name))
    for i, m in enumerate(doc.get("messages") or [], 1):
        if not isinstance(m, dict) or not isinstance(m.get("info"), dict):
            ctx.warn(path.name, i, "a message that is not {info, parts}; kept as it is")
            ses.messages.append(Msg({}, Rec(m, _dumps(m), 0, path.name, i)))
            continue
        parts = m.get("parts") if isinstance(m.get("parts"), list) else []
        ses.messages.append(Msg(m["info"], Rec(m, _dumps(m), 0, path.name, i),
                                [(p, None) for p in parts]))
    _SessionImport(ctx, path.name, ses, "export").run()


def _parents_first(sessions: list, parent_of: Callable[[Any], str]) -> list:
    """Sessions whose parent is in the list come after it (else in the given order)."""
    ids = {s.id for s in sessions}
    out, done, pending = [], set(), list(sessions)
    while pending:
        rest = []
        for s in pending:
            p = parent_of(s)
            if not p or p not in ids or p in done or p == s.id:
                out.append(s)
                done.add(s.id)
            else:
                rest.append(s)
        if len(rest) == len(pending):  # a parent cycle: keep the order
            out += rest
            break
        pending = rest
    return out


# ---------------------------------------------------------------------------------------------
# Records -> events


def line_base(session_id: str) -> int:
    return zlib.crc32(session_id.encode("utf-8", "surrogatepass")) << LINE_BITS



def _num(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def iso(ms: Any) -> str:
    """An ISO timestamp of OpenCode's milliseconds since the epoch ("" if not a time)."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not 0 < ms < 1e14:
        return ""
    ms = int(ms)
    return _seconds(ms // 1000) + f"{ms % 1000:03d}Z"


@functools.lru_cache(maxsize=4096)
def _seconds(s: int) -> str:
    return datetime.fromtimestamp(s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def _time(obj: Any, *keys: str) -> str:
    t = obj.get("time") if isinstance(obj, Mapping) else None
    if isinstance(t, Mapping):
        for k in keys:
            v = iso(t.get(k))
            if v:
                return v
    return ""


def has_tokens(tokens: Any) -> bool:
    if not isinstance(tokens, Mapping):
        return False
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), Mapping) else {}
    return any(_num(v) for v in (tokens.get("input"), tokens.get("output"), tokens.get("reasoning"),
                                 cache.get("read"), cache.get("write")))


def usage_of(tokens: Mapping, cost: Any) -> dict[str, Any]:
    """OpenCode tokens as a usage record: input = input + cache read + cache write (OpenCode's
    `input` excludes the cache), output = output + reasoning."""
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), Mapping) else {}
    read, write = _num(cache.get("read")), _num(cache.get("write"))
    reasoning = _num(tokens.get("reasoning"))
    usage: dict[str, Any] = {"input_tokens": _num(tokens.get("input")) + read + write,
                             "cached_input_tokens": read, "cache_write_input_tokens": write,
                             "output_tokens": _num(tokens.get("output")) + reasoning,
                             "reasoning_tokens": reasoning}
    if isinstance(cost, Mapping):
        cost = cost.get("usd", cost.get("total"))
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        usage["cost_usd"] = cost
    return usage


def _model(info: Mapping) -> str:
    m = info.get("model")
    if isinstance(m, Mapping):
        return as_str(m.get("modelID")) or as_str(m.get("id"))
    return as_str(info.get("modelID"))


def _stop(info: Mapping) -> str:
    """The stop reason that abandons the calls of an assistant message that ended in error."""
    err = info.get("error")
    if not err:
        return ""
    name = as_str(err.get("name")) if isinstance(err, Mapping) else ""
    return "aborted" if "Abort" in name else "error"


def _shown(p: Any, role: Any) -> bool:
    """Whether a part maps to an event `ctx log` shows (not source bookkeeping)."""
    if not isinstance(p, dict):
        return False
    t = p.get("type")
    return t in ("text", "reasoning", "tool") or (t == "step-finish" and role != "user"
                                                 and has_tokens(p.get("tokens")))


def _first_prompt(messages: list[Msg]) -> str:
    for m in messages:
        if m.info.get("role") != "user":
            continue
        for p, _rec in m.parts:
            if isinstance(p, dict) and p.get("type") == "text" and not p.get("synthetic") \
                    and not p.get("ignored"):
                title = title_of(prompt_text(as_str(p.get("text"))))
                if title:
                    return title
    return ""


@dataclass
class _Pending:
    upto: str
    tail: str
    auto: bool


class _SessionImport:
    """One OpenCode session: its builder and the mapping of its records."""

    def __init__(self, ctx: ImportContext, file: str, ses: Ses, source: str) -> None:
        self.ctx = ctx
        self.file = file
        self.ses = ses
        self.source = source
        self.per_message = source == "export"
        self.base = 0 if self.per_message else line_base(ses.id)
        self.before: dict[str, str] = {}  # message id -> tip before its events
        self.compacting: _Pending | None = None
        self.loc: tuple[str, int] = (file, 0)  # where a warning about the current record points

    def _builder(self) -> SessionBuilder:
        ctx, info, sid = self.ctx, self.ses.info, self.ses.id
        parent_id = as_str(info.get("parentID"))
        origin: dict[str, Any] = {"format": FMT, "id": sid, "source": self.source}
        for key, k in (("project", "projectID"), ("version", "version"), ("parent_id", "parentID")):
            if as_str(info.get(k)):
                origin[key] = info[k]
        title = as_str(info.get("title")).strip()
        if not title or _DEFAULT_TITLE.match(title):
            title = _first_prompt(self.ses.messages)
        prev = ctx.find_session(FMT, sid)
        if prev:  # the same session again: keep the title it was imported with (a rename in
            old = ctx.repo.session(prev)  # OpenCode must not make it a second ctx session)
            if dict(old.origin) == origin:
                title = old.title
        parent = ctx.find_session(FMT, parent_id) if parent_id else ""
        if parent_id and not parent:
            ctx.report.notes.append(f"{self.file}: session {sid} is a child of {parent_id}, "
                                    f"which is not imported; link kept in the origin only")
        return SessionBuilder(ctx, fmt=FMT, file=self.file, source_id=sid,
                              ts=_time(info, "created"), nonce=sid, origin=origin,
                              kind="subagent" if parent_id else "main", title=title,
                              parent_session=parent,
                              spawn_event=ctx.agent_spawns.get((parent_id, sid), "") if parent else "",
                              cwd=as_str(info.get("directory")))

    def run(self) -> None:
        """Messages in order, each one's parts before its own record (an assistant message is
        rewritten while it runs: only what follows changes), and the session's record last (its
        row changes whenever the session does)."""
        self.b = b = self._builder()
        ses = self.ses
        n = 1
        for i, msg in enumerate(ses.messages, 1):
            if self.per_message:  # one record: on the first event `ctx log` shows
                first = next((j for j, (p, _r) in enumerate(msg.parts)
                              if _shown(p, msg.info.get("role"))), None)
                self.message(msg, (lambda m=msg, i=i: self._begin(i, m.rec)) if first is None
                             else (lambda: None),
                             lambda j, m=msg, i=i, f=first: self._begin(i, m.rec) if j == f else None)
                continue
            n += 1
            start = n
            n += len(msg.parts)
            self.message(msg, lambda m=msg, s=start: self._begin(self.base + s, m.rec),
                         lambda j, m=msg, s=start: self._begin(self.base + s + 1 + j, m.parts[j][1]))
        if ses.rec is not None:
            b.begin(self.base + (0 if self.per_message else 1), ses.rec.value, ses.rec.text)
            info = ses.info
            payload = {k: info[k] for k in ("title", "directory", "version", "projectID", "slug")
                       if isinstance(info.get(k), str)}
            b.append(f"{FMT}:session", "system", payload, ts=b.ts(_time(info, "updated", "created")))
        b.finish()

    def _begin(self, line: int, rec: Rec | None) -> None:
        if rec is not None:
            self.b.begin(line, rec.value, rec.text)

    # -- messages ------------------------------------------------------------------------------
    def message(self, msg: Msg, begin_info: Callable[[], None],
                begin_part: Callable[[int], None]) -> None:
        b, info = self.b, msg.info
        role = info.get("role")
        mid = as_str(info.get("id"))
        if mid:
            self.before[mid] = b.tip
        ts = b.ts(_time(info, "created"))
        texts = [j for j, (p, _) in enumerate(msg.parts)
                 if isinstance(p, dict) and p.get("type") == "text"]
        summary_at = texts[-1] if (role == "assistant" and info.get("summary") is True
                                   and not info.get("error") and texts) else -1
        for j, (part, rec) in enumerate(msg.parts):
            begin_part(j)
            self.loc = self._loc(rec or msg.rec)
            if j == summary_at:
                self.compaction(msg, texts, ts)
            else:
                self.part(info, part, ts)
        begin_info()
        step_usage = any(isinstance(p, dict) and p.get("type") == "step-finish"
                         and has_tokens(p.get("tokens")) for p, _ in msg.parts)
        done = _time(info, "completed", "created") or ts
        if role == "assistant" and not step_usage and has_tokens(info.get("tokens")):
            payload = {"usage": usage_of(info["tokens"], info.get("cost")), "response_id": mid,
                       "text": ""}
            if _model(info):
                payload["model"] = _model(info)
            b.append("ModelResponseReceived", "model", payload, {}, done)
            return
        if role is not None and role not in ("user", "assistant"):  # no role: warned already
            b.ctx.warn(*self._loc(msg.rec), f"message {mid!r}: unknown role {role!r}; kept as "
                                     f"{FMT}:message")
        payload = {k: info[k] for k in ("role", "id", "agent", "finish", "mode")
                   if isinstance(info.get(k), str)}
        if _model(info):
            payload["model"] = _model(info)
        if info.get("error"):
            err = info["error"]
            payload["error"] = as_str(err.get("name")) if isinstance(err, Mapping) else "error"
        b.append(f"{FMT}:message", "system", payload, ts=done)

    def _loc(self, rec: Rec | None) -> tuple[str, int]:
        return (rec.where or self.file, rec.line) if rec is not None else (self.file, 0)

    def _first_after(self, before: str) -> str:
        """The first event appended after `before` on the current line ("" if none)."""
        for cur, ev in self.b.repo.graph.first_parents(self.b.tip):
            if ev.parents and ev.parents[0] == before:
                return cur
            if cur == before:
                break
        return ""

    def part(self, info: Mapping, p: Any, ts: str) -> None:
        b = self.b
        if not isinstance(p, dict):
            b.append(f"{FMT}:malformed", "system", {}, ts=ts)
            return
        t = p.get("type")
        ts = b.ts(_time(p, "start", "created", "end") or ts)
        meta = {k: v for k, v in (("message", as_str(info.get("id"))), ("part", as_str(p.get("id"))))
                if v}
        model = _model(info)
        if t == "text":
            text = as_str(p.get("text"))
            if info.get("role") == "user":
                mid = b.message("user", [TextBlock(text)], meta=meta)
                if p.get("synthetic") or p.get("ignored"):
                    b.append("MessageAdded", "user", {"role": "user", "synthetic": True,
                                                      "text": preview(text)}, {"message_id": mid}, ts)
                else:
                    b.append("UserPromptSubmitted", "user", {"text": preview(text)},
                             {"message_id": mid}, ts)
                return
            mid = b.message("assistant", [TextBlock(text)], meta={**meta, "model": model})
            payload = {"text": preview(text), **({"model": model} if model else {})}
            b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        elif t == "reasoning":
            mid = b.message("assistant", [ThinkingBlock(as_str(p.get("text")), "")],
                            meta={**meta, "model": model})
            payload = {"text": "", "kind": "reasoning", **({"model": model} if model else {})}
            b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        elif t == "tool":
            self.tool(info, p, meta, ts)
        elif t == "step-finish":
            if has_tokens(p.get("tokens")):
                payload = {"usage": usage_of(p["tokens"], p.get("cost")), "response_id":
                           as_str(p.get("id")) or as_str(info.get("id")), "text": ""}
                if model:
                    payload["model"] = model
                if as_str(p.get("reason")):
                    payload["finish"] = p["reason"]
                b.append("ModelResponseReceived", "model", payload, {}, ts)
            else:
                b.append(f"{FMT}:step-finish", "system",
                         {"reason": p["reason"]} if as_str(p.get("reason")) else {}, ts=ts)
        elif t in BOOKKEEPING:
            payload = {k: p[k] for k in BOOKKEEPING[t] if isinstance(p.get(k), (str, int, bool))}
            if t == "patch" and isinstance(p.get("files"), list):
                payload["files"] = [f for f in p["files"][:50] if isinstance(f, str)]
            if t == "compaction":
                self.compacting = _Pending(self.before.get(as_str(info.get("id")), b.tip),
                                           as_str(p.get("tail_start_id")), bool(p.get("auto")))
            b.append(f"{FMT}:{t}", "system", payload, ts=ts)
        else:
            name = t if isinstance(t, str) and t else "unknown"
            b.ctx.warn(*self.loc, f"unknown record type {t!r} (part {p.get('id')!r}); kept as "
                                     f"{FMT}:{name}")
            b.append(f"{FMT}:{name}", "system", {}, ts=ts)

    def tool(self, info: Mapping, p: dict, meta: dict, ts: str) -> None:
        b = self.b
        name = as_str(p.get("tool")) or "unknown"
        tcid = as_str(p.get("callID")) or as_str(p.get("id"))
        state = p.get("state") if isinstance(p.get("state"), Mapping) else {}
        args = state.get("input") if isinstance(state.get("input"), Mapping) else {}
        mid = b.message("assistant", [ToolCallBlock(tcid, name, args)],
                        meta={**meta, "model": _model(info)})
        payload: dict[str, Any] = {"text": ""}
        if _model(info):
            payload["model"] = _model(info)
        if _stop(info):
            payload["stop_reason"] = _stop(info)
        start = _time(state, "start") or ts
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, start)
        eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                       {"tool_call_id": tcid, "message_id": mid}, start)
        meta_state = state.get("metadata") if isinstance(state.get("metadata"), Mapping) else {}
        child = as_str(meta_state.get("sessionId"))
        if name == "task" and child:
            self.ctx.agent_spawns[(self.ses.id, child)] = eid
        status = state.get("status")
        end = b.ts(_time(state, "end", "start") or start)
        if status not in TOOL_STATUSES:
            b.ctx.warn(*self.loc, f"tool part {p.get('id')!r}: unknown status {status!r}; "
                                     f"its output (or error) taken as the result")
        if status == "error" or (status not in TOOL_STATUSES and isinstance(state.get("error"), str)
                                 and not isinstance(state.get("output"), str)):
            b.tool_result(tcid, name, eid, as_str(state.get("error")), True, end)
        elif status == "completed" or (status not in TOOL_STATUSES
                                       and isinstance(state.get("output"), str)):
            b.tool_result(tcid, name, eid, as_str(state.get("output")), False, end)

    def compaction(self, msg: Msg, texts: list[int], ts: str) -> None:
        """The last text part of a summary message: the compaction OpenCode completed."""
        b, info = self.b, msg.info
        summary = "\n\n".join(as_str(msg.parts[j][0].get("text")) for j in texts)
        mid = b.message("summary", [TextBlock(summary)],
                        meta={"message": as_str(info.get("id")), "opencode_summary": True})
        pending, self.compacting = self.compacting, None
        upto = pending.upto if pending else self.before.get(as_str(info.get("id")), b.tip)
        kept, source = "", None
        if pending and pending.tail and pending.tail in self.before:
            kept = self._first_after(self.before[pending.tail])
            source = b.chain_since_compaction(self.before[pending.tail])
        extra = {"auto": pending.auto} if pending else {}
        b.compaction(summary, upto, ts, first_kept=kept, source_ids=source, extra=extra,
                     message_id=mid)


# ---------------------------------------------------------------------------------------------
# Export: an `opencode export` document back from the kept records


def export(records: list[tuple[int, Any]], out: TextIO) -> int:
    """Write the `opencode export` document of one session from its records in line order."""
    recs = sorted(records, key=lambda r: r[0])
    if recs and recs[0][0] == 0 and isinstance(recs[0][1], dict) and "id" not in recs[0][1] \
            and isinstance(recs[0][1].get("info"), dict):
        doc = dict(recs[0][1])
        doc["messages"] = [v for _n, v in recs[1:]]
    else:
        doc = {"info": {}, "messages": []}
        parts: list | None = None  # the parts of the message written last
        for line, v in recs:
            if not isinstance(v, dict):
                continue  # a file that was not JSON: kept in the store, not exportable
            data = v.get("data") if "session_id" in v else None
            if line & ((1 << LINE_BITS) - 1) == 1:
                doc["info"] = session_info(v) if "project_id" in v and "data" not in v else v
            elif "session_id" in v and "data" in v and "message_id" not in v:  # message row
                parts = None
                if isinstance(data, dict):
                    parts = []
                    doc["messages"].append({"info": {**data, "id": v.get("id"),
                                                     "sessionID": v.get("session_id")},
                                            "parts": parts})
            elif "session_id" in v and "data" in v:  # part row
                if parts is not None and isinstance(data, dict):
                    parts.append({**data, "id": v.get("id"), "sessionID": v.get("session_id"),
                                  "messageID": v.get("message_id")})
            elif UNPARSED_MESSAGE in v:  # a message file that was not JSON: nor its parts
                parts = None
            elif "role" in v:  # a storage message file
                parts = []
                doc["messages"].append({"info": v, "parts": parts})
            elif parts is not None:  # a storage part file
                parts.append(v)
    out.write(json.dumps(doc, ensure_ascii=False, indent=2))
    out.write("\n")
    return len(recs)
