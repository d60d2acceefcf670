"""The git object database under `.ctx/workspace.git` and the staging of a root into it.

Only this module talks to libgit2 about files on disk. A snapshot stages the root with
libgit2's own `add -A` (so `.gitignore` at every level, the global excludes file and
`info/exclude` are honoured exactly as git would) into the stat cache of `workspace.git` —
never into the user's `.git/index` — and writes the tree. Unchanged files are not re-read:
the stat cache (one git index per root, parked under `ctx-indexes/` while another root is
staged) says they are unchanged. See docs/format.md "Workspace snapshots".
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, IOFailure, NotFound
from ..lockfile import clear_git_locks, replace_file

GITDIR_NAME = "workspace.git"
#: What every snapshot leaves out besides the user's ignore rules: a store is never recorded.
BASE_EXCLUDES = ("# written by ctx before each snapshot (docs/format.md)\n.ctx/\n"
                 ".ctx-restore-*.tmp\n")

#: git object type numbers (libgit2's GIT_OBJECT_*) and names, for the loose form.
BLOB, TREE = 3, 2
TYPE_NAMES = {BLOB: "blob", TREE: "tree"}
NAME_TYPES = {v: k for k, v in TYPE_NAMES.items()}
#: Tree entry modes a snapshot may hold.
MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE = 0o100644, 0o100755, 0o120000, 0o040000


def replace_derived(path: Path, data: bytes) -> None:
    """Replace a derived file under workspace.git. Only a holder of snapshot_lock writes
    these, so a plain temporary name (not an O_EXCL lock file, which a kill -9 would leave
    behind to block the next snapshot) is safe."""
    replace_file(path.with_name(path.name + ".tmp"), path, data, fsync=False)


def root_key(root: str) -> str:
    """The file name a root's stat cache and newest-snapshot hint live under."""
    return hashlib.sha1(root.encode("utf-8")).hexdigest()


def gitdir_of(ctx_dir: Path) -> Path:
    return Path(ctx_dir) / GITDIR_NAME


def normalize_root(root: str | os.PathLike) -> str:
    path = Path(root).expanduser()
    if not path.exists():
        raise NotFound(f"{root}: no such directory")
    if not path.is_dir():
        raise InvalidInput(f"{root}: not a directory (a snapshot records a directory tree)")
    return str(path.resolve())


def open_gitdb(ctx_dir: Path, create: bool = True) -> Any:
    """The pygit2 repository of `workspace.git` (created bare on first use)."""
    import pygit2

    gitdir = gitdir_of(ctx_dir)
    try:
        if not (gitdir / "HEAD").exists():
            if not create:
                return None
            return pygit2.init_repository(str(gitdir), bare=True)
        return pygit2.Repository(str(gitdir))
    except pygit2.GitError as exc:
        raise IOFailure(f"{gitdir}: {exc}") from None


