"""Files the user names — transcripts to import, exports, packs, artifacts, batch and payload
input: one way to open them, one way to replace them, one mapping of operating-system errors.

Every OSError on such a file becomes one of two errors, wherever it happens:

- a named input that does not exist: `NotFound` (exit 3), "no such file: PATH";
- anything else (permissions, disk full, a directory where a file was expected, a missing
  output directory): `IOFailure` (exit 16), "cannot read PATH: reason" / "cannot write ...".

The store's own files are not user files: they go through ctxstore/lockfile.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from .errors import CtxError, InvalidInput, IOFailure, NotFound


def check_name(path: str | os.PathLike) -> str:
    """PATH as a string; InvalidInput if no file can have that name (a NUL byte)."""
    where = os.fspath(path)
    if "\x00" in where:
        raise InvalidInput(f"{where!r} is not a file name (it contains a NUL byte)")
    return where


def user_file_error(exc: OSError, path: str | os.PathLike, action: str = "read") -> CtxError:
    """The CtxError for `exc`, met while `action` ("read" or "write") on the user's PATH."""
    where = os.fspath(path)
    if action == "read" and isinstance(exc, FileNotFoundError | NotADirectoryError):
        return NotFound(f"no such file: {where}", path=where)
    reason = " ".join((exc.strerror or str(exc) or type(exc).__name__).split())
    return IOFailure(f"cannot {action} {where}: {reason}", path=where)


def open_input(path: str | os.PathLike, mode: str = "rb", **kwargs: Any) -> IO:
    """`open(path, mode)` for reading a file the user named."""
    check_name(path)
    try:
        return open(path, mode, **kwargs)
    except OSError as exc:
        raise user_file_error(exc, path, "read") from None


@contextlib.contextmanager
def replace_user_file(path: str | os.PathLike, mode: str = "wb", **kwargs: Any
                      ) -> Iterator[IO]:
    """Write a new version of the user's file PATH: into a new temporary file beside it (same
    file system), fsync'd and renamed over PATH only when the block finishes without error;
    otherwise the temporary file is removed and PATH is as it was. The file keeps PATH's
    permission bits (a new one gets 0666 minus the umask, as `open` would give it). Any
    OSError, here or in the block, is raised as `user_file_error(exc, PATH, "write")`."""
    target = os.path.abspath(check_name(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as exc:
        raise user_file_error(exc, path, "write") from None
    try:
        try:
            perms = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            perms = 0o666 & ~_umask()
        os.fchmod(fd, perms)  # mkstemp's 0600 would otherwise replace the file's own mode
        with open(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise user_file_error(exc, path, "write") from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_json_object(path: str | os.PathLike) -> dict:
    """A user's JSON settings file (Claude Code's settings, an MCP client's config) as a dict:
    {} when it is missing or blank; InvalidInput naming the file and line when it is not a JSON
    object, so a caller that merges into it leaves it as it is."""
    if not os.path.exists(path):
        return {}
    with open_input(path, "r", encoding="utf-8") as fh:
        text = fh.read()
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{os.fspath(path)}:{exc.lineno}: not valid JSON ({exc.msg}); "
                           f"left as it is") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{os.fspath(path)}:1: a JSON object was expected; left as it is")
    return value
