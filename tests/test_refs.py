import multiprocessing
import os
from pathlib import Path

import pytest

from ctxstore.errors import CorruptStore, InvalidRefName, LockHeld, RefConflict
from ctxstore.refs import FileRefs, MemoryRefs, check_branch_name
from ctxstore.refs.names import check_ref_name

from .refs_contract import REF, A, B, RefsContract


class TestMemoryRefs(RefsContract):
    def make_refs(self, tmp_path):
        return MemoryRefs()


class TestFileRefs(RefsContract):
    def make_refs(self, tmp_path):
        return FileRefs(tmp_path / ".ctx")

    def test_files_on_disk(self, tmp_path):
        refs = FileRefs(tmp_path)
        refs.set_if_equals(REF, None, A, message="create it")
        assert (tmp_path / REF).read_text() == A + "\n"
        line = (tmp_path / "logs" / REF).read_text()
        assert line.startswith("0" * 64 + " " + A + " ") and line.endswith("\tcreate it\n")
        assert not list(tmp_path.rglob("*.lock"))

    def test_stale_lock_is_clear_error(self, tmp_path, monkeypatch):
        refs = FileRefs(tmp_path)
        refs.set_if_equals(REF, None, A)
        lock = tmp_path / (REF + ".lock")
        lock.write_text("")
        from ctxstore import lockfile

        monkeypatch.setattr(lockfile, "DEFAULT_WAIT", 0.05)  # read when the lock is made
        assert lockfile.LockFile(tmp_path / REF).wait == 0.05
        with pytest.raises(LockHeld) as err:
            refs.set_if_equals(REF, A, B)
        assert str(lock) in str(err.value)
        assert refs.read(REF) == A

    def test_stray_files_are_not_refs(self, tmp_path):
        refs = FileRefs(tmp_path)
        refs.set_if_equals(REF, None, A, message="create it")
        folder = (tmp_path / REF).parent
        (folder / (Path(REF).name + "~")).write_text(A + "\n")  # an editor's backup
        (folder / ".x.swp").write_bytes(b"\x00\xff\xfe")
        (tmp_path / "logs" / (REF + "~")).write_text("")
        assert list(refs.iter_refs()) == [(REF, A)]
        assert refs.reflog_names() == [REF]

    def test_a_damaged_ref_is_never_skipped(self, tmp_path):
        """A file with a ref's name but not an id in it is damage: listing refs raises
        CorruptStore naming the file (line 1), or, for fsck, collects it."""
        refs = FileRefs(tmp_path)
        refs.set_if_equals(REF, None, A, message="create it")
        folder = (tmp_path / REF).parent
        (folder / "junk").write_text("not an id\n")
        (folder / "binary").write_bytes(b"\xff\xfe\x00")
        with pytest.raises(CorruptStore, match=f"{folder / 'binary'}:1: "):
            list(refs.iter_refs())
        damaged: list = []
        assert list(refs.iter_refs(damaged=damaged)) == [(REF, A)]
        assert sorted(e.details["path"] for e in damaged) == [str(folder / "binary"),
                                                             str(folder / "junk")]
        for bad in ("junk", "binary"):  # read() of a damaged ref says so too
            with pytest.raises(CorruptStore, match=":1: "):
                refs.read(str(Path(REF).parent / bad))

    def test_reflog_name_stays_inside_logs(self, tmp_path):
        refs = FileRefs(tmp_path / ".ctx")
        refs.set_if_equals(REF, None, A)
        (tmp_path / "outside").write_text(f"{'0' * 64} {A} 1 me\tsecret\n")
        with pytest.raises(InvalidRefName):
            refs.reflog("../../outside")

    def test_branch_and_folder_conflict(self, tmp_path):
        refs = FileRefs(tmp_path)
        refs.set_if_equals("refs/sessions/s/a", None, A)
        with pytest.raises(InvalidRefName):
            refs.set_if_equals("refs/sessions/s/a/b", None, A)