@contextmanager
def snapshot_lock(ctx_dir: Path) -> Iterator[None]:
    """flock on ctx-snapshot.lock: one snapshot or restore at a time (the stat cache is one
    file). The kernel drops it when the process dies, so a kill needs no cleanup."""
    gitdir = gitdir_of(ctx_dir)
    gitdir.mkdir(parents=True, exist_ok=True)
    fd = os.open(gitdir / "ctx-snapshot.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _use_index(gitdir: Path, root: str) -> None:
    """Make `index` the stat cache of ROOT, parking the previous root's (derived data: a
    missing or lost cache only means the next snapshot re-reads the files)."""
    marker = gitdir / "ctx-index-root"
    current = marker.read_text(encoding="utf-8") if marker.exists() else ""
    if current == root:
        return
    parked = gitdir / "ctx-indexes"
    parked.mkdir(exist_ok=True)
    index = gitdir / "index"
    if index.exists():
        if current:
            os.replace(index, parked / root_key(current))
        else:
            index.unlink()
    mine = parked / root_key(root)
    if mine.exists():
        os.replace(mine, index)
    replace_derived(marker, root.encode("utf-8"))


def _write_excludes(gitdir: Path, root: str, nested: tuple[str, ...] = ()) -> None:
    text = BASE_EXCLUDES
    if nested:  # staged file by file (_add_nested): libgit2's add_all stops at them
        text += "# nested git repositories\n" + "".join(f"/{n}/\n" for n in nested)
    user = Path(root) / ".git" / "info" / "exclude"
    if user.is_file():
        try:
            text += f"# from {user}\n" + user.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise IOFailure(f"{user}: {exc.strerror or exc}") from None
        if not text.endswith("\n"):
            text += "\n"
    path = gitdir / "info" / "exclude"
    path.parent.mkdir(exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8", errors="replace") != text:
        replace_derived(path, text.encode("utf-8"))


def stage(ctx_dir: Path, root: str) -> tuple[Any, str]:
    """Stage ROOT into workspace.git's stat cache and write its tree. The caller holds
    snapshot_lock. Returns (the pygit2 repository, with its workdir set to ROOT; tree id)."""
    import pygit2

    gitdir = gitdir_of(ctx_dir)
    # under snapshot_lock nobody else writes workspace.git: a lock file is left by a killed run
    clear_git_locks(gitdir)
    open_gitdb(ctx_dir)
    _use_index(gitdir, root)
    nested: list[str] = []
    try:
        while True:
            _write_excludes(gitdir, root, tuple(nested))
            git = pygit2.Repository(str(gitdir))  # re-read the ignore rules just written
            git.workdir = root
            index = git.index
            index.read(True)
            try:
                index.add_all()  # adds, updates and removes, like `git add -A`
                break
            except pygit2.GitError as exc:
                found = _NESTED.fullmatch(str(exc).strip())
                if found is None or found.group(1) in nested or len(nested) >= MAX_NESTED:
                    raise
                nested.append(found.group(1))  # a nested repository: its files, one by one
        for rel in nested:
            _add_nested(index, root, rel)
        tree = index.write_tree()
        index.write()
    except pygit2.GitError as exc:
        raise IOFailure(f"snapshot of {root}: {exc}") from None
    except OSError as exc:
        raise IOFailure(f"snapshot of {root}: {exc.strerror or exc}") from None
    return git, str(tree)


#: libgit2's refusal of a directory holding its own `.git` (a nested repository)
_NESTED = re.compile(r"invalid path: '(.+)/'")
MAX_NESTED = 256


def _add_nested(index: Any, root: str, rel: str) -> None:
    """Stage the files of the nested repository ROOT/REL as files of the root (what a restore
    can put back; git itself would record a gitlink naming a commit the snapshot cannot hold):
    every file its own ignore rules keep, never its `.git`. They are re-read at each snapshot
    (the stat cache does not cover them)."""
    import pygit2

    base = os.path.join(root, rel)
    for path in [e.path for e in index if e.path.startswith(rel + "/")]:
        index.remove(path)
    try:
        inner = pygit2.Repository(base)
    except pygit2.GitError:
        inner = None

    def ignored(path: str) -> bool:
        return inner is not None and inner.path_is_ignored(path)

    for dirpath, dirnames, filenames in os.walk(base):
        here = os.path.relpath(dirpath, base)
        here = "" if here == "." else here + "/"
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if d.lower() != ".git" and d not in links
                             and not ignored(here + d + "/"))
        for name in sorted(filenames + links):
            if name.lower() == ".git" or ignored(here + name):
                continue
            index.add(f"{rel}/{here}{name}")


def loose_bytes(type_num: int, data: bytes) -> bytes:
    """A git object in git's loose form (what its SHA-1 id hashes)."""
    return b"%s %d\0%s" % (TYPE_NAMES[type_num].encode(), len(data), data)


def parse_loose(raw: bytes) -> tuple[int, bytes]:
    head, sep, data = raw.partition(b"\0")
    name, _, size = head.partition(b" ")
    kind = NAME_TYPES.get(name.decode("ascii", "replace"))
    if not sep or kind is None or not size.isdigit() or int(size) != len(data):
        raise ValueError("not a git blob or tree in loose form")
    return kind, data


def git_id(raw: bytes) -> str:
    return hashlib.sha1(raw).hexdigest()
