"""Hostile input against `ctx restore` (issue 28, findings 1-3; docs/security.md): a received
snapshot never chooses where restore writes, a restore never writes or deletes through a
symlink out of the project, and a forced restore that fails part way loses nothing.

Each attack is built through the public API or the CLI; each test hashes every file of a decoy
home before and after."""

from __future__ import annotations

import errno
import importlib

import pytest

from ctxstore.errors import IOFailure
from ctxstore.manager import ContextManager
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.hostiletools import crafted_snapshot, decoy_home, tree_hashes

restore_mod = importlib.import_module("ctxstore.workspace.restore")


@pytest.fixture
def home(tmp_path):
    return decoy_home(tmp_path / "home")


def _project(tmp_path, name="project") -> tuple[Ctx, object]:
    root = tmp_path / name
    root.mkdir()
    ctx = Ctx(root)
    ctx("init", str(root))
    ctx("new")
    return ctx, root


def test_a_received_snapshot_does_not_choose_where_restore_writes(tmp_path, home):
    """Finding 1: a pack whose partial snapshot names the user's home as its root and carries
    .ssh/authorized_keys plants nothing there; the restore writes under the project only, and
    the before-state it records is the project's, not the home's (no private key stored)."""
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    a = Ctx(attacker)
    a("init", str(attacker))
    a("new", "--title", "innocent")
    repo = Repository.open(attacker / ".ctx")
    try:
        crafted_snapshot(repo, {".ssh/authorized_keys": b"ssh-ed25519 AAAA attacker\n"},
                         root=str(home))
    finally:
        repo.close()
    a("pack", "--all", "-o", str(tmp_path / "shared.ctxpack"))
    before = tree_hashes(home)

    ctx, project = _project(tmp_path)
    ctx("unpack", str(tmp_path / "shared.ctxpack"))
    sid = [s["id"] for s in ctx.json("sessions") if s.get("title") == "innocent"][0]
    ctx("checkout", sid)
    plan = ctx.json("restore", "main", "--force")
    assert tree_hashes(home) == before, "restore wrote into the snapshot's own root"
    assert plan["root"] == str(project.resolve())
    assert (project / ".ssh" / "authorized_keys").exists()  # inside the project: harmless
    snaps = [e for e in ctx.json("log") if e["payload"].get("workspace")]
    assert all(e["payload"]["root"] != str(home) for e in snaps
               if e["payload"]["reason"].startswith("restore"))


def test_restore_never_writes_through_a_symlinked_directory(tmp_path, home):
    """Finding 2: a project directory that became a symlink out of the project: `restore OLD`
    and `restore OLD --force` replace the link inside the project; nothing outside changes."""
    ctx, project = _project(tmp_path)
    (project / "data").mkdir()
    (project / "data" / "a.txt").write_text("project's a\n")
    (project / "data" / "new.txt").write_text("project's new\n")
    old = ctx.json("snapshot")["event"]
    for p in (project / "data").iterdir():
        p.unlink()
    (project / "data").rmdir()
    (project / "data").symlink_to(home / "outside")
    ctx("snapshot")
    before = tree_hashes(home)
    plan = ctx.json("restore", old, "--force")
    assert plan["applied"]
    assert tree_hashes(home) == before
    assert not (project / "data").is_symlink()
    assert (project / "data" / "a.txt").read_text() == "project's a\n"


def test_restore_of_one_path_below_a_symlink_is_refused_naming_it(tmp_path, home):
    """Finding 2: a restore limited to data/a.txt where data is (unsnapshotted) a symlink out
    of the project is refused (exit 10), names the link, writes nothing anywhere."""
    ctx, project = _project(tmp_path)
    (project / "data").mkdir()
    (project / "data" / "a.txt").write_text("project's a\n")
    old = ctx.json("snapshot")["event"]
    (project / "data" / "a.txt").unlink()
    (project / "data").rmdir()
    (project / "data").symlink_to(home / "outside")
    before = tree_hashes(home)
    err = ctx.fails(10, "restore", old, "data/a.txt", "--force")
    assert "data/a.txt" in err and "symlink" in err
    assert tree_hashes(home) == before
    assert (project / "data").is_symlink()


def test_crafted_tree_names_are_refused_before_anything_is_written(tmp_path, home):
    """A snapshot whose `absent` list or tree names `..`, an absolute path or `.git` is
    refused naming the path: nothing deleted outside, nothing written."""
    ctx, project = _project(tmp_path)
    (project / "keep.txt").write_text("mine\n")
    ctx("snapshot")
    repo = Repository.open(project / ".ctx")
    try:
        bad = crafted_snapshot(repo, {"ok.txt": b"x\n"}, root=str(project),
                               absent=["../home/.bashrc"])
        git_dir = crafted_snapshot(repo, {".GIT/hooks/post-checkout": b"#!/bin/sh\n"},
                                   root=str(project))
    finally:
        repo.close()
    before = tree_hashes(home)
    err = ctx.fails(10, "restore", bad, "--force")
    assert "../home/.bashrc" in err
    err = ctx.fails(10, "restore", git_dir, "--force")
    assert ".GIT" in err
    assert tree_hashes(home) == before and not (project / "ok.txt").exists()


