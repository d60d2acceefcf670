"""One containment rule for every path that comes from data (docs/workspace.md "Containment").

A path from data — a snapshot tree's entry, a restore scope, a transcript's `backupFileName`,
a session's `cwd`, anything a pack, remote, transcript or hook payload names — is
*relative to a root the user chose* (the project: the directory holding `.ctx`, or an explicit
`--root`), never the other way round:

- `check_name(path)`: the names git itself refuses are refused here too: empty, absolute,
  `.` or `..` components, `.git` in any case, a backslash, NUL (`BadPath`, naming the path).
- `inside(root, path)`: an absolute path from data is accepted only if it resolves (symlinks
  included) inside ROOT; the answer is the path relative to ROOT.
- `Dir`: walks from ROOT one component at a time with `openat` and `O_NOFOLLOW|O_DIRECTORY`,
  so no write or delete ever follows a symlink, whatever replaced a directory meanwhile. Every
  file restore writes or deletes goes through it.

Writers check every path before the first write (`check_parents`), so a refusal writes
nothing; the `openat` walk then also holds against a race.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import InvalidInput

#: Names git refuses as a tree entry or path component (checked case-insensitively).
_REFUSED = {"", ".", "..", ".git"}


class BadPath(InvalidInput):
    """A path from data that is not a plain relative path inside the root (absolute, `..`,
    `.git`, NUL, backslash) or that would be reached through a symlink: refused, nothing read
    or written. The message names the path."""


def name_problem(path: str) -> str | None:
    """Why git would refuse PATH (a `/`-separated path from a tree or a record), or None."""
    if not isinstance(path, str) or not path:
        return "an empty path"
    if "\0" in path:
        return "a NUL byte in the path"
    if path.startswith("/"):
        return "an absolute path"
    if "\\" in path:
        return "a backslash in the path"
    for part in path.split("/"):
        if part.lower() in _REFUSED or part.lower().rstrip(". ") == ".git":
            return f"a component {part!r}" if part else "an empty component"
    return None


def check_name(path: str, what: str = "") -> str:
    """PATH if it is a plain relative path; BadPath naming it (and WHAT it came from) else."""
    problem = name_problem(path)
    if problem is not None:
        raise BadPath(f"{what + ': ' if what else ''}{path!r}: {problem} — refused "
                      f"(only plain paths inside the project are written or read)")
    return path


def inside(root: str | os.PathLike, path: str | os.PathLike) -> str | None:
    """PATH relative to ROOT ('/'-separated) if PATH (absolute, or relative to ROOT) lies
    inside ROOT once resolved, symlinks included; None if it leaves ROOT or is ROOT itself."""
    base = Path(os.path.realpath(root))
    p = Path(path)
    full = Path(os.path.realpath(p if p.is_absolute() else base / p))
    if full == base or base not in full.parents:
        return None
    return full.relative_to(base).as_posix()


def is_within(root: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Is PATH ROOT itself or inside it (resolved)?"""
    base = os.path.realpath(root)
    full = os.path.realpath(path)
    return full == base or full.startswith(base.rstrip("/") + "/")


def check_parents(root: str, path: str) -> None:
    """Refuse (BadPath) PATH if a directory on the way to it under ROOT is a symlink or not a
    directory that can be walked (absent is fine: it will be created)."""
    check_name(path)
    cur = root
    for part in path.split("/")[:-1]:
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise BadPath(f"{path}: {os.path.relpath(cur, root)} is a symlink "
                          f"(to {os.readlink(cur)}): refused, a restore never writes through one")
        if not stat.S_ISDIR(st.st_mode):
            return  # a file in the way: the writer reports it


class Dir:
    """A directory under ROOT opened without following symlinks (use as a context manager).

    `Dir(root, "a/b", create=True)` opens ROOT, then `a`, then `b` with openat and
    O_NOFOLLOW|O_DIRECTORY, creating missing ones; a component that is a symlink fails with
    BadPath, one that is a file with FileExistsError/NotADirectoryError."""

    def __init__(self, root: str, rel_dir: str, *, create: bool = False) -> None:
        self.root, self.rel, self.create = root, rel_dir, create
        self.fd = -1

    def __enter__(self) -> Dir:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.root, flags)
        try:
            for part in [p for p in self.rel.split("/") if p]:
                check_name(part)
                try:
                    nxt = os.open(part, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not self.create:
                        raise
                    os.mkdir(part, 0o777, dir_fd=fd)
                    nxt = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and \
                            stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):
                        raise BadPath(f"{self.rel}: {part} is a symlink: refused, never "
                                      f"followed out of {self.root}") from None
                    raise
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.lstat(name, dir_fd=self.fd)
        except FileNotFoundError:
            return None


def split(path: str) -> tuple[str, str]:
    """('dir/of', 'name') of a '/'-separated relative path."""
    head, _, name = path.rpartition("/")
    return head, name


def read_inside(root: str | os.PathLike, rel: str) -> bytes:
    """The bytes of file REL under ROOT, read without following any symlink on the way (the
    file itself included): for paths that come from data. BadPath / OSError otherwise."""
    check_name(rel)
    head, name = split(rel)
    with Dir(str(root), head) as d:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=d.fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadPath(f"{rel}: not a regular file under {root}")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)
