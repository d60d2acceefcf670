"""What gc's rewrite (ctxstore/store/repack.py) leaves on disk in the cases the other gc tests
do not reach: a newer pack that already holds a live object, objects named again when nothing
else in their pack was live, a disk that fails while the rescued objects are written, damage
seen before anything is expired, and the descriptors a long-lived process must get back.

Expectations come from tests/oracles/reachability.py (a naive walk over every object) and
from reading the pack files themselves, never from `links.reachable` or the repack result
alone (the group `gc` of tests/mutation.py)."""

from __future__ import annotations

import errno
import os
import shutil
import time

import pytest

from ctxstore.errors import CorruptStore
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.maintenance import gc as pm
from ctxstore.repo import Repository, operations
from ctxstore.store import repack as rp
from ctxstore.store.pack import IDX_SUFFIX, PACK_SUFFIX, PREFIX, Pack
from tests.oracles import reachability as oracle
from tests.test_gc import _live, scratch_branch
from tests.test_links import build_repo

MONTH = 30 * 86400


def _sealed_packs(repo) -> list[str]:
    d = repo.objects.packs_dir
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if n.startswith(PREFIX) and n.endswith(PACK_SUFFIX)
                  and os.path.exists(os.path.join(d, n[:-len(PACK_SUFFIX)] + IDX_SUFFIX)))


def _records(packs_dir) -> dict[str, int]:
    """How many records hold each id, over every pack file on disk (sealed or not)."""
    counts: dict[str, int] = {}
    for name in os.listdir(packs_dir):
        if not (name.startswith(PREFIX) and name.endswith(PACK_SUFFIX)):
            continue
        path = os.path.join(packs_dir, name)
        pack = Pack(path, sealed=os.path.exists(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX))
        try:
            if not pack.sealed:
                pack.refresh()
            for oid in pack.ids():
                counts[oid] = counts.get(oid, 0) + 1
        finally:
            pack.close()
    return counts


