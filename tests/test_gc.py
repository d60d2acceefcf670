"""gc: unreachable objects go, reachable ones never do — even when gc is killed midway."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time

import pytest

from ctxstore import links
from ctxstore.porcelain import maintenance as pm
from ctxstore.refs import ReflogEntry
from ctxstore.repo import Repository
from ctxstore.store.fsck import verify
from tests.test_links import build_repo

DAY_MS = 86400 * 1000


def _garbage_repo(path, n_garbage: int = 50, events: int = 6):
    repo, info = build_repo(path, events=events)
    garbage = [repo.store.put_blob(os.urandom(64) + b"%d" % i) for i in range(n_garbage)]
    # a deleted branch whose history is only in a reflog entry (unexpired: must survive)
    ref = f"refs/sessions/{info['session']}/tmp"
    with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
        pass
    repo.refs.set_if_equals(ref, None, info["main"])
    with repo.transaction(ref) as tx:
        side = tx.append("MessageAdded", "agent", {"role": "custom", "text": "side"})
    repo.refs.set_if_equals(ref, side, None, message="deleted")
    info["side"] = side
    repo.store.flush()
    return repo, info, garbage


def _live(repo):
    return links.reachable(repo.store, pm.roots(repo))


def test_gc_removes_garbage_and_keeps_everything_reachable(tmp_path):
    repo, info, garbage = _garbage_repo(tmp_path)
    live = _live(repo)
    assert info["side"] in live
    dry = pm.gc(repo, prune="now", dry_run=True)
    assert dry.objects_removed >= len(garbage) and all(g in repo.store for g in garbage)
    res = pm.gc(repo, prune="now")
    assert res.objects_removed >= len(garbage) and res.bytes_after < res.bytes_before
    repo.close()
    repo = Repository.open(tmp_path)
    for obj_id in live:
        repo.store.get_raw(obj_id)
    assert not any(g in repo.store for g in garbage)
    assert list(verify(repo.store)) == []


def test_grace_period_keeps_new_packs(tmp_path):
    repo, _, garbage = _garbage_repo(tmp_path)
    res = pm.gc(repo)  # default 2.weeks.ago: everything is newer
    assert res.objects_removed == 0
    assert all(g in repo.store for g in garbage)


def test_expired_reflog_entries_stop_protecting(tmp_path):
    repo, info, _ = _garbage_repo(tmp_path)
    ref = f"refs/sessions/{info['session']}/tmp"
    old = [ReflogEntry(e.old, e.new, e.ts_ms - 100 * DAY_MS, e.actor, e.message)
           for e in repo.refs.reflog(ref)]
    repo.refs.replace_reflog(ref, old)
    head = [e for e in repo.refs.reflog("HEAD")]
    repo.refs.replace_reflog("HEAD", head)
    res = pm.gc(repo, prune="now")
    assert res.reflog_expired == len(old)
    assert info["side"] not in repo.store
    assert repo.refs.reflog(ref) == []


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


def _gc_child(path: str, kill_at: int) -> None:
    calls = [0]

    def step(_name: str) -> None:
        calls[0] += 1
        if calls[0] == kill_at:
            os._exit(9)

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
            repo.store.put_blob(b"dead %d %d" % (r, i) + os.urandom(8))
        repo.store.flush()
        repo.store.seal_active()
    return repo


@pytest.mark.parametrize("kill_at", range(1, 9))
def test_gc_killed_at_each_step_never_loses_a_reachable_object(tmp_path, kill_at):
    repo = _many_packs(tmp_path)
    live = _live(repo)
    repo.close()
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_gc_child, args=(str(tmp_path / ".ctx"), kill_at))
    proc.start()
    proc.join(60)
    repo = Repository.open(tmp_path)
    for obj_id in live:
        repo.store.get_raw(obj_id)
    assert [p for p in verify(repo.store) if p.kind != "pack"] == []
    pm.gc(repo, prune="now")  # a later gc finishes the job
    for obj_id in live:
        repo.store.get_raw(obj_id)


@pytest.mark.slow
def test_gc_killed_at_random_times(tmp_path):
    rnd = random.Random(8)
    repo = _many_packs(tmp_path, rounds=8)
    live = _live(repo)
    repo.close()
    ctx = multiprocessing.get_context("fork")
    for _ in range(6):
        proc = ctx.Process(target=_gc_child, args=(str(tmp_path / ".ctx"), -1))
        proc.start()
        time.sleep(rnd.uniform(0, 0.15))
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        check = Repository.open(tmp_path)
        for obj_id in live:
            check.store.get_raw(obj_id)
        check.close()
