"""Refs as files under the store directory, moved by compare-and-swap under lock files.

Layout (see docs/format.md, "Refs"): `HEAD`, `refs/sessions/<session>/<branch>` holding one id
and a newline, `logs/<ref name>` holding one reflog line per move:
`<old> <new> <unix ms> <actor>\\t<message>\\n` with 64 zeros for "absent".
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..codec import is_full_id
from ..errors import CorruptStore, InvalidRefName
from ..lockfile import LockFile, fsync_dir, replace_file
from .base import ZERO, Head, ReflogEntry, RefStore
from .names import HEAD, check_ref_name


def _format_entry(e: ReflogEntry) -> bytes:
    msg = " ".join(e.message.split())
    actor = "".join(e.actor.split()) or "ctx"
    return f"{e.old or ZERO} {e.new or ZERO} {e.ts_ms} {actor}\t{msg}\n".encode()


_REFLOG_SHAPE = "'<old id> <new id> <unix ms> <actor>\\t<message>'"


def _parse_entry(line: str) -> ReflogEntry | None:
    """One reflog line (its newline optional), or None if it is not one (docs/format.md)."""
    head, tab, msg = line.removesuffix("\n").partition("\t")
    parts = head.split(" ")
    if not tab or len(parts) != 4:
        return None
    old, new, ts, actor = parts
    if not (is_full_id(old) and is_full_id(new) and ts.isascii() and ts.isdigit() and actor):
        return None
    return ReflogEntry(None if old == ZERO else old, None if new == ZERO else new, int(ts), actor, msg)


def _damaged(path: Path, line: int, what: str, damaged: list[CorruptStore] | None) -> None:
    """Raise CorruptStore naming file and line, or (fsck) collect it in `damaged`."""
    exc = CorruptStore(f"{path}:{line}: {what}", path=str(path), line=line)
    if damaged is None:
        raise exc
    damaged.append(exc)


def _is_ref_name(name: str) -> bool:
    try:
        check_ref_name(name)
    except InvalidRefName:
        return False
    return True


class FileRefs(RefStore):
    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def _path(self, name: str) -> Path:
        return self.root / name

    def _log_path(self, name: str) -> Path:
        return self.root / "logs" / name

    def _read_file(self, path: Path) -> str | None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except ValueError as exc:
            if not isinstance(exc, UnicodeDecodeError):  # a NUL byte in the name
                raise InvalidRefName(f"{path.name!r} is not a valid ref name") from None
            raise CorruptStore(f"{path}:1: not text, so not a ref", path=str(path), line=1) from None
        return text

    def read(self, name: str) -> str | None:
        if name == HEAD:
            return self.read_head().target
        value = self._read_file(self._path(name))
        if value is None:
            return None
        if not is_full_id(value):
            _damaged(self._path(name), 1, f"ref {name} holds {value[:80]!r}, not an object id", None)
        return value

    def _cas(self, name, old, new, entry, fsync) -> None:
        path = self._path(name)
        try:
            lock = LockFile(path).acquire()
        except (NotADirectoryError, FileExistsError):
            raise InvalidRefName(f"ref {name} conflicts with an existing ref (a name cannot be "
                                 f"both a branch and a folder of branches)") from None
        if path.is_dir():
            lock.abort()
            raise InvalidRefName(f"ref {name} conflicts with existing refs under {name}/")
        try:
            actual = self.read(name)
            if actual != old:
                raise self.conflict(name, old, actual)
            self._append_reflog(name, entry, fsync=fsync)
            if new is None:
                path.unlink(missing_ok=True)
                lock.abort()
            else:
                lock.write(f"{new}\n".encode())
                lock.commit(fsync=fsync)
        finally:
            lock.abort()

    def iter_refs(self, prefix: str = "refs/", *, damaged: list[CorruptStore] | None = None
                  ) -> Iterator[tuple[str, str]]:
        base = self.root / prefix.rstrip("/") if prefix.endswith("/") else self.root / prefix
        start = base if base.is_dir() else base.parent
        found: list[tuple[str, str]] = []
        for dirpath, dirs, files in os.walk(start):
            dirs.sort()  # the same first damage reported every time
            for fn in sorted(files):
                if fn.endswith(".lock"):
                    continue
                full = Path(dirpath) / fn
                name = full.relative_to(self.root).as_posix()
                if not name.startswith(prefix) or not _is_ref_name(name):
                    continue  # a stray file (editor backup `main~`, `.swp`) is not a ref
                try:
                    value = self._read_file(full)
                except CorruptStore as exc:
                    if damaged is None:
                        raise
                    damaged.append(exc)
                    continue
                if value is not None and not is_full_id(value):
                    _damaged(full, 1, f"ref {name} holds {value[:80]!r}, not an object id", damaged)
                elif value is not None:
                    found.append((name, value))
        found.sort()
        return iter(found)

    def reflog(self, name: str, *, damaged: list[CorruptStore] | None = None) -> list[ReflogEntry]:
        check_ref_name(name)  # never a path outside logs/ (`../HEAD`)
        path = self._log_path(name)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        tail = lines.pop()  # what follows the last newline: nothing, if the file is intact
        if tail:
            lines.append(tail)
        entries = []
        for n, raw in enumerate(lines, 1):
            # ids, time and actor are ASCII and checked; a stray byte in the free-text message
            # hides nothing (it reads as U+FFFD)
            entry = _parse_entry(raw.decode("utf-8", "replace"))
            if entry is None or (tail and n == len(lines)):
                why = "no newline at the end" if entry is not None else f"expected {_REFLOG_SHAPE}"
                _damaged(path, n, f"damaged reflog line {raw[:100].decode('utf-8', 'replace')!r} "
                                  f"({why})", damaged)
                continue
            entries.append(entry)
        return entries

    def last_reflog_entry(self, name: str) -> ReflogEntry | None:
        """The newest line of `name`'s reflog, reading only the file's tail."""
        path = self._log_path(name)
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - 8192))
                tail = f.read()
        except FileNotFoundError:
            return None
        lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
        return _parse_entry(lines[-1].decode("utf-8", "replace")) if lines[-1] else None

    def read_head(self) -> Head:
        text = self._read_file(self.root / HEAD) or ""
        if text.startswith("ref: "):
            ref = text[5:].strip()
            return Head(ref, self.read(ref))
        if text and not is_full_id(text):
            _damaged(self.root / HEAD, 1, f"HEAD holds {text[:80]!r}", None)
        return Head(None, text or None)

    def _write_head(self, value: str, entry: ReflogEntry | None) -> None:
        with LockFile(self.root / HEAD) as lock:
            if entry is not None:
                self._append_reflog(HEAD, entry)
            lock.write(f"{value}\n".encode())
            lock.commit()

    def _append_reflog(self, name: str, entry: ReflogEntry, fsync: bool = True) -> None:
        path = self._log_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, _format_entry(entry))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def reflog_names(self) -> list[str]:
        root = self.root / "logs"
        names = []
        for dirpath, _dirs, files in os.walk(root):
            for fn in files:
                name = (Path(dirpath) / fn).relative_to(root).as_posix()
                # only HEAD's and refs/'s: any other file under logs/ (an editor's backup, the
                # hooks.log older versions wrote there) is not a reflog
                if not fn.endswith(".lock") and (name == "HEAD" or name.startswith("refs/")) \
                        and _is_ref_name(name):
                    names.append(name)
        return sorted(names)

    def replace_reflog(self, name: str, entries: list[ReflogEntry]) -> None:
        with LockFile(self._log_path(name)) as lock:
            lock.write(b"".join(_format_entry(e) for e in entries))
            lock.commit()

    # -- transaction primitives ----------------------------------------------------------------
    # The files of docs/format.md, "Transactions": transaction.lock, journal, op-head.
    @contextmanager
    def transaction_lock(self):
        fd = os.open(self.root / "transaction.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # dropped by the kernel if this process dies
            yield self
        finally:
            os.close(fd)

    def read_journal(self) -> bytes | None:
        try:
            return (self.root / "journal").read_bytes()
        except FileNotFoundError:
            return None

    def has_journal(self) -> bool:
        return (self.root / "journal").exists()

    def write_journal(self, data: bytes, fsync: bool = True) -> None:
        replace_file(self.root / "journal.tmp", self.root / "journal", data, fsync)

    def remove_journal(self, fsync: bool) -> None:
        (self.root / "journal").unlink(missing_ok=True)
        if fsync:
            fsync_dir(self.root)

    def read_op_head(self) -> str | None:
        value = self._read_file(self.root / "op-head")
        if value is not None and not is_full_id(value):
            _damaged(self.root / "op-head", 1, f"op-head holds {value[:80]!r}, not an operation id",
                     None)
        return value or None

    def write_op_head(self, op_id: str, fsync: bool) -> None:
        self._replace(self.root / "op-head", op_id, fsync)

    def check_writable(self, name: str) -> None:
        check_ref_name(name)
        path = self._path(name)
        if path.is_dir():
            raise InvalidRefName(f"ref {name} conflicts with existing refs under {name}/")
        for parent in path.relative_to(self.root).parents:
            if parent.parts and (self.root / parent).is_file():
                raise InvalidRefName(f"ref {name} conflicts with an existing ref {parent.as_posix()} "
                                     f"(a name cannot be both a branch and a folder of branches)")

    def write_ref(self, name: str, value: str | None, fsync: bool) -> None:
        path = self._path(name)
        if value is None:
            path.unlink(missing_ok=True)
            if fsync:
                fsync_dir(path.parent)
            return
        if path.is_dir():
            raise InvalidRefName(f"ref {name} conflicts with existing refs under {name}/")
        try:
            self._replace(path, value, fsync)
        except (NotADirectoryError, FileExistsError):
            raise InvalidRefName(f"ref {name} conflicts with an existing ref (a name cannot be "
                                 f"both a branch and a folder of branches)") from None

    def _replace(self, path: Path, value: str, fsync: bool) -> None:
        """Write `value` to PATH.lock and rename it over PATH. Under the transaction lock, so a
        lock file left by a killed process is simply overwritten."""
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path.with_name(path.name + ".lock"), path, f"{value}\n".encode(), fsync)

    def append_reflog(self, name: str, entry: ReflogEntry, fsync: bool) -> None:
        self._append_reflog(name, entry, fsync=fsync)