def _age(path: str, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def _open_fds() -> dict[int, tuple[int, int]]:
    """Open descriptor -> (device, inode) of the file it is open on: a number can be closed and
    reused for another file meanwhile; a file renamed or deleted since is the same file (the
    store keeps its descriptors on packs gc deleted until its next look-up refreshes the pack
    list; another pytest run may rename an old temporary folder)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:  # listdir's own descriptor, closed by now
            continue
        out[int(name)] = (st.st_dev, st.st_ino)
    return out


def test_gc_copies_nothing_that_a_newer_pack_already_holds(tmp_path):
    """A live object in both an old pack and a pack too new to rewrite stays in the new one
    only: gc writes no second copy of it."""
    repo, _ = build_repo(tmp_path)
    garbage = repo.objects.put_blob(b"old garbage")
    repo.objects.flush()
    repo.objects.seal_active()
    (old,) = _sealed_packs(repo)
    # the same records again, in a pack written just now (as a crashed gc leaves them)
    twin = os.path.join(repo.objects.packs_dir, PREFIX + "f" * 40)
    shutil.copy(old, twin + PACK_SUFFIX)
    shutil.copy(old[:-len(PACK_SUFFIX)] + IDX_SUFFIX, twin + IDX_SUFFIX)
    _age(old, MONTH)
    repo.close()
    repo = Repository.open(tmp_path)
    live = _live(repo)
    res = pm.gc(repo, prune="2.weeks.ago")
    assert res.packs_before >= 2 and res.kept_packs >= 1
    repo.close()
    counts = _records(str(tmp_path / ".ctx" / "objects" / "packs"))
    assert live <= set(counts) and garbage in counts  # the twin is too new: kept whole
    assert {oid: n for oid, n in counts.items() if n > 1} == {}, "gc duplicated live objects"
    assert not os.path.exists(old)


def _scratch_in_an_old_pack(path):
    """A session whose deleted `scratch` branch's objects are alone in one month-old pack;
    everything else is in packs written now. Returns (repo, ref, tip, the scratch objects)."""
    repo, info = build_repo(path)
    repo.objects.flush()
    repo.objects.seal_active()
    before = set(_sealed_packs(repo))
    ref, tip = scratch_branch(repo, info)
    repo.objects.flush()
    repo.objects.seal_active()
    (scratch_pack,) = set(_sealed_packs(repo)) - before
    repo.refs.set_if_equals(ref, tip, None, message="deleted")
    repo.objects.flush()
    _age(scratch_pack, MONTH)
    live = _live(repo, expire_days=0, unreachable_days=0)
    gone = oracle.ObjectGraph(repo.objects).closure([tip]) - live
    return repo, ref, tip, gone, scratch_pack


def test_objects_named_again_survive_when_nothing_else_in_their_pack_was_live(tmp_path):
    repo, ref, tip, gone, scratch_pack = _scratch_in_an_old_pack(tmp_path)
    assert len(gone) >= 3
    in_old_pack = set(Pack(scratch_pack, sealed=True).ids())
    assert gone <= in_old_pack

    def step(name: str) -> None:
        if name == "marked":  # another process names the dead branch again before the delete
            writer = Repository.open(tmp_path)
            writer.refs.set_if_equals(ref, None, tip, message="re-import")
            with writer.transaction(ref) as tx:
                tx.append("MessageAdded", "agent", {"role": "custom", "text": "x"})
            writer.close()

    res = pm.gc(repo, prune="2.weeks.ago", expire="now", expire_unreachable="now", step=step,
                wait=5)
    assert res.missing == []
    repo.close()
    repo = Repository.open(tmp_path)
    assert repo.graph.event(repo.refs.read(ref)).parents == (tip,)
    assert all(oid in repo.objects for oid in gone)
    assert res.objects_rescued == len(gone)
    assert not os.path.exists(scratch_pack)
    # every pack but the old one was too new to rewrite: all kept, plus the rescue pack
    assert res.kept_packs == res.packs_before - 1 and res.packs_after == res.packs_before
    # of the old pack, exactly what is live now is left (the newer packs are kept whole)
    live = _live(repo, expire_days=0, unreachable_days=0)
    assert {oid for oid in in_old_pack if oid in repo.objects} == in_old_pack & live
    repo.close()


def test_a_missing_object_named_between_the_marks_refuses_before_any_delete(tmp_path):
    """The second mark meets an event naming a missing object: gc refuses (exit 17, naming
    it) before deleting anything — the old pack and every object in it stay (issue 28)."""
    repo, ref, tip, gone, scratch_pack = _scratch_in_an_old_pack(tmp_path)
    ghost = "e" * 64

    def step(name: str) -> None:
        if name == "marked":
            writer = Repository.open(tmp_path)
            writer.refs.set_if_equals(ref, None, tip, message="re-import")
            with writer.transaction(ref) as tx:  # and adds an event naming a missing object
                tx.append("MessageAdded", "agent", {"role": "custom", "text": "x"},
                          {"message_id": ghost})
            writer.close()

    with pytest.raises(CorruptStore, match=ghost):
        pm.gc(repo, prune="2.weeks.ago", expire="now", expire_unreachable="now", step=step,
              wait=5)
    repo.close()
    assert os.path.exists(scratch_pack)
    repo = Repository.open(tmp_path)
    assert all(oid in repo.objects for oid in gone)
    repo.close()


def test_a_disk_that_fails_while_rescuing_loses_nothing(tmp_path, monkeypatch):
    """The rescue pack's index cannot be written (disk full): gc fails with that error, deletes
    nothing, and the next gc finishes the job."""
    repo, ref, tip, gone, scratch_pack = _scratch_in_an_old_pack(tmp_path)
    real = rp.write_file_atomically
    calls = []

    def full_disk(path, data, *a, **kw):
        calls.append(path)
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(rp, "write_file_atomically", full_disk)

    def step(name: str) -> None:
        if name == "marked":
            writer = Repository.open(tmp_path)
            writer.refs.set_if_equals(ref, None, tip, message="re-import")
            writer.close()

    with pytest.raises(OSError) as err:
        pm.gc(repo, prune="2.weeks.ago", expire="now", expire_unreachable="now", step=step,
              wait=5)
    assert err.value.errno == errno.ENOSPC and len(calls) == 1
    assert os.path.exists(scratch_pack)  # nothing deleted
    assert not [n for n in os.listdir(repo.objects.packs_dir) if n.startswith("tmp-")]
    repo.close()
    monkeypatch.setattr(rp, "write_file_atomically", real)
    repo = Repository.open(tmp_path)
    assert all(oid in repo.objects for oid in gone)
    pm.gc(repo, prune="now")
    assert all(oid in repo.objects for oid in gone)
    assert fsck_repo.check(repo, full=True).problems == []
    repo.close()


def test_gc_refuses_a_damaged_ref_before_expiring_any_reflog(tmp_path):
    """A ref file that cannot be read may be the only root of a history: gc stops before its
    first change, so the reflog lines that also name that history are still there."""
    repo, info = build_repo(tmp_path)
    repo.objects.flush()
    logs = {n: repo.refs.reflog(n) for n in pm.reflog_names(repo)}
    damaged = tmp_path / ".ctx" / "refs" / "sessions" / info["session"] / "alt"
    damaged.write_text("not an id\n")
    with pytest.raises(CorruptStore, match=r"^gc refused, nothing deleted: .*alt:1:") as err:
        pm.gc(repo, prune="now", expire="now", expire_unreachable="now")
    assert err.value.details == {"path": str(damaged), "line": 1}  # for --json and the CLI
    assert {n: repo.refs.reflog(n) for n in pm.reflog_names(repo)} == logs


def test_a_dry_run_counts_every_readable_pack_past_a_damaged_one(tmp_path):
    from tests.test_gc import _many_packs

    repo = _many_packs(tmp_path)
    repo.close()
    repo = Repository.open(tmp_path)
    packs = _sealed_packs(repo)
    assert len(packs) >= 4
    first = packs[0]  # the first a dry run reads
    counts = {p: len(list(Pack(p, sealed=True).ids())) for p in packs}
    with open(first[:-len(PACK_SUFFIX)] + IDX_SUFFIX, "r+b") as f:
        f.truncate(10)  # an index that cannot be read
    res = rp.repack(repo.objects, set(), float("inf"), dry_run=True)
    assert res.objects_before == sum(n for p, n in counts.items() if p != first)
    assert res.objects_removed == res.objects_before  # nothing is live here
    assert sorted(res.removed_packs) == sorted(p for p in packs if p != first)
    repo.close()


def test_a_pack_deleted_under_a_dry_run_is_too_new_to_count(tmp_path):
    # the dry run takes no lock: a gc in another process may delete a pack it just listed
    assert rp._mtime(str(tmp_path / "gone.pack")) == float("inf")


def test_gc_gives_back_every_descriptor_it_opened(tmp_path):
    """A long-lived process (the LangGraph saver, `ctx serve`) runs gc many times: no pack,
    index or temp file stays open after it, whichever way the rewrite ends."""
    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()

    def gc_opens_nothing(**kw):
        repo.objects.get_raw(next(iter(repo.objects)))  # the store's own descriptors, opened now
        before = _open_fds()
        res = pm.gc(repo, prune="now", **kw)
        left = dict(_open_fds().items() - before.items())
        assert left == {}, kw
        return res

    gc_opens_nothing(retrain=False)  # one pack, nothing dead, no new dictionary
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    assert gc_opens_nothing(dry_run=True).objects_removed == 1
    assert gc_opens_nothing().objects_removed == 1
    repo.close()


def test_a_read_error_while_copying_leaves_no_temp_file_or_descriptor(tmp_path, monkeypatch):
    """An I/O error reading a candidate pack stops gc with that error; the half-written new
    pack is removed and closed, and every object is still where it was."""
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    everything = set(repo.objects)

    writing = []

    def failing_disk(*_a, **_kw):
        writing.extend(n for n in os.listdir(repo.objects.packs_dir) if n.startswith("tmp-"))
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(rp, "copy_records", failing_disk)
    repo.objects.get_raw(next(iter(repo.objects)))
    before = _open_fds()
    with pytest.raises(OSError) as err:
        pm.gc(repo, prune="now")
    assert err.value.errno == errno.EIO
    assert writing  # the half-written pack was in packs/, where a later gc would find it
    assert dict(_open_fds().items() - before.items()) == {}
    assert not [n for n in os.listdir(repo.objects.packs_dir) if n.startswith("tmp-")]
    monkeypatch.undo()
    repo.close()
    repo = Repository.open(tmp_path)
    assert set(repo.objects) == everything
    repo.close()


def _rename_pack(path: str, hex_name: str) -> str:
    """Give a pack (and its index, if sealed) the name pack-HEX_NAME: listing order decides
    which pack gc meets first."""
    new = os.path.join(os.path.dirname(path), PREFIX + hex_name + PACK_SUFFIX)
    os.rename(path, new)
    if os.path.exists(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX):
        os.rename(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX, new[:-len(PACK_SUFFIX)] + IDX_SUFFIX)
    return new


def _left_by_dead_writers(tmp_path, busy: list | None = None):
    """A store whose sealed pack sorts first, then an active pack damaged in the middle, then
    four active packs that writers left when they died (no flock on them). Returns (repo,
    the damaged pack, the four good ones, the blobs those hold). With `busy` (a list), one
    more writer stays at work, its pack sorting between those: (writer, pack) is appended."""
    from ctxstore.store.packstore import PackStore

    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    (sealed,) = _sealed_packs(repo)
    _rename_pack(sealed, "0" * 40)
    objects = tmp_path / ".ctx" / "objects"
    packs = objects / "packs"
    writers = [PackStore(objects) for _ in range(5)]  # open at once: five active packs
    blobs = [w.put_blob(b"dead writer's garbage %d" % i) for i, w in enumerate(writers)]
    writers[0].put_blob(b"a second record after the one to damage")
    if busy is not None:  # a sixth pack, whose writer still holds its flock
        from ctxstore.store.writerlock import open_locked

        before = set(packs.glob("*.pack"))
        at_work = PackStore(objects)
        at_work.put_blob(b"a writer still at work")
        at_work.close()
        (pack,) = set(packs.glob("*.pack")) - before
        pack = _rename_pack(str(pack), "1" * 40)
        busy.append((open_locked(pack), pack))
    for w in writers:
        w.close()
    active = {p.name for p in packs.glob("*.pack") if not p.with_suffix(".idx").exists()
              and not p.name.startswith(PREFIX + "1" * 40)}
    by_blob, first_record = {}, {}
    for name in active:
        pack = Pack(str(packs / name), sealed=False)
        pack.refresh()
        for oid in pack.ids():
            by_blob[oid] = str(packs / name)
        first_record[str(packs / name)] = min(pack.offsets.values())
        pack.close()
    off, _size = first_record[by_blob[blobs[0]]]
    damaged = _rename_pack(by_blob[blobs[0]], "8" * 40)
    data = bytearray(open(damaged, "rb").read())
    data[off] ^= 0xFF  # the first record's header: an intact record follows it
    open(damaged, "wb").write(bytes(data))
    good = sorted(_rename_pack(by_blob[b], "f" * 39 + str(i)) for i, b in enumerate(blobs[1:]))
    for p in packs.glob("*.pidx"):
        p.unlink()  # partial indexes name the old pack files; sealing rescans
    return repo, damaged, good, blobs[1:]


def test_sealing_idle_packs_goes_past_sealed_damaged_and_busy_ones(tmp_path):
    at_work = []
    repo, damaged, good, blobs = _left_by_dead_writers(tmp_path, busy=at_work)
    ((lock, busy),) = at_work
    assert lock is not None
    assert rp.seal_idle(repo.objects.packs_dir) == good  # not sealed, damaged or busy ones
    assert not os.path.exists(busy[:-len(PACK_SUFFIX)] + IDX_SUFFIX)
    os.close(lock)  # its writer is gone now: idle
    assert rp.seal_idle(repo.objects.packs_dir) == [busy]
    assert all(os.path.exists(p[:-len(PACK_SUFFIX)] + IDX_SUFFIX) for p in good)
    assert not os.path.exists(damaged[:-len(PACK_SUFFIX)] + IDX_SUFFIX)  # left for fsck
    assert rp.seal_idle(repo.objects.packs_dir) == []
    repo.close()
    repo = Repository.open(tmp_path)
    for blob, path in zip(blobs, good, strict=True):
        pack = Pack(path, sealed=True)
        assert list(pack.ids()) == [blob]
        pack.close()
        assert repo.objects.get_raw(blob)[0] == "blob"
    repo.close()


def test_gc_collects_what_dead_writers_left_in_packs_they_never_sealed(tmp_path):
    repo, damaged, good, blobs = _left_by_dead_writers(tmp_path)
    live = _live(repo)
    res = pm.gc(repo, prune="now")
    repo.close()
    assert res.objects_removed == len(blobs) and not any(os.path.exists(p) for p in good)
    assert os.path.exists(damaged)  # kept whole, for fsck
    repo = Repository.open(tmp_path)
    assert live <= set(repo.objects) and not set(blobs) & set(repo.objects)
    repo.close()


def _pack_files(packs_dir) -> dict[str, bytes]:
    return {n: open(os.path.join(packs_dir, n), "rb").read() for n in sorted(os.listdir(packs_dir))
            if n.startswith(PREFIX)}


def test_gc_refuses_while_dicts_names_zdicts_the_store_lacks(tmp_path):
    """Records compressed with a dictionary the store cannot find are unreadable: gc names the
    first bad line of `dicts` and changes nothing."""
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    dicts = tmp_path / ".ctx" / "objects" / "dicts"
    dicts.write_text(f"7 {'a' * 64}\n8 {'b' * 64}\n")
    before = _pack_files(repo.objects.packs_dir)
    with pytest.raises(CorruptStore, match=rf"^gc refused, nothing deleted: {dicts}:1: "):
        pm.gc(repo, prune="now")
    assert _pack_files(repo.objects.packs_dir) == before


def test_gc_reports_the_bytes_and_packs_it_leaves_on_disk(tmp_path):
    """The sizes and counts gc reports are those of the files on disk, and what it writes is
    named and made as docs/format.md says: pack-<40 hex>.pack/.idx, readable by all."""
    import re

    def on_disk(packs_dir) -> int:
        return sum(os.path.getsize(os.path.join(packs_dir, n)) for n in os.listdir(packs_dir)
                   if n.startswith(PREFIX) and n.endswith((PACK_SUFFIX, IDX_SUFFIX, ".pidx")))

    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(os.urandom(3000))
    repo.objects.flush()
    repo.objects.seal_active()
    packs = repo.objects.packs_dir
    before = on_disk(packs)
    old = os.umask(0o022)
    try:
        res = pm.gc(repo, prune="now")
    finally:
        os.umask(old)
    assert res.objects_removed == 1
    assert res.bytes_before == before and res.bytes_after == on_disk(packs)
    files = [n for n in os.listdir(packs) if n.startswith(PREFIX)]
    assert res.packs_after == sum(n.endswith(PACK_SUFFIX) for n in files) == 1
    for name in files:
        assert re.fullmatch(r"pack-[0-9a-f]{40}\.(pack|idx)", name), name
        assert os.stat(os.path.join(packs, name)).st_mode & 0o777 == 0o644, name


def test_gc_holds_the_lock_consolidation_takes(tmp_path):
    """While gc rewrites, a consolidation (which takes packs/consolidate.lock) must wait: gc's
    lock is that file, created readable by all like the store's other files."""
    import fcntl

    from ctxstore.store.packconsolidate import LOCK_NAME

    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    path = os.path.join(repo.objects.packs_dir, LOCK_NAME)
    if os.path.exists(path):
        os.unlink(path)
    seen = []

    def step(name: str) -> None:
        if name == "marked":
            fd = os.open(path, os.O_RDWR)
            try:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
            seen.append(name)

    old = os.umask(0o022)
    try:
        pm.gc(repo, prune="now", step=step)
    finally:
        os.umask(old)
    assert seen and os.stat(path).st_mode & 0o777 == 0o644


def test_gc_removes_temp_files_a_killed_gc_left_and_keeps_a_writers_fresh_one(tmp_path):
    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    packs = repo.objects.packs_dir
    stale, fresh = os.path.join(packs, "tmp-stale.pack"), os.path.join(packs, "tmp-fresh.pack")
    for path in (stale, fresh):
        open(path, "wb").write(b"partial")
    _age(stale, 2 * 3600)
    _age(fresh, 60)
    pm.gc(repo, prune="now")
    assert not os.path.exists(stale) and os.path.exists(fresh)
    repo.close()


def test_a_temp_file_is_stale_after_one_hour(tmp_path):
    old, young = tmp_path / "tmp-old", tmp_path / "tmp-young"
    for path in (old, young):
        path.write_bytes(b"x")
    _age(str(old), 3600.5)
    _age(str(young), 3599.5)
    (tmp_path / "pack-keep.pack").write_bytes(b"x")
    _age(str(tmp_path / "pack-keep.pack"), 7200)
    assert rp.remove_stale_temps(str(tmp_path)) == [str(old)]
    assert sorted(os.listdir(tmp_path)) == ["pack-keep.pack", "tmp-young"]


def test_a_stray_file_in_the_snapshot_cache_does_not_stop_gc(tmp_path):
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    cache = tmp_path / ".ctx" / "cache" / "snapshots"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "README").write_text("not a folder of snapshots\n")
    assert pm.gc(repo, prune="now").objects_removed == 1


