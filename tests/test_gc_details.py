"""gc's small rules, pinned down (each check kills mutants that survived
`python -m tests.mutation gc`): the time syntax of --prune/--expire, which reflog entries expire
at the boundaries, and what a dry run reports without touching anything."""

from __future__ import annotations

import pytest

from ctxstore.errors import CorruptStore, InvalidInput
from ctxstore.maintenance import gc as pm
from ctxstore.refs import ReflogEntry
from tests.test_links import build_repo

NOW = 1_700_000_000.0
DAY = 86400


@pytest.mark.parametrize("text,ago", [
    ("now", 0), (" NOW ", 0), ("1.second.ago", 1), ("2.seconds.ago", 2), ("3.minutes.ago", 180),
    ("1.hour.ago", 3600), ("5.hours", 5 * 3600), ("2.days.ago", 2 * DAY), ("2 days ago", 2 * DAY),
    ("2days", 2 * DAY), ("3.weeks.ago", 21 * DAY), ("1.month.ago", 30 * DAY),
    ("2.years.ago", 730 * DAY), ("90.days", 90 * DAY), ("10.Days.Ago", 10 * DAY),
])
def test_relative_times(text, ago):
    assert pm.parse_time(text, NOW) == NOW - ago


def test_never_and_absolute_times():
    assert pm.parse_time("never", NOW) is None and pm.parse_time("false", NOW) is None
    assert pm.parse_time("2023-11-14", NOW) == 1699920000.0  # UTC when no zone is given
    assert pm.parse_time("2023-11-14T22:13:20Z", NOW) == NOW
    assert pm.parse_time("2023-11-14T23:13:20+01:00", NOW) == NOW
    assert pm.parse_time("2023-11-14T22:13:20", NOW) == NOW
    for bad in ("soonish", "2.fortnights.ago", "ago", "-1.days.ago", ""):
        with pytest.raises(InvalidInput, match=r"^cannot read time .*: use now, never, an age "
                                               r"\(3d, 2h, 2\.weeks\.ago, '1 week ago'\), "
                                               r"yesterday, .* or an ISO"):
            pm.parse_time(bad, NOW)


_TIP = object()


def _aged(repo, ref, days_old, new=_TIP):
    """A reflog entry for `ref` `days_old` days before NOW (new=None: a deletion)."""
    last = repo.refs.reflog(ref)[-1]
    return ReflogEntry(last.new, last.new if new is _TIP else new,
                       int((NOW - days_old * DAY) * 1000), "t", "x")


def test_reflog_expiry_boundaries(tmp_path):
    repo, info = build_repo(tmp_path)
    main = f"refs/sessions/{info['session']}/main"
    on_tip, off_tip = info["prompt"], info["compaction"]  # an ancestor of main; not an event
    entries = [_aged(repo, main, 89.9, on_tip), _aged(repo, main, 90.1, on_tip),
               _aged(repo, main, 29.9, off_tip), _aged(repo, main, 30.1, off_tip),
               _aged(repo, main, 30.1, on_tip), _aged(repo, main, 1),
               _aged(repo, main, 31, None),  # a deletion, older than 30 days: on no tip
               _aged(repo, main, 31, "f" * 64)]  # names an object that is gone
    repo.refs.replace_reflog(main, entries)
    dry = pm.reflog_expire(repo, refs=[main], now=NOW, dry_run=True)
    assert dry.dry_run and dry.expired == 4 and dry.kept == 4
    assert dry.refs == {main: {"kept": 4, "expired": 4}}
    assert repo.refs.reflog(main) == entries  # a dry run changes nothing
    res = pm.reflog_expire(repo, refs=[main], now=NOW)
    assert not res.dry_run and res.to_dict()["expired"] == 4
    assert repo.refs.reflog(main) == [entries[0], entries[2], entries[4], entries[5]]
    # never: nothing expires by age, only the unreachable rule applies
    repo.refs.replace_reflog(main, entries)
    assert pm.reflog_expire(repo, refs=[main], now=NOW, expire="never").expired == 3
    assert pm.reflog_expire(repo, refs=[main], now=NOW, expire="never",
                            expire_unreachable="never").expired == 0


