"""gc: unreachable objects go, reachable ones never do — even when gc is killed midway.

What must survive is computed by tests/oracles/reachability.py (a naive walk over every object
from the root files, written from docs/format.md), never by the `roots`/`links.reachable` gc
itself uses: an oracle that shares gc's code would agree with any bug in it."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import time

import pytest

from ctxstore.errors import LockHeld
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.maintenance import gc as pm
from ctxstore.refs import ReflogEntry
from ctxstore.repo import Repository, operations
from ctxstore.store.fsck import verify
from ctxstore.store.gclock import GcLock
from ctxstore.store.packstore import PackStore
from tests.oracles import reachability as oracle
from tests.test_links import build_repo

DAY_MS = 86400 * 1000


def _garbage_repo(path, n_garbage: int = 50, events: int = 6):
    repo, info = build_repo(path, events=events)
    garbage = [repo.objects.put_blob(os.urandom(64) + b"%d" % i) for i in range(n_garbage)]
    # a deleted branch whose history is only in a reflog entry (unexpired: must survive)
    ref = f"refs/sessions/{info['session']}/tmp"
    with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
        pass
    repo.refs.set_if_equals(ref, None, info["main"])
    with repo.transaction(ref) as tx:
        side = tx.append("MessageAdded", "agent", {"role": "custom", "text": "side"})
    repo.refs.set_if_equals(ref, side, None, message="deleted")
    info["side"] = side
    repo.objects.flush()
    return repo, info, garbage


def _live(repo, **expiry):
    """The oracle's answer: what gc must keep in this repository now."""
    return oracle.live(repo.path, repo.objects, **expiry)


def _assert_exactly(path, live, **expiry):
    """After a complete gc: every object live before it is there and intact, and nothing is
    there that the roots after it (gc itself may add an operation) do not reach."""
    repo = Repository.open(path)
    try:
        graph = oracle.ObjectGraph(repo.objects)  # re-reads and re-hashes every object
        assert live - graph.ids == set(), "gc lost live objects"
        assert graph.ids - oracle.live(path / ".ctx", repo.objects, **expiry) == set(), \
            "gc kept garbage"
    finally:
        repo.close()


def test_gc_removes_garbage_and_keeps_everything_reachable(tmp_path):
    repo, info, garbage = _garbage_repo(tmp_path)
    live = _live(repo)
    assert info["side"] in live and not live & set(garbage)
    assert len(live) < len(repo.objects)
    dry = pm.gc(repo, prune="now", dry_run=True)
    assert dry.objects_removed == len(repo.objects) - len(live)
    assert all(g in repo.objects for g in garbage)
    res = pm.gc(repo, prune="now")
    assert res.objects_removed == dry.objects_removed
    assert res.bytes_after < res.bytes_before
    repo.close()
    _assert_exactly(tmp_path, live)
    repo = Repository.open(tmp_path)
    assert list(verify(repo.objects)) == []


def test_detached_head_is_a_root(tmp_path):
    """A detached HEAD keeps its history alive when no branch and no reflog entry does."""
    repo, ref, tip, gone = _reset_away(tmp_path)
    repo.refs.set_head_detached(tip, message="checkout the deleted branch's tip")
    everything_expired = {"expire_days": 0, "unreachable_days": 0}
    live = _live(repo, **everything_expired)
    assert gone <= live  # only HEAD names them: no ref, and every reflog line expires
    pm.gc(repo, prune="now", expire="now", expire_unreachable="now")
    repo.close()
    _assert_exactly(tmp_path, live)
    # the control: with HEAD back on a branch the same objects are garbage, so the check above
    # could fail
    repo = Repository.open(tmp_path)
    main = next(name for name, _ in repo.refs.iter_refs("refs/") if name.endswith("/main"))
    repo.refs.set_head_symbolic(main)
    assert not gone & _live(repo, **everything_expired)
    control = _live(repo, **everything_expired)
    pm.gc(repo, prune="now", expire="now", expire_unreachable="now")
    repo.close()
    _assert_exactly(tmp_path, control)


def test_grace_period_keeps_new_packs(tmp_path):
    repo, _, garbage = _garbage_repo(tmp_path)
    res = pm.gc(repo)  # default 2.weeks.ago: everything is newer
    assert res.objects_removed == 0
    assert all(g in repo.objects for g in garbage)