def test_the_rewrite_counts_every_record_it_wrote_rescued_ones_included(tmp_path):
    from ctxstore.store.repack import RepackLock

    repo, ref, tip, gone, scratch_pack = _scratch_in_an_old_pack(tmp_path)
    (other,) = [p for p in _sealed_packs(repo) if p != scratch_pack][:1] or [None]
    _age(other, MONTH)  # a second candidate that holds live objects
    live = _live(repo, expire_days=0, unreachable_days=0)
    store = repo.objects
    with RepackLock(store.packs_dir):
        res = rp.repack(store, live, time.time() - 14 * 86400, remark=lambda: set(gone), wait=5)
    assert res.new_pack and res.rescue_pack and res.objects_rescued == len(gone)
    written = sum(len(list(Pack(p, sealed=True).ids())) for p in (res.new_pack, res.rescue_pack))
    assert res.objects_kept == written
    repo.close()


def _new_pack_with(repo, data: bytes) -> tuple[str, str]:
    """Store `data` alone in a new sealed pack: (its id, the pack)."""
    before = set(_sealed_packs(repo))
    oid = repo.objects.put_blob(data)
    repo.objects.flush()
    repo.objects.seal_active()
    (pack,) = set(_sealed_packs(repo)) - before
    return oid, pack


def _dead_writers_packs(tmp_path, *data: bytes) -> list[tuple[str, str]]:
    """Active packs writers left when they died (no flock, no index), one per item of `data`
    (the writers are open at once, so none takes over another's pack): (id, pack) each."""
    from ctxstore.store.packstore import PackStore

    packs = tmp_path / ".ctx" / "objects" / "packs"
    out = []
    writers = []
    for d in data:
        before = set(packs.glob("*.pack"))
        writers.append(PackStore(tmp_path / ".ctx" / "objects"))
        oid = writers[-1].put_blob(d)
        (pack,) = set(packs.glob("*.pack")) - before
        out.append((oid, str(pack)))
    for w in writers:
        w.close()
    return out