def test_roots_follow_expiry(tmp_path):
    repo, info = build_repo(tmp_path)
    main = f"refs/sessions/{info['session']}/main"
    gone = _aged(repo, main, 100, info["compaction"])
    repo.refs.replace_reflog(main, [*repo.refs.reflog(main), gone])
    assert info["compaction"] not in pm.roots(repo, now=NOW)
    assert info["compaction"] in pm.roots(repo, now=NOW, expire="never", expire_unreachable="never")
    assert info["main"] in pm.roots(repo, now=NOW) and info["prompt"] in pm.roots(repo, now=NOW)


def test_dry_run_gc_reports_without_touching(tmp_path):
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    packs = sorted(p.name for p in (tmp_path / ".ctx" / "objects" / "packs").iterdir())
    res = pm.gc(repo, prune="now", dry_run=True)
    assert res.dry_run and res.prune == "now" and res.objects_removed == 1
    assert res.live == res.objects_before - 1 and res.missing == []
    assert res.to_dict()["objects_removed"] == 1 and res.reflog_expired == 0
    assert sorted(p.name for p in (tmp_path / ".ctx" / "objects" / "packs").iterdir()) == packs
    kept = pm.gc(repo, prune="never")
    assert kept.objects_removed == 0 and kept.kept_packs >= 1


def test_dry_run_counts_equal_the_real_run_over_many_packs(tmp_path):
    from tests.test_gc import _many_packs

    repo = _many_packs(tmp_path)
    dry = pm.gc(repo, prune="now", dry_run=True)
    real = pm.gc(repo, prune="now")
    assert dry.packs_before == real.packs_before >= 4
    assert (dry.objects_before, dry.objects_removed) == (real.objects_before, real.objects_removed)
    assert dry.objects_removed >= 120 and real.packs_after == 1


def test_snapshots_of_live_events_survive_and_others_go(tmp_path):
    """The snapshot cache is a root only for live events: a deleted branch's snapshots go."""
    from ctxstore.repo import Repository
    from ctxstore.state.projector import SNAPSHOT_EVERY, Projector
    from tests.oracles import reachability as oracle

    repo, info = build_repo(tmp_path)
    sid = info["session"]
    lines = {}
    for branch in ("keep", "scratch"):
        ref = f"refs/sessions/{sid}/{branch}"
        repo.refs.set_if_equals(ref, None, info["main"])
        with repo.transaction(ref) as tx:
            for i in range(SNAPSHOT_EVERY + 10):
                tip = tx.append("MessageAdded", "agent", {"role": "custom", "text": f"{branch} {i}"})
        Projector(repo).project(tip)
        lines[branch] = tip
    snaps = oracle.snapshot_names(tmp_path / ".ctx")
    by_branch = {b: {s for e, s in snaps.items() if repo.graph.is_ancestor(e, t)}
                 for b, t in lines.items()}
    assert by_branch["keep"] and by_branch["scratch"] and not by_branch["keep"] & by_branch["scratch"]
    repo.refs.set_if_equals(f"refs/sessions/{sid}/scratch", lines["scratch"], None)
    repo.objects.flush()
    live = oracle.live(tmp_path / ".ctx", repo.objects, expire_days=0, unreachable_days=0)
    assert by_branch["keep"] <= live and not by_branch["scratch"] & live
    pm.gc(repo, prune="now", expire="now", expire_unreachable="now")
    repo.close()
    repo = Repository.open(tmp_path)
    left = oracle.ObjectGraph(repo.objects).ids
    assert live <= left and not by_branch["scratch"] & left  # kept ones there, the others gone
    graph = oracle.ObjectGraph(repo.objects)
    extra = left - oracle.live(tmp_path / ".ctx", repo.objects, expire_days=0, unreachable_days=0)
    # only the operation gc wrote for its own reflog expiry, in a pack younger than --prune
    assert {graph.types[x] for x in extra} <= {"operation"} and len(extra) <= 1


def test_gc_needs_an_on_disk_store():
    from ctxstore.errors import Unsupported
    from ctxstore.repo import Repository

    with pytest.raises(Unsupported, match="^gc needs an on-disk store$"):
        pm.gc(Repository.memory())