def test_expired_reflog_entries_stop_protecting(tmp_path):
    repo, info, _ = _garbage_repo(tmp_path)
    ref = f"refs/sessions/{info['session']}/tmp"
    n_ops = len(list(operations.walk(repo)))
    assert info["side"] in _live(repo)  # protected by reflog entries and operations
    # 100 days on, the reflog entries and the operations that named `side` have expired
    later = time.time() + 100 * 86400
    live = _live(repo, now=later)
    assert info["side"] not in live
    res = pm.gc(repo, prune="now", now=later)
    assert res.reflog_expired >= 2
    assert info["side"] not in repo.objects
    assert repo.refs.reflog(ref) == []
    assert len(res.operations_expired) == n_ops > 0  # what undo can no longer restore
    repo.close()
    _assert_exactly(tmp_path, live, now=later)


def test_young_operations_keep_what_undo_needs(tmp_path):
    repo, info, _ = _garbage_repo(tmp_path)
    ref = f"refs/sessions/{info['session']}/tmp"
    aged = [ReflogEntry(e.old, e.new, e.ts_ms - 100 * DAY_MS, e.actor, e.message)
            for e in repo.refs.reflog(ref)]
    repo.refs.replace_reflog(ref, aged)
    live = _live(repo)
    assert info["side"] in live  # only operations of the last 90 days name it now
    res = pm.gc(repo, prune="now")
    assert res.reflog_expired == len(aged) and res.operations_expired == []
    assert info["side"] in repo.objects  # an operation of the last 90 days names it
    repo.close()
    _assert_exactly(tmp_path, live)


def test_reflog_expire_unreachable_after_30_days(tmp_path):
    repo, info, _ = _garbage_repo(tmp_path)
    main = f"refs/sessions/{info['session']}/main"
    entries = repo.refs.reflog(main)
    aged = [ReflogEntry(e.old, e.new, e.ts_ms - 40 * DAY_MS, e.actor, e.message) for e in entries]
    # an entry pointing at a side line, not on main's tip, 40 days old
    aged.append(ReflogEntry(info["main"], info["side"], entries[-1].ts_ms - 40 * DAY_MS, "t", "x"))
    repo.refs.replace_reflog(main, aged)
    dry = pm.reflog_expire(repo, dry_run=True, refs=[main])
    assert dry.expired == 1 and len(repo.refs.reflog(main)) == len(aged)
    res = pm.reflog_expire(repo, refs=[main])
    assert res.expired == 1 and len(repo.refs.reflog(main)) == len(entries)
    assert pm.reflog_expire(repo, expire="now", refs=[main]).expired == len(entries)


def test_parse_time():
    now = 1_000_000_000.0
    assert pm.parse_time("now", now) == now
    assert pm.parse_time("never", now) is None
    assert pm.parse_time("2.weeks.ago", now) == now - 14 * 86400
    assert pm.parse_time("90.days", now) == now - 90 * 86400
    assert pm.parse_time("2026-01-01", now) > now
    with pytest.raises(Exception, match="cannot read time"):
        pm.parse_time("soonish", now)


def _gc_child(path: str, kill_at: int, names) -> None:
    calls = [0]

    def step(name: str) -> None:
        calls[0] += 1
        if names is not None:  # written through at once: os._exit and SIGKILL flush nothing
            with open(names, "a") as f:
                f.write(name + "\n")
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)  # a real kill -9 at this durable step

    repo = Repository.open(path)
    pm.gc(repo, prune="now", step=step)
    os._exit(0)


def _many_packs(path, rounds: int = 4):
    repo, info, garbage = _garbage_repo(path)
    for r in range(rounds):  # several sealed packs, each with live and dead objects
        with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
            for i in range(20):
                tx.append("MessageAdded", "agent", {"role": "custom", "text": f"r{r} {i}"})
        for i in range(30):
            repo.objects.put_blob(b"dead %d %d" % (r, i) + os.urandom(8))
        repo.objects.flush()
        repo.objects.seal_active()
    return repo


def _run_gc_child(target, args, timeout=60):
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=target, args=args)
    proc.start()
    proc.join(timeout)
    assert not proc.is_alive(), "gc child hung"
    return proc.exitcode


def _steps_of_a_full_gc(template, work) -> list[str]:
    """The step names a complete gc of a copy of `template` goes through, in order."""
    shutil.copytree(template, work, copy_function=shutil.copy2)  # mtimes kept: same candidates
    names = work.parent / f"{work.name}.steps"
    assert _run_gc_child(_gc_child, (str(work / ".ctx"), 0, str(names))) == 0
    return names.read_text().splitlines()