def _racer(root, n, out, barrier=None):
    refs = FileRefs(root)
    wins = conflicts = 0
    for i in range(n):
        if barrier is not None:
            barrier.wait(30)  # the previous round's moves are done
        cur = refs.read(REF)
        new = f"{os.getpid() % 256:02x}{i:062x}"
        if barrier is not None:
            barrier.wait(30)  # both racers have read the same tip: one CAS must lose
        try:
            refs.set_if_equals(REF, cur, new, fsync=False)
            wins += 1
        except RefConflict:
            conflicts += 1
    out.put((wins, conflicts))


def _race(tmp_path, n, lockstep):
    refs = FileRefs(tmp_path)
    refs.set_if_equals(REF, None, A)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    barrier = ctx.Barrier(2) if lockstep else None
    procs = [ctx.Process(target=_racer, args=(tmp_path, n, q, barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return refs, results


def _assert_chain(refs, wins):
    """Every successful CAS is in the reflog exactly once, chained old->new: nothing lost."""
    log = refs.reflog(REF)
    assert len(log) == 1 + wins
    for prev, cur in zip(log, log[1:], strict=False):
        assert cur.old == prev.new  # a chain: no move was based on a stale read
    assert refs.read(REF) == log[-1].new


def test_cas_race_between_two_processes(tmp_path):
    """Two processes read the same tip and both try to move it, round after round: exactly one
    wins each round and the other gets RefConflict — the race really happens, every time."""
    refs, results = _race(tmp_path, 40, lockstep=True)
    assert sum(w for w, _ in results) == 40
    assert sum(c for _, c in results) == 40  # one conflict per round, none lost or doubled
    _assert_chain(refs, 40)


def test_cas_free_running_race_loses_no_move(tmp_path):
    refs, results = _race(tmp_path, 200, lockstep=False)
    wins = sum(w for w, _ in results)
    assert wins + sum(c for _, c in results) == 400 and wins >= 200
    _assert_chain(refs, wins)


@pytest.mark.parametrize("name", ["main", "feature/x", "try-2", "a.b"])
def test_good_branch_names(name):
    assert check_branch_name(name) == name


@pytest.mark.parametrize("name", ["HEAD", "-x", "a..b", "x.lock", "a b", "", "@", "a:b", "a?"])
def test_bad_branch_names(name):
    with pytest.raises(InvalidRefName):
        check_branch_name(name)


@pytest.mark.parametrize("name,rule", [
    ("", "empty"),
    ("@", "'@' alone is reserved"),
    ("/refs/x", "must not start or end with '/'"),
    ("refs/x/", "must not start or end with '/'"),
    ("-x", "must not start with '-'"),
    ("refs//x", "must not contain '//'"),
    ("refs/a..b", "must not contain '..'"),
    ("refs/a@{1}", "must not contain '@{'"),
    ("refs/x.", "must not end with '.'"),
    ("refs/a\x01b", "must not contain control characters"),
    ("refs/a\x7fb", "must not contain control characters"),
    ("refs/a b", "must not contain ' '"),
    ("refs/a~1", "must not contain '~'"),
    ("refs/a^", "must not contain '^'"),
    ("refs/a:b", "must not contain ':'"),
    ("refs/a?", "must not contain '?'"),
    ("refs/a*", "must not contain '*'"),
    ("refs/a[b", "must not contain '['"),
    ("refs/a\\b", "must not contain '\\\\'"),
    ("refs/.hidden", "no component may start with '.'"),
    ("refs/x.lock/y", "no component may end with '.lock'"),
    ("refs/" + "x" * 1100, "longer than 1024 bytes"),
])
def test_each_ref_name_rule_says_which_rule(name, rule):
    """The error names the rule that was broken (one clear line), not just that it was."""
    with pytest.raises(InvalidRefName) as err:
        check_ref_name(name)
    assert str(err.value) == f"invalid ref name {name!r}: {rule}"


def test_boundaries_of_the_ref_name_rules():
    for ok in ("refs/a.b", "refs/x/y.locked", "refs/a@b", "refs/" + "x" * 1019, "a/b-c",
               "refs/a\x20b".replace(" ", "_"), "refs/\x80x"):
        assert check_ref_name(ok) == ok
    with pytest.raises(InvalidRefName, match=r"^invalid branch name 'a\.\.b': must not contain"):
        check_branch_name("a..b")
    with pytest.raises(InvalidRefName, match=r"^invalid branch name 'HEAD'$"):
        check_branch_name("HEAD")