def test_a_pack_written_exactly_at_the_prune_time_is_kept_whole(tmp_path):
    """--prune=<time> rewrites packs last written *before* that time (docs/format.md, gc step
    5): one written at that very second is kept whole, one written a second earlier is not."""
    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    cutoff = int(time.time()) - 30 * 86400
    earlier, earlier_pack = _new_pack_with(repo, b"garbage written a second too early")
    at, at_pack = _new_pack_with(repo, b"garbage written at the cutoff")
    for pack in _sealed_packs(repo):
        os.utime(pack, (cutoff - 1, cutoff - 1))
    os.utime(at_pack, (cutoff, cutoff))
    res = pm.gc(repo, prune="2.weeks.ago", now=cutoff + 14 * 86400)
    repo.close()
    repo = Repository.open(tmp_path)
    assert earlier not in repo.objects and at in repo.objects
    assert os.path.exists(at_pack) and not os.path.exists(earlier_pack)
    assert res.kept_packs == res.packs_after - 1  # on disk: the kept packs and the new one
    repo.close()


def test_a_dry_run_predicts_what_the_real_run_removes_and_keeps(tmp_path):
    """With packs of every kind — old and new sealed ones, old and new ones dead writers left
    active — a dry run's counts are the real run's."""
    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    month_ago = int(time.time()) - 30 * 86400
    for pack in _sealed_packs(repo):
        os.utime(pack, (month_ago, month_ago))
    _new_pack_with(repo, b"garbage in a new sealed pack")
    (old_garbage, old_active), (_, at_cutoff) = _dead_writers_packs(
        tmp_path, b"garbage an old dead writer left", b"garbage a dead writer left at --prune")
    os.utime(old_active, (month_ago, month_ago))
    now = int(time.time())
    os.utime(at_cutoff, (now - 14 * 86400, now - 14 * 86400))  # not before it: kept whole
    repo.close()
    work = tmp_path / "copy"
    shutil.copytree(tmp_path / ".ctx", work / ".ctx", copy_function=shutil.copy2)
    repo = Repository.open(work)
    dry = pm.gc(repo, prune="2.weeks.ago", dry_run=True, now=now)
    real = pm.gc(repo, prune="2.weeks.ago", now=now)
    assert (dry.objects_before, dry.objects_removed, dry.packs_before, dry.kept_packs) == (
        real.objects_before, real.objects_removed, real.packs_before, real.kept_packs)
    assert real.objects_removed == 1 and real.kept_packs == 2  # the new sealed one, the one at --prune
    assert old_garbage not in repo.objects
    repo.close()