def test_gc_killed_at_each_step_never_loses_a_reachable_object(tmp_path):
    template = tmp_path / "template"
    repo = _many_packs(template)
    live = _live(repo)
    assert len(live) < len(repo.objects)  # there is garbage to delete
    repo.close()
    steps = _steps_of_a_full_gc(template, tmp_path / "full")
    # every real step, including one delete per candidate pack
    assert steps[:2] == ["reflogs-expired", "marked"] and steps.count("pack-deleted") >= 4
    # docs/format.md "Garbage collection": seal, write the new pack, then its index, lock, and
    # only then delete — each a distinct point the loop below kills at
    assert steps[2:6] == ["sealed", "pack-written", "pack-index-written", "locked"]
    assert set(steps[6:]) == {"pack-deleted"}
    for kill_at, name in enumerate(steps, 1):
        work = tmp_path / f"kill-{kill_at}"
        shutil.copytree(template, work, copy_function=shutil.copy2)
        code = _run_gc_child(_gc_child, (str(work / ".ctx"), kill_at, None))
        assert code == -signal.SIGKILL, f"not killed at step {kill_at} ({name})"
        repo = Repository.open(work)
        graph = oracle.ObjectGraph(repo.objects)
        assert live <= graph.ids, f"killed after {name}: live objects lost"
        assert [p for p in verify(repo.objects) if p.kind != "pack"] == []
        pm.gc(repo, prune="now")  # a later gc finishes the job
        repo.close()
        _assert_exactly(work, live)


@pytest.mark.slow
def test_gc_killed_at_random_times(tmp_path):
    rnd = random.Random(8)
    repo = _many_packs(tmp_path, rounds=8)
    live = _live(repo)
    repo.close()
    ctx = multiprocessing.get_context("fork")
    for _ in range(6):
        proc = ctx.Process(target=_gc_child, args=(str(tmp_path / ".ctx"), -1, None))
        proc.start()
        time.sleep(rnd.uniform(0, 0.15))
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        check = Repository.open(tmp_path)
        for obj_id in live:
            check.objects.get_raw(obj_id)
        check.close()


def scratch_branch(repo, info) -> tuple[str, str]:
    """Branch `scratch` off main with two events and a blob: (its ref, its tip)."""
    ref = f"refs/sessions/{info['session']}/scratch"
    repo.refs.set_if_equals(ref, None, info["main"])
    with repo.transaction(ref) as tx:
        msg = repo.objects.put_blob(b"scratch output " * 40)
        tx.append("MessageAdded", "agent", {"role": "custom", "text": "scratch"},
                  {"artifact_id": msg})
        tip = tx.append("MessageAdded", "agent", {"role": "custom", "text": "scratch 2"})
    return ref, tip


def _reset_away(path):
    """A session whose `scratch` branch was deleted and its reflog expired: its events, message
    and blob are garbage in an old pack. Returns (repo, scratch ref, its old tip, its objects)."""
    repo, info = build_repo(path)
    ref, tip = scratch_branch(repo, info)
    repo.refs.set_if_equals(ref, tip, None, message="deleted")
    repo.objects.flush()
    live = _live(repo, expire_days=0, unreachable_days=0)
    gone = oracle.ObjectGraph(repo.objects).closure([tip]) - live
    return repo, ref, tip, gone


def test_gc_keeps_what_a_concurrent_writer_deduplicated_and_named(tmp_path):
    # gc marks; another process re-imports the same events (found in the old pack, so not
    # written again) and moves a ref to them; then gc deletes. Nothing may dangle.
    repo, ref, tip, gone = _reset_away(tmp_path)
    assert len(gone) >= 3
    before = set(repo.objects)

    def step(name: str) -> None:
        if name == "marked":  # after the mark, before anything is deleted
            writer = Repository.open(tmp_path)
            assert all(obj_id in writer.objects for obj_id in gone)  # deduplicated, not written
            writer.refs.set_if_equals(ref, None, tip, message="re-import")
            writer.close()

    res = pm.gc(repo, prune="now", expire="now", expire_unreachable="now", step=step, wait=5)
    repo.close()
    repo = Repository.open(tmp_path)
    # first what matters (nothing lost, nothing dangles), then the counts: a count that is
    # off (seen once in a loaded full-suite run: 4 removed, 3 operations expired) then says
    # the accounting is off, not that an object went
    assert fsck_repo.check(repo, full=True).problems == []
    assert repo.refs.read(ref) == tip and all(obj_id in repo.objects for obj_id in gone)
    assert res.objects_rescued == len(gone), res
    # the only garbage at the mark was named again; what goes is the expired operations,
    # exactly (read off the store, not gc's count)
    assert before - set(repo.objects) == set(res.operations_expired) != set(), res
    # and gc's count says the same: objects, not records (a duplicate record, two processes
    # storing one object, is one object)
    assert res.objects_removed == len(res.operations_expired), res
    res = pm.gc(repo, prune="now")  # the next gc sees them live from the start
    assert res.objects_rescued == 0 and fsck_repo.check(repo, full=True).problems == []


