"""`ctx import --follow PATH`: import a transcript that is still being written, as it grows.

Each `poll()` reads the complete lines the file gained since the previous one (a line still
being written waits for its newline) and imports them in one transaction, so the store is
never more than one poll behind and each poll costs the new lines, not the file.

- Claude Code files go through importers.live (the hook's path: state in .ctx/live.sqlite,
  resumable by the next `ctx hook` or `--follow`).
- Codex and pi importers are linear (a line's events depend on earlier lines only), except
  that the session object derives from the first lines (Codex: session_meta and the first
  prompt within 400 lines; pi: the header and the first prompt). Until the file has 400
  lines each poll imports the whole file so far (at most 400 lines; `ctx import` semantics);
  from then on the importer object stays in memory and is fed the new lines.
A file that shrinks or whose imported part changes is imported again from its first line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..refs import branch_ref
from ..repo import Repository
from . import codex, harnesses, pi
from .common import ImportContext
from .live import LiveImporter, capture, capture_lock, read_lines

HEAD_LINES = 400  # the first lines the Codex and pi importers read to name the session
_OPEN = {"codex": codex.open_file, "pi": pi.open_file}


def reader_of(fmt: str):
    """The `open_file` that makes a line-fed reader for FMT, or None: the harness rewrites its
    file (a JSON document, a database), so each change is imported whole again (re-importing
    what is already stored writes nothing)."""
    if fmt in _OPEN:
        return _OPEN[fmt]
    if fmt in harnesses.MODULES:
        return getattr(harnesses.module(fmt), "open_file", None)
    return None


class Follower:
    """Imports what `path` gained since the last `poll()`. `close()` when done."""

    head_lines = HEAD_LINES

    def __init__(self, repo: Repository, path: str | os.PathLike, fmt: str) -> None:
        self.repo = repo
        self.path = Path(path).resolve()
        self.fmt = fmt
        self.offset = 0
        self.n = 0  # lines imported (blank ones counted, as line numbers count them)
        self.mark = ""  # hash of the last line imported: a rewrite check
        self.reader: Any = None  # the Codex/pi importer object, once past HEAD_LINES
        self.live = LiveImporter(repo) if fmt == "claude-code" else None
        self.whole = self.live is None and reader_of(fmt) is None
        self.whole = self.whole or self.path.name.endswith(".zst")  # compressed: no line offsets
        if fmt in harnesses.MODULES and hasattr(harnesses.module(fmt), "follows_lines"):
            self.whole = self.whole or not harnesses.module(fmt).follows_lines(self.path)  # a document
        self.signature: tuple[int, int] | None = None  # whole mode: (size, mtime) imported
        self.session = ""
        self.warnings: list[dict] = []

    def close(self) -> None:
        if self.live is not None:
            self.live.close()

    def poll(self) -> dict[str, Any]:
        """Import the new complete lines; returns {lines, new_events, session, rewritten}."""
        if self.live is not None:
            with capture_lock(self.repo):  # a hook may capture the same file meanwhile
                res = capture(self.live, self.path)
            self.session = res.get("session", self.session)
            self.warnings += [{"message": p} for p in res.get("problems", [])]
            return {"lines": res["lines"], "new_events": res.get("new_events", 0),
                    "session": self.session, "rewritten": res.get("rewritten", False)}
        if self.whole:
            return self._poll_whole()
        rewritten = self._rewritten()
        if rewritten:
            self.offset, self.n, self.reader = 0, 0, None
        lines, offset, problems = read_lines(self.path, self.offset)
        self.warnings += [{"message": p} for p in problems]
        if not lines:
            return {"lines": 0, "new_events": 0, "session": self.session, "rewritten": rewritten}
        with self.repo.transaction(actor="ctx-import", message=f"import --follow: "
                                                               f"{self.path.name}") as tx:
            ctx = ImportContext(self.repo, tx)
            if self.reader is None or self.n < self.head_lines:
                self.reader = self._whole(ctx, offset)
                if self.session and self.session != self.reader.b.sid:
                    # the first lines named the session differently (a title arrived): the
                    # session the earlier polls made is the same transcript; its refs go
                    for name in self.repo.branches(self.session):
                        tx.delete_ref(branch_ref(self.session, name),
                                      message="import --follow: session re-imported")
            else:
                b = self.reader.b
                b.ctx = ctx
                b.tx = tx
                ctx.report.sessions.append(b.stats)
                b.stats.new_events = 0
                for i, (text, value) in enumerate(lines, self.n + 1):
                    if value is not None:
                        self.reader.feed(i, text, value)
                b.finish()
            self.warnings += ctx.report.warnings
        self.n += len(lines)
        self.offset = offset
        self.mark = self._digest(offset)
        self.session = self.reader.b.sid
        return {"lines": len(lines), "new_events": ctx.report.new_events,
                "session": self.session, "rewritten": rewritten}

    def _poll_whole(self) -> dict[str, Any]:
        """A harness that rewrites its session (a JSON document, a database, a folder): when
        its size or modification time changed, the whole unit is imported again; what was
        already stored is not written twice, so a poll costs the parse, not the store."""
        from .porcelain import import_paths, unit_size

        st = os.stat(self.path)
        sig = (unit_size(self.path), st.st_mtime_ns)
        wal = f"{self.path}-wal"  # a SQLite database in WAL mode (OpenCode) changes there first
        if os.path.isfile(wal):
            sig += (os.path.getsize(wal), os.stat(wal).st_mtime_ns)
        if sig == self.signature:
            return {"lines": 0, "new_events": 0, "session": self.session, "rewritten": False}
        report = import_paths(self.repo, [self.path], format=self.fmt)
        self.signature = sig
        self.warnings += report.warnings
        if report.sessions:
            self.session = report.sessions[0].session
        records = sum(s.records for s in report.sessions)
        return {"lines": records, "new_events": report.new_events, "session": self.session,
                "rewritten": False}

    def _whole(self, ctx: ImportContext, end: int) -> Any:
        """The file's complete lines so far, imported as `ctx import` would (a copy with the
        same name, without the line still being written)."""
        tmp = Path(tempfile.mkdtemp(prefix="ctx-follow-"))
        try:
            copy = tmp / self.path.name
            with open(self.path, "rb") as src, open(copy, "wb") as dst:
                dst.write(src.read(end))
            reader = reader_of(self.fmt)(ctx, copy)
            reader.run(copy)
            reader.b.finish()
            return reader
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _digest(self, end: int) -> str:
        with open(self.path, "rb") as fh:
            fh.seek(max(0, end - 4096))
            return hashlib.blake2b(fh.read(end - max(0, end - 4096)), digest_size=16).hexdigest()

    def _rewritten(self) -> bool:
        if not self.offset:
            return False
        return os.path.getsize(self.path) < self.offset or self._digest(self.offset) != self.mark