def test_gc_refuses_while_another_gc_or_consolidation_runs(tmp_path):
    from ctxstore.errors import LockHeld
    from ctxstore.store.repack import RepackLock

    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    with RepackLock(repo.objects.packs_dir):
        with pytest.raises(LockHeld, match="another gc or pack consolidation is running"):
            pm.gc(repo, prune="now")
        assert pm.gc(repo, prune="now", dry_run=True).objects_removed == 1  # a dry run reads only
    assert pm.gc(repo, prune="now").objects_removed == 1


def test_gc_judges_every_age_by_its_now(tmp_path):
    """`now` is the clock for --prune, --expire and --expire-unreachable alike."""
    import time

    repo, info = build_repo(tmp_path)
    sid = info["session"]
    scratch = f"refs/sessions/{sid}/scratch"
    repo.refs.set_if_equals(scratch, None, info["main"])
    with repo.transaction(scratch) as tx:
        side = tx.append("MessageAdded", "agent", {"role": "custom", "text": "side"})
    repo.refs.set_if_equals(scratch, side, None, message="deleted")
    repo.objects.flush()
    entries = sum(len(repo.refs.reflog(n)) for n in pm.reflog_names(repo))
    today = pm.gc(repo, prune="2.weeks.ago")  # everything is new: nothing goes
    assert today.objects_removed == 0 and today.reflog_expired == 0
    later = time.time() + 40 * DAY  # 40 days on: only entries off their ref's tip expire
    res = pm.gc(repo, prune="2.weeks.ago", now=later)
    assert 0 < res.reflog_expired < entries and res.operations_expired == []
    assert res.objects_removed == 0  # operations younger than 90 days still name `side`
    repo.close()
    from ctxstore.repo import Repository

    repo = Repository.open(tmp_path)
    assert side in repo.objects
    left = sum(len(repo.refs.reflog(n)) for n in pm.reflog_names(repo))
    res = pm.gc(repo, prune="2.weeks.ago", now=time.time() + 100 * DAY)  # past --expire too
    assert res.reflog_expired == left and res.operations_expired
    assert all(repo.refs.reflog(n) == [] for n in pm.reflog_names(repo))
    repo.close()
    repo = Repository.open(tmp_path)
    assert side not in repo.objects  # nothing names it any more


def test_gc_reports_progress_and_missing_objects(tmp_path):
    repo, info = build_repo(tmp_path)
    ghost = "f" * 64
    with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
        tx.append("MessageAdded", "agent", {"role": "custom", "text": "names a ghost"},
                  {"message_id": ghost})
    repo.objects.flush()
    calls = []
    packs = tmp_path / ".ctx" / "objects" / "packs"
    before = sorted(p.name for p in packs.glob("pack-*"))
    # a missing object makes reachability unknown: gc refuses, naming it and what names it,
    # before it changed anything (issue 28)
    with pytest.raises(CorruptStore) as info:
        pm.gc(repo, prune="now", progress=lambda stage, n, total: calls.append((stage, n, total)))
    assert info.value.exit_code == 17 and ghost in str(info.value)
    assert "nothing deleted" in str(info.value) and info.value.details["missing"] == [ghost]
    assert calls and {c[0] for c in calls} == {"mark"}
    assert sorted(p.name for p in packs.glob("pack-*")) == before


def test_gc_seals_every_idle_active_pack(tmp_path):
    """Active packs left by writers that have closed (or died) are sealed and collected, however
    many there are and wherever they sort among the sealed ones."""
    from ctxstore.repo import Repository
    from ctxstore.store.packstore import PackStore
    from tests.oracles import reachability as oracle

    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    objects = tmp_path / ".ctx" / "objects"
    writers = [PackStore(objects) for _ in range(4)]  # live at once: four active packs
    garbage = [w.put_blob(b"idle garbage %d" % i) for i, w in enumerate(writers)]
    for w in writers:
        w.close()
    packs = objects / "packs"
    active = [p for p in packs.glob("*.pack") if not p.with_suffix(".idx").exists()]
    assert len(active) >= 4
    live = oracle.live(tmp_path / ".ctx", repo.objects)
    res = pm.gc(repo, prune="now")
    assert res.objects_removed == len(garbage) and res.packs_after == 1
    repo.close()
    repo = Repository.open(tmp_path)
    assert oracle.ObjectGraph(repo.objects).ids == live
    assert all(p.with_suffix(".idx").exists() for p in packs.glob("*.pack"))
