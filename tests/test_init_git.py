"""`ctx init` inside a git work tree keeps `.ctx/` out of `git status` (issue 30, item 5), and a
second `ctx init` says the store existed (item 9)."""

from __future__ import annotations

import pygit2

from .clitools import Ctx


def _status(path) -> dict:
    return pygit2.Repository(str(path)).status()


def test_init_in_a_git_work_tree_excludes_the_store(tmp_path):
    work = tmp_path / "project"
    pygit2.init_repository(str(work))
    (work / "README").write_text("hi\n")
    res = Ctx(work)("init", str(work))
    assert "Initialized ctxstore" in res.stdout and "info/exclude" in res.stdout
    assert set(_status(work)) == {"README"}  # .ctx/ is not untracked
    assert not (work / ".gitignore").exists()  # the team's file is never touched
    again = Ctx(work)("init", str(work))
    assert "Reinitialized existing ctxstore" in again.stdout
    assert "info/exclude" not in again.stdout  # already excluded: nothing added twice
    assert (work / ".git" / "info" / "exclude").read_text().count("/.ctx/") == 1


def test_init_in_a_subfolder_and_outside_git(tmp_path):
    work = tmp_path / "project"
    pygit2.init_repository(str(work))
    (work / "runs").mkdir()
    Ctx(work / "runs")("init", str(work / "runs"))
    assert "/runs/.ctx/" in (work / ".git" / "info" / "exclude").read_text()
    assert _status(work) == {}
    plain = tmp_path / "plain"
    plain.mkdir()
    res = Ctx(plain)("init", str(plain))
    assert "info/exclude" not in res.stdout and (plain / ".ctx").is_dir()


def test_a_store_git_already_ignores_is_left_alone(tmp_path):
    work = tmp_path / "project"
    pygit2.init_repository(str(work))
    (work / ".gitignore").write_text(".ctx/\n")
    res = Ctx(work)("init", str(work))
    assert "info/exclude" not in res.stdout
    assert "/.ctx/" not in (work / ".git" / "info" / "exclude").read_text()


def test_init_never_writes_through_a_planted_link(tmp_path):
    """A hostile work tree: .git/info is a symlink to a folder outside, or commondir points
    somewhere that is not this worktree's main repository. Nothing outside is written."""
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "project"
    pygit2.init_repository(str(work))
    info = work / ".git" / "info"
    for f in info.iterdir():
        f.unlink()
    info.rmdir()
    os.symlink(outside, info)
    Ctx(work)("init", str(work))
    assert list(outside.iterdir()) == []
    other = tmp_path / "other"
    pygit2.init_repository(str(other))
    (other / ".git" / "commondir").write_text(str(outside) + "\n")
    Ctx(other)("init", str(other))
    assert list(outside.iterdir()) == []