def test_repack_deletes_old_packs_while_other_processes_have_the_store_open(tmp_path):
    """`ctx repack` drops nothing, so unlike gc it does not wait for readers to close the
    store (docs/format.md "Repack")."""
    from ctxstore.maintenance import repack as pr
    from tests.test_repack import _store

    repo = _store(tmp_path, rounds=2, per=150)
    reader = Repository.open(tmp_path / ".ctx")
    assert next(iter(repo.objects)) in reader.objects  # a look-up: holds the shared gc lock
    assert reader.objects.gc_lock.held
    old = _sealed_packs(repo)
    rep = pr.repack(repo, wait=0.1)
    assert rep.packs_after == 1 and not any(os.path.exists(p) for p in old)
    reader.close()
    repo.close()


def test_a_candidate_with_a_damaged_record_is_kept_whole_and_named(tmp_path):
    from ctxstore.store.repack import RepackLock

    repo, info = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    blob, damaged = _new_pack_with(repo, b"tool output whose record gets damaged " * 8)
    damaged = _rename_pack(damaged, "0" * 40)  # the first candidate gc meets
    garbage, other = _new_pack_with(repo, b"garbage in a later candidate")
    with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
        tx.append("MessageAdded", "agent", {"role": "custom", "text": "see output"},
                  {"artifact_id": blob})
    repo.objects.flush()
    live = _live(repo)
    assert blob in live
    data = bytearray(open(damaged, "rb").read())
    data[-3] ^= 0xFF  # inside the record's payload: its crc no longer matches
    open(damaged, "wb").write(bytes(data))
    with RepackLock(repo.objects.packs_dir):
        res = rp.repack(repo.objects, live, float("inf"), wait=5)
    assert res.kept_packs == [damaged] and os.path.exists(damaged)
    assert other in res.removed_packs and damaged not in res.removed_packs
    repo.close()
    repo = Repository.open(tmp_path)
    assert garbage not in repo.objects and live <= set(repo.objects)
    repo.close()


