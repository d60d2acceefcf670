"""The write ordering of docs/format.md, "Transactions", as the file system sees it.

What a transaction fsyncs, renames and unlinks is recorded while it runs (os.fsync,
os.replace, os.unlink and appending opens, observed from outside the code under test) and
compared with the documented steps for each durability mode: the journal is the commit point
(written as `journal.tmp`, fsync'd, renamed, directory fsync'd, except under "never"); under
"always" every reflog line, ref file and `op-head` of step 7 is fsync'd too, and `.ctx/` after
the journal is removed; under "never" nothing is fsync'd at all. A power cut between two steps
can only keep what these fsyncs made durable, so a missing fsync is a lost ref move."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxstore.porcelain import branches as pb
from ctxstore.porcelain import sessions as ps
from ctxstore.refs import FileRefs
from ctxstore.repo import Repository


class Trace:
    """Records the store's file-system steps, as paths relative to `.ctx/`."""

    def __init__(self, root: Path, monkeypatch) -> None:
        self.root = root
        self.steps: list[str] = []
        real_fsync, real_fdatasync = os.fsync, os.fdatasync
        real_replace, real_unlink, real_open = os.replace, os.unlink, os.open

        def fsync(fd):
            self._add("fsync", os.readlink(f"/proc/self/fd/{fd}"))
            return real_fsync(fd)

        def fdatasync(fd):
            self._add("fsync", os.readlink(f"/proc/self/fd/{fd}"))
            return real_fdatasync(fd)

        def replace(src, dst, **kw):
            self._add("rename", src, dst)
            return real_replace(src, dst, **kw)

        def unlink(path, **kw):
            self._add("unlink", path)
            return real_unlink(path, **kw)

        def open_(path, flags, *args, **kw):
            if flags & os.O_APPEND:
                self._add("append", path)
            return real_open(path, flags, *args, **kw)

        for name, fn in (("fsync", fsync), ("fdatasync", fdatasync), ("replace", replace), ("unlink", unlink),
                         ("open", open_)):
            monkeypatch.setattr(os, name, fn)

    def _rel(self, path) -> str | None:
        p = Path(os.fspath(path))
        try:
            rel = p.relative_to(self.root)
        except ValueError:
            return None
        if rel.parts and rel.parts[0] == "objects":
            return "objects"  # the object store's own files: only whether they were synced
        text = rel.as_posix() if rel.parts else "."
        return text + "/" if p.is_dir() else text

    def _add(self, what: str, *paths) -> None:
        rels = [self._rel(p) for p in paths]
        if None in rels:
            return
        self.steps.append(" ".join([what, *rels]))


def _store(tmp_path, durability):
    repo = Repository.init(tmp_path, durability=durability)
    sid, _root = repo.new_session(title="t")
    return repo, sid, tmp_path / ".ctx"


def _without_objects(steps):
    return [s for s in steps if "objects" not in s]


def _step7_ref(ref, fsync):
    """Step 7 for one branch HEAD names: its reflog line, HEAD's, the ref file by rename."""
    return [f"append logs/{ref}", *([f"fsync logs/{ref}"] if fsync else []),
            "append logs/HEAD", *(["fsync logs/HEAD"] if fsync else []),
            *([f"fsync {ref}.lock"] if fsync else []), f"rename {ref}.lock {ref}",
            *([f"fsync {ref.rsplit('/', 1)[0]}/"] if fsync else [])]


def _commit(fsync):
    """Step 6, the commit point."""
    return [*(["fsync journal.tmp"] if fsync else []), "rename journal.tmp journal",
            *(["fsync ./"] if fsync else [])]


def _finish(fsync):
    """The end of step 7 (op-head) and step 8."""
    return [*(["fsync op-head.lock"] if fsync else []), "rename op-head.lock op-head",
            *(["fsync ./"] if fsync else []), "unlink journal", *(["fsync ./"] if fsync else [])]


@pytest.mark.parametrize("durability, journal_synced, all_synced", [
    ("always", True, True), ("batch", True, False), ("never", False, False)])
def test_an_append_follows_the_documented_write_ordering(tmp_path, monkeypatch, durability,
                                                         journal_synced, all_synced):
    repo, sid, ctx = _store(tmp_path, durability)
    main = f"refs/sessions/{sid}/main"
    trace = Trace(ctx, monkeypatch)
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "hi"})
    steps = trace.steps
    assert _without_objects(steps) == [*_commit(journal_synced),
                                       *_step7_ref(main, all_synced), *_finish(all_synced)]
    # step 5 before step 6: the objects a ref will name are durable before the commit point
    synced_objects = [i for i, s in enumerate(steps) if s == "fsync objects"]
    if durability == "never":
        assert not any(s.startswith("fsync") for s in steps)
    else:
        assert synced_objects and synced_objects[0] < steps.index("rename journal.tmp journal")