def test_gc_deletes_nothing_while_another_process_has_the_store_open(tmp_path):
    repo, ref, tip, gone = _reset_away(tmp_path)
    writer = Repository.open(tmp_path)
    holder = []

    def step(name: str) -> None:
        if name == "marked":
            assert tip in writer.objects  # a look-up: the writer now holds the shared gc lock
            holder.append(name)

    packs = repo.objects.packs_dir
    files = sorted(os.listdir(packs))
    with pytest.raises(LockHeld, match="gc deleted nothing"):
        pm.gc(repo, prune="now", expire="now", expire_unreachable="now", step=step, wait=0.2)
    assert holder and set(files) <= set(os.listdir(packs))
    writer.refs.set_if_equals(ref, None, tip, message="re-import")
    writer.close()
    assert fsck_repo.check(repo, full=True).problems == []
    res = pm.gc(repo, prune="now", expire="now", expire_unreachable="now", wait=5)
    assert res.packs_after == 1 and fsck_repo.check(repo, full=True).problems == []
    assert all(obj_id in repo.objects for obj_id in gone)  # named again before it could go


def test_a_writer_waits_for_gcs_exclusive_step(tmp_path):
    repo, _ = build_repo(tmp_path)
    repo.close()
    objects = tmp_path / ".ctx" / "objects"
    with GcLock(str(objects / "packs")) as lock:
        lock.exclusive(wait=0)
        store = PackStore(objects)
        with pytest.raises(LockHeld, match="gc is deleting packs"):
            store.gc_lock.share(wait=0.1)
        store.close()
    store = PackStore(objects)
    assert "0" * 64 not in store and store.gc_lock.held
    store.close()
    assert not store.gc_lock.held


def test_gc_reports_fewer_bytes_after_removing_garbage(tmp_path):
    # a little garbage in an active pack: sealing adds an index that gc must not count as its own
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"tiny garbage")
    repo.objects.flush()
    res = pm.gc(repo, prune="now")
    assert res.objects_removed == 1 and res.bytes_before > res.bytes_after


def _gc_rescue_child(path: str, ref: str, tip: str, gone: list[str], kill_at: int,
                     names) -> None:
    calls = [0]

    def step(name: str) -> None:
        if name == "marked":
            writer = Repository.open(path)
            assert all(obj_id in writer.objects for obj_id in gone)
            writer.refs.set_if_equals(ref, None, tip, message="re-import")
            writer.close()
        calls[0] += 1
        if names is not None:
            with open(names, "a") as f:
                f.write(name + "\n")
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    repo = Repository.open(path)
    pm.gc(repo, prune="now", expire="now", expire_unreachable="now", step=step, wait=5)
    os._exit(0)


def test_gc_killed_while_rescuing_never_loses_what_was_named_again(tmp_path):
    template = tmp_path / "template"
    repo, ref, tip, gone = _reset_away(template)
    for r in range(3):  # more candidate packs to delete
        repo.objects.put_blob(b"dead %d" % r + os.urandom(8))
        repo.objects.flush()
        repo.objects.seal_active()
    repo.close()
    args = (ref, tip, sorted(gone))
    full = tmp_path / "full"
    shutil.copytree(template, full, copy_function=shutil.copy2)
    names = tmp_path / "full.steps"
    assert _run_gc_child(_gc_rescue_child, (str(full / ".ctx"), *args, 0, str(names))) == 0
    steps = names.read_text().splitlines()
    assert steps[:2] == ["reflogs-expired", "marked"]
    assert {"rescue-written", "rescue-index-written", "locked", "pack-deleted"} <= set(steps), steps
    for kill_at, name in enumerate(steps, 1):
        work = tmp_path / f"kill-{kill_at}"
        shutil.copytree(template, work, copy_function=shutil.copy2)
        code = _run_gc_child(_gc_rescue_child, (str(work / ".ctx"), *args, kill_at, None))
        assert code == -signal.SIGKILL, f"not killed at step {kill_at} ({name})"
        repo = Repository.open(work)
        if kill_at >= 2:  # the writer named them again at "marked", the second step
            assert repo.refs.read(ref) == tip
            assert gone <= _live(repo)
        live = _live(repo)
        assert live <= oracle.ObjectGraph(repo.objects).ids, f"killed after {name}: objects lost"
        assert fsck_repo.check(repo, full=True).problems == []
        pm.gc(repo, prune="now")
        assert fsck_repo.check(repo, full=True).problems == []
        repo.close()
        _assert_exactly(work, live)


def test_parse_time_short_ages():
    now = 1_000_000.0
    assert pm.parse_time("3d", now) == now - 3 * 86400
    assert pm.parse_time("12h", now) == now - 12 * 3600
    assert pm.parse_time("30m", now) == now - 1800
    assert pm.parse_time("2 weeks ago", now) == now - 14 * 86400