def test_a_dry_run_gc_expires_no_reflog_entry(tmp_path):
    from ctxstore.refs import ReflogEntry

    repo, info = build_repo(tmp_path)
    main = f"refs/sessions/{info['session']}/main"
    aged = [ReflogEntry(e.old, e.new, e.ts_ms - 100 * 86_400_000, e.actor, e.message)
            for e in repo.refs.reflog(main)]
    repo.refs.replace_reflog(main, aged)
    res = pm.gc(repo, prune="now", dry_run=True)
    assert res.reflog_expired == len(aged) > 0  # what a real run would expire
    assert repo.refs.reflog(main) == aged
    repo.close()


def test_gc_retrains_the_dictionary_by_default_when_it_pays(tmp_path, monkeypatch):
    from ctxstore.store import recompress
    from ctxstore.store.packstore import read_dicts_file
    from tests.test_repack import _store

    monkeypatch.setattr(recompress, "REPACK_DICT_SIZE", 16 * 1024)  # one that pays here
    repo = _store(tmp_path)
    dicts = os.path.join(repo.objects.path, "dicts")
    before = read_dicts_file(dicts)[0]
    pm.gc(repo, prune="now", retrain=False)  # told not to: the same dictionaries
    assert read_dicts_file(dicts)[0] == before
    calls = []
    pm.gc(repo, prune="now", progress=lambda stage, n, total: calls.append((stage, n, total)))
    after = read_dicts_file(dicts)[0]
    assert len(after) == len(before) + 1 and list(after)[:len(before)] == list(before)
    # over a thousand records: the recompression reports how far it got, out of how many
    assert {c[0] for c in calls} >= {"mark", "recompress"}
    assert all(0 < n <= total for stage, n, total in calls if stage == "recompress")
    repo.close()


