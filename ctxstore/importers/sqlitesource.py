"""Read-only access to a harness's SQLite database (OpenCode, Cursor, Goose).

A harness keeps writing its database while ctx reads it, so a read must never take a write
lock, never create the file or its journal's contents, and never wait long: the URI opens it
`mode=ro` (with `immutable=1` only where a caller knows nothing writes it), the connection is
`query_only`, and a busy timeout bounds the wait. `db_error` turns what SQLite says into the
error the user gets: a locked database is LockHeld (exit 7, try again), anything else
InvalidInput naming the file (exit 10). Nothing is imported from a database that failed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import CtxError, InvalidInput, LockHeld


def connect_read_only(path: Path, timeout: float, immutable: bool = False) -> sqlite3.Connection:
    """A connection that can only read PATH (autocommit: one statement, one read snapshot)."""
    uri = Path(path).resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    con = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    try:
        con.execute("PRAGMA query_only = ON")
    except sqlite3.Error:
        con.close()
        raise
    return con


def is_locked(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (5, 6) or "locked" in str(exc) or "busy" in str(exc)


def db_error(path: Path, exc: sqlite3.Error, harness: str, waited: float) -> CtxError:
    """The user's error for a database read that failed."""
    if is_locked(exc):
        return LockHeld(f"{path}: the database is locked by another process ({harness} writing "
                        f"to it?); gave up after {waited} s without reading it; nothing "
                        f"imported from it, try again")
    return InvalidInput(f"{path}: not a readable {harness} database ({exc}); the file may be "
                        f"half-written or damaged; nothing imported from it")
