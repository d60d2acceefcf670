"""`ctx init`: create (or find) the store, and keep it out of the git work tree it sits in.

A `.ctx/` inside a git work tree showed up in `git status` as untracked, inviting a user to
commit a store of agent sessions (prompts, tool output, secrets) with their code. Like jj
and many tools that keep state beside a repository, ctx adds the store's path to that
repository's own `.git/info/exclude` (never the user's `.gitignore`, which is shared with the
team) and says so. Nothing is written when git already ignores it or there is no work tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..repo import Repository
from ..repo.repository import CTX_DIRNAME


@dataclass
class InitResult:
    path: str
    created: bool
    excluded_in: str = ""  # the exclude file a line was added to ("" if none)
    pattern: str = ""


def init_store(directory: str | os.PathLike = ".", **settings) -> InitResult:
    """Create `DIRECTORY/.ctx` (or find it) and exclude it from the enclosing git work tree."""
    root = Path(directory).resolve() / CTX_DIRNAME
    created = not (root / "config.json").exists()
    with Repository.init(directory, **settings) as repo:
        result = InitResult(str(repo.path), created)
    exclude = _git_exclude(root)
    if exclude is not None:
        result.excluded_in, result.pattern = str(exclude[0]), exclude[1]
    return result


def _git_exclude(store_dir: Path) -> tuple[Path, str] | None:
    """Add STORE_DIR to the info/exclude of the git repository whose work tree holds it;
    (exclude file, pattern) when a line was added, None when nothing was needed."""
    import pygit2  # a core dependency; loaded only by `ctx init`

    found = pygit2.discover_repository(str(store_dir.parent))
    if not found:
        return None
    try:
        git = pygit2.Repository(found)
    except pygit2.GitError:
        return None
    if git.is_bare or not git.workdir:
        return None
    workdir = Path(git.workdir).resolve()
    try:
        rel = store_dir.resolve().relative_to(workdir)
    except ValueError:
        return None
    if git.path_is_ignored(rel.as_posix() + "/") or git.path_is_ignored(rel.as_posix()):
        return None
    gitdir = Path(git.path).resolve()
    common = gitdir / "commondir"  # a linked worktree: info/exclude is the main repository's
    if common.is_file():
        main = (gitdir / common.read_text().strip()).resolve()
        if gitdir.parent.parent != main:  # not <main>/worktrees/<name>: a link we do not trust
            return None
        gitdir = main
    info = gitdir / "info"
    exclude = info / "exclude"
    if info.is_symlink() or exclude.is_symlink():  # never written through a link
        return None
    pattern = "/" + rel.as_posix() + "/"
    info.mkdir(exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if pattern in text.splitlines():
        return None
    fd = os.open(exclude, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        if text and not text.endswith("\n"):
            fh.write("\n")
        fh.write(f"# the ctxstore of this work tree (added by `ctx init`)\n{pattern}\n")
    return exclude, pattern