def test_gc_keeps_what_its_kept_reflog_lines_name_and_a_dry_run_agrees(tmp_path):
    """--expire-unreachable longer than the default keeps an off-tip reflog line; the object
    it names must stay (a line naming a deleted object dangles). The dry run, which rewrites no
    reflog, must apply the same expiry to count the same removals."""
    from ctxstore.refs import ReflogEntry
    from tests.test_gc import _garbage_repo

    repo, info, garbage = _garbage_repo(tmp_path)
    later = time.time() + 100 * 86400  # every operation is past --expire (90 days) by then
    ref = f"refs/sessions/{info['session']}/tmp"
    lines = [ReflogEntry(e.old, e.new, int((later - 35 * 86400) * 1000), e.actor, e.message)
             for e in repo.refs.reflog(ref)]  # 35 days old at `later`: off the (deleted) tip
    repo.refs.replace_reflog(ref, lines)
    # two lines of main naming garbage as their old value: one past --expire (on the tip, so
    # only its age expires it), one past --expire-unreachable at `later` (not yet today)
    main = f"refs/sessions/{info['session']}/main"
    tip = repo.refs.read(main)
    repo.refs.replace_reflog(main, [
        *repo.refs.reflog(main),
        ReflogEntry(garbage[0], tip, int((later - 100 * 86400) * 1000), "t", "reset"),
        ReflogEntry(garbage[1], info["compaction"], int((later - 50 * 86400) * 1000), "t", "x")])
    repo.objects.flush()
    expiry = {"now": later, "expire_days": 90, "unreachable_days": 40}
    live = oracle.live(tmp_path / ".ctx", repo.objects, **expiry)
    assert info["side"] in live
    kw = {"prune": "now", "now": later, "expire_unreachable": "40.days.ago"}
    dry = pm.gc(repo, dry_run=True, **kw)
    res = pm.gc(repo, **kw)
    # what stays is predicted (the real run also removes the operation its own expiry wrote:
    # made now, it is past --expire at `later`)
    assert res.objects_before - res.objects_removed == dry.objects_before - dry.objects_removed
    assert dry.objects_removed >= len(garbage)
    assert repo.refs.reflog(ref) == lines and info["side"] in repo.objects
    repo.close()
    repo = Repository.open(tmp_path)
    left = oracle.ObjectGraph(repo.objects).ids
    assert live <= left and not set(garbage) & left
    repo.close()


def test_gc_expires_reflog_lines_by_the_ages_it_is_given(tmp_path):
    from ctxstore.refs import ReflogEntry

    repo, info = build_repo(tmp_path)
    main = f"refs/sessions/{info['session']}/main"
    now = float(int(time.time()))  # whole seconds: a line's ms can sit exactly at a cutoff
    on_tip, side = repo.refs.reflog(main)[-1].new, info["compaction"]  # side: not an event

    def line(new, days):
        return ReflogEntry(new, new, int((now - days * 86400) * 1000), "t", "x")

    lines = [line(on_tip, 50), line(on_tip, 20), line(side, 25), line(side, 15),
             line(on_tip, 45), line(side, 20)]  # exactly at each cutoff: not older, kept
    repo.refs.replace_reflog(main, lines)
    res = pm.gc(repo, prune="now", now=now, expire="45.days.ago", expire_unreachable="20.days.ago")
    # 50 days: past --expire; 25 days off the tip: past --expire-unreachable
    assert res.reflog_expired == 2 and repo.refs.reflog(main) == [lines[1], *lines[3:]]
    (last, *_) = operations.walk(repo)  # one operation, so `ctx undo` puts them back
    assert last.op.description == "reflog expire" and len(last.op.reflogs) == 1
    repo.close()


def test_reflog_expiry_counts_every_reflog(tmp_path):
    repo, info = build_repo(tmp_path)
    names = pm.reflog_names(repo)
    total = sum(len(repo.refs.reflog(n)) for n in names)
    assert len(names) >= 3 and total > len(names)
    res = pm.reflog_expire(repo, expire="never", expire_unreachable="never")
    assert res.kept == total and res.expired == 0 and sorted(res.refs) == sorted(names)
    assert sum(r["kept"] for r in res.refs.values()) == total