@pytest.mark.parametrize("durability, journal_synced, all_synced", [
    ("always", True, True), ("batch", True, False), ("never", False, False)])
def test_a_branch_deletion_follows_the_documented_write_ordering(tmp_path, monkeypatch,
                                                                 durability, journal_synced,
                                                                 all_synced):
    repo, sid, ctx = _store(tmp_path, durability)
    pb.create_branch(repo, "side")
    side = f"refs/sessions/{sid}/side"
    trace = Trace(ctx, monkeypatch)
    pb.delete_branch(repo, "side")
    assert _without_objects(trace.steps) == [
        *_commit(journal_synced),
        f"append logs/{side}", *([f"fsync logs/{side}"] if all_synced else []),
        f"unlink {side}", *([f"fsync refs/sessions/{sid}/"] if all_synced else []),
        *_finish(all_synced)]
    assert repo.refs.read(side) is None


def test_compare_and_swap_moves_sync_unless_told_not_to(tmp_path, monkeypatch):
    """FileRefs.set_if_equals (outside transactions: the refs contract) fsyncs by default."""
    refs = FileRefs(tmp_path)
    ref, a, b = "refs/sessions/s/main", "a" * 64, "b" * 64
    trace = Trace(tmp_path, monkeypatch)
    refs.set_if_equals(ref, None, a)
    assert trace.steps == [f"append logs/{ref}", f"fsync logs/{ref}",
                           f"fsync {ref}.lock", f"rename {ref}.lock {ref}", "fsync refs/sessions/s/"]
    trace.steps.clear()
    refs.set_if_equals(ref, a, b, fsync=False)
    assert trace.steps == [f"append logs/{ref}", f"rename {ref}.lock {ref}"]
    trace.steps.clear()
    refs.set_if_equals(ref, b, None)
    assert trace.steps == [f"append logs/{ref}", f"fsync logs/{ref}", f"unlink {ref}",
                           f"unlink {ref}.lock"]
    trace.steps.clear()
    refs.set_if_equals(ref, None, a)
    refs.set_head_symbolic(ref)
    trace.steps.clear()
    refs.set_if_equals(ref, a, b)  # HEAD names it: HEAD's reflog line is synced too
    assert trace.steps[-2:] == ["append logs/HEAD", "fsync logs/HEAD"]
    trace.steps.clear()
    refs.write_journal(b"{}\n")  # the primitive's default is durable
    assert trace.steps == ["fsync journal.tmp", "rename journal.tmp journal", "fsync ./"]


def test_recovery_syncs_every_step_it_replays(tmp_path, monkeypatch):
    """Repository.open rolls an interrupted journal forward with every write fsync'd, whatever
    the store's durability: it runs once, and the journal is removed at its end."""
    repo, sid, ctx = _store(tmp_path, "never")
    main = f"refs/sessions/{sid}/main"
    with repo.transaction() as tx:
        eid = tx.event("UserPromptSubmitted", "user", {"text": "x"}, (repo.refs.read(main),))
    from ctxstore.repo.transaction import Journal, Move

    repo.refs.write_journal(Journal("f" * 64, 1, "ctx", (Move(main, repo.refs.read(main), eid,
                                                              "m"),)).encode(), fsync=False)
    repo.close()
    trace = Trace(ctx, monkeypatch)
    Repository.open(tmp_path).close()
    assert _without_objects(trace.steps) == [*_step7_ref(main, True), *_finish(True)]


def test_a_commit_under_always_syncs_the_journal_it_rolls_forward(tmp_path, monkeypatch):
    repo, sid, ctx = _store(tmp_path, "always")
    main = f"refs/sessions/{sid}/main"
    from ctxstore.porcelain import branches as pb
    from ctxstore.repo.transaction import Journal, Move

    pb.create_branch(repo, "side")
    side = f"refs/sessions/{sid}/side"
    root = repo.refs.read(main)
    with repo.transaction() as tx:
        eid = tx.event("UserPromptSubmitted", "user", {"text": "x"}, (root,))
    repo.refs.write_journal(Journal(repo.refs.read_op_head(), 1, "ctx",
                                    (Move(side, root, eid, "dead"),)).encode())
    trace = Trace(ctx, monkeypatch)
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "y"})
    steps = _without_objects(trace.steps)
    replay = [f"append logs/{side}", f"fsync logs/{side}", f"fsync {side}.lock",
              f"rename {side}.lock {side}", f"fsync refs/sessions/{sid}/"]
    assert steps[:len(replay)] == replay