def test_forced_restore_that_fails_part_way_records_the_before_state_first(tmp_path):
    """Finding 3: the target has a file where the project now has a directory (holding an
    ignored file): the forced restore fails (exit 16) naming it, says which files are as the
    target has them and which as they were, and the edits it overwrote are in the
    before-snapshot, which puts them back."""
    ctx, project = _project(tmp_path)
    (project / ".gitignore").write_text("*.log\n")
    (project / "a.txt").write_text("one\n")
    (project / "d").write_text("a file\n")
    old = ctx.json("snapshot")["event"]
    (project / "a.txt").write_text("user's work, never snapshotted\n")
    (project / "d").unlink()
    (project / "d").mkdir()
    (project / "d" / "cache.log").write_text("ignored\n")
    err = ctx.fails(16, "restore", old, "--force")
    assert "stopped at d:" in err and "as the target has them: a.txt" in err
    assert "as they were: d" in err
    assert (project / "a.txt").read_text() == "one\n"  # as the target has it
    assert (project / "d").is_dir()  # as it was
    before = [e for e in ctx.json("log") if e["payload"].get("reason", "").startswith(
        "restore: before")]
    assert len(before) == 1
    ctx("restore", before[0]["id"], "--force")
    assert (project / "a.txt").read_text() == "user's work, never snapshotted\n"


def test_a_full_disk_mid_restore_leaves_each_file_whole(tmp_path, monkeypatch):
    """Finding 3: ENOSPC on the second file: the first is as the target has it, the second
    and third as they were (never half written), and the before-state is recorded."""
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="ws")
    try:
        for n in "abc":
            (tmp_path / f"{n}.txt").write_text(f"{n} old\n")
        old = cm.snapshot_workspace().event
        for n in "abc":
            (tmp_path / f"{n}.txt").write_text(f"{n} edited\n")
        real = restore_mod._write
        calls = []

        def full(root, path, data, mode):
            calls.append(path)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, "No space left on device", path)
            return real(root, path, data, mode)

        monkeypatch.setattr(restore_mod, "_write", full)
        with pytest.raises(IOFailure) as info:
            cm.restore_workspace(old, force=True)
        assert "No space left" in str(info.value) and "stopped at b.txt" in str(info.value)
        assert [(tmp_path / f"{n}.txt").read_text() for n in "abc"] == \
            ["a old\n", "b edited\n", "c edited\n"]
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        monkeypatch.setattr(restore_mod, "_write", real)
        before = info.value.details["before"]
        cm.restore_workspace(before, force=True)
        assert [(tmp_path / f"{n}.txt").read_text() for n in "abc"] == \
            [f"{n} edited\n" for n in "abc"]
    finally:
        repo.close()


def test_kill_9_during_a_forced_restore_loses_nothing(tmp_path):
    """A real kill -9 while a forced restore writes: every file is whole (as it was, or as the
    target has it), and the before-snapshot, committed before the first write, puts every
    overwritten edit back."""
    import os
    import signal
    import subprocess
    import sys
    import time

    n = 1500
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="ws")
    (tmp_path / "f").mkdir()
    for i in range(n):
        (tmp_path / "f" / f"{i:04}.txt").write_text(f"old {i}\n" * 20)
    old = cm.snapshot_workspace().event
    for i in range(n):
        (tmp_path / "f" / f"{i:04}.txt").write_text(f"user's edit {i}\n" * 20)
    repo.close()
    script = ("from ctxstore.repo import Repository\n"
              f"repo = Repository.open({str(tmp_path / '.ctx')!r})\n"
              "from ctxstore.porcelain.workspace import restore\n"
              f"restore(repo, {old!r}, force=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    first = tmp_path / "f" / "0000.txt"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if first.read_text().startswith("old"):
            break
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    contents = [(tmp_path / "f" / f"{i:04}.txt").read_text() for i in range(n)]
    assert all(c in (f"old {i}\n" * 20, f"user's edit {i}\n" * 20)
               for i, c in enumerate(contents))
    ctx = Ctx(tmp_path)
    ctx("fsck", "--full")
    before = [e for e in ctx.json("log") if e["payload"].get("reason", "").startswith(
        "restore: before")]
    assert len(before) == 1
    ctx("restore", before[0]["id"], "--force")
    assert all((tmp_path / "f" / f"{i:04}.txt").read_text() == f"user's edit {i}\n" * 20
               for i in range(n))