def test_ages_are_exact_durations_in_any_local_time_zone(monkeypatch):
    """`2.days.ago` is 48 hours before now, also when a daylight-saving change of the local
    zone lies between (New York left DST on 2023-11-05)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        now = 1_699_272_000.0  # 2023-11-06 12:00 UTC
        assert pm.parse_time("2.days.ago", now) == now - 2 * 86400
        assert pm.parse_time("1.week.ago", now) == now - 7 * 86400
    finally:
        monkeypatch.undo()
        time.tzset()


def test_gc_recompresses_at_the_level_it_is_given(tmp_path):
    from tests.test_repack import _store

    repo = _store(tmp_path / "a", rounds=2, per=300)
    repo.close()
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy2)
    sizes = {}
    for name, level in (("a", 1), ("b", 19)):
        repo = Repository.open(tmp_path / name)
        sizes[level] = pm.gc(repo, prune="now", level=level, retrain=False).bytes_after
        repo.close()
    assert sizes[19] < sizes[1]


def test_gc_waits_for_readers_only_as_long_as_it_is_told(tmp_path):
    from ctxstore.errors import LockHeld

    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    reader = Repository.open(tmp_path)
    assert next(iter(repo.objects)) in reader.objects  # holds the shared gc lock from now on
    start = time.perf_counter()
    with pytest.raises(LockHeld, match=r"stayed locked for 0\.2s"):
        pm.gc(repo, prune="now", wait=0.2)
    assert time.perf_counter() - start < 5  # not the default 10 s
    reader.close()
    repo.close()


def test_gc_reports_how_long_it_took(tmp_path):
    repo, _ = build_repo(tmp_path)
    start = time.perf_counter()
    res = pm.gc(repo, prune="now")
    took = time.perf_counter() - start
    assert 0 < res.seconds <= took + 0.001 and res.seconds == round(res.seconds, 3)
    repo.close()


def test_gc_with_nothing_old_enough_does_not_wait_for_readers(tmp_path):
    """Every pack is newer than --prune: gc deletes nothing, so it neither needs nor waits for
    the exclusive lock a reader's open store keeps from it."""
    repo, _ = build_repo(tmp_path)
    repo.objects.put_blob(b"young garbage")
    repo.objects.flush()
    reader = Repository.open(tmp_path)
    assert next(iter(repo.objects)) in reader.objects  # holds the shared gc lock
    res = pm.gc(repo, wait=0)  # default --prune: two weeks ago
    assert res.objects_removed == 0 and res.kept_packs == res.packs_before
    reader.close()
    repo.close()


def test_gc_recompresses_a_pack_with_nothing_dead_in_it(tmp_path):
    """The rewrite is also how records get gc's compression level, so a candidate is rewritten
    even when every record in it is live — one pack or several."""
    for n_packs in (1, 2):
        root = tmp_path / str(n_packs)
        repo, info = build_repo(root)
        repo.objects.flush()
        repo.objects.seal_active()
        if n_packs == 2:  # a second pack, of live records only
            with repo.transaction(f"refs/sessions/{info['session']}/main") as tx:
                tx.append("MessageAdded", "agent", {"role": "custom", "text": "live too"})
            repo.objects.flush()
            repo.objects.seal_active()
        old = _sealed_packs(repo)
        assert len(old) == n_packs
        live = _live(repo)
        res = pm.gc(repo, prune="now", level=19, retrain=False)
        assert res.objects_removed == 0 and not any(os.path.exists(p) for p in old), n_packs
        assert res.packs_after == 1
        repo.close()
        repo = Repository.open(root)
        assert live <= set(repo.objects)
        repo.close()


def test_a_rewrite_without_recompression_merges_its_candidates(tmp_path):
    """store.repack.repack without `prepare` (records copied byte for byte) still merges every
    candidate into one pack, and names the packs it removed."""
    repo, _ = build_repo(tmp_path)
    repo.objects.flush()
    repo.objects.seal_active()
    _new_pack_with(repo, b"a second pack")
    old = _sealed_packs(repo)
    everything = set(repo.objects)
    res = rp.repack(repo.objects, everything, float("inf"), exclusive=False)
    assert sorted(res.removed_packs) == old and res.new_pack and res.objects_removed == 0
    assert _sealed_packs(repo) == [res.new_pack]
    repo.close()
    repo = Repository.open(tmp_path)
    assert set(repo.objects) == everything
    repo.close()


def test_a_rewrite_without_recompression_drops_the_dead_records_of_one_candidate(tmp_path):
    repo, _ = build_repo(tmp_path)
    garbage = repo.objects.put_blob(b"garbage")
    repo.objects.flush()
    repo.objects.seal_active()
    (old,) = _sealed_packs(repo)
    live = _live(repo)
    res = rp.repack(repo.objects, live, float("inf"), exclusive=False)
    assert res.removed_packs == [old] and res.objects_removed == 1
    repo.close()
    repo = Repository.open(tmp_path)
    assert garbage not in repo.objects and live <= set(repo.objects)
    repo.close()
