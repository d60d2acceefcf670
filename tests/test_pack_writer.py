"""PackWriter (store/packwriter.py) on its own, without a PackStore around it: its defaults,
which pack it takes over, when buffered records reach the OS, when the group-commit thread
syncs, and when the partial index is extended — each at its exact boundary.

Group commit is timed by a thread, so two tests wait for it: they give the correct code
no chance to fail (a sync that must come is waited for up to 10 s; one that must not come
cannot come before its deadline, which `time.monotonic` guarantees), only a broken one."""

from __future__ import annotations

import os
import threading
import time

import pytest

from ctxstore import codec
from ctxstore.store import packwriter
from ctxstore.store.pack import HEADER_SIZE, Pack, create_pack
from ctxstore.store.packstore import PackStore
from ctxstore.store.packwriter import PackWriter


def _record(i: int) -> tuple[str, bytes]:
    """A 66-byte record of a 10-byte blob, stored as it is."""
    body = b"item %05d" % i
    oid = codec.compute_id("blob", body)
    return oid, codec.encode_record(oid, "blob", body, 0, 0, len(body))


RECORD = len(_record(0)[1])


@pytest.fixture
def packs_dir(tmp_path):
    path = tmp_path / "packs"
    path.mkdir()
    return str(path)


@pytest.fixture
def syncs(monkeypatch):
    """fdatasync calls made by packwriter."""
    calls = []
    real = os.fdatasync
    proxy = type("os", (), {})()
    for name in dir(os):
        if not name.startswith("__"):
            setattr(proxy, name, getattr(os, name))
    proxy.fdatasync = lambda fd: calls.append(fd) or real(fd)
    monkeypatch.setattr(packwriter, "os", proxy)
    return calls


def _wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_defaults(packs_dir):
    w = PackWriter(packs_dir)
    assert (w.durability, w.sync_interval, w.sync_objects) == ("batch", 0.1, 100)
    assert (w.index_every, w.index_at_close) == (packwriter.INDEX_EVERY, packwriter.INDEX_AT_CLOSE)
    assert (w.buffering, w.buffered, w.pack, w.orphans) == (False, 0, None, [])
    w.close()


def test_a_new_writer_writes_each_record_at_once_and_tracks_the_pack(packs_dir):
    w = PackWriter(packs_dir, "never")
    pack, orphans = w.acquire([])
    assert orphans == [] and not pack.sealed and w.size == HEADER_SIZE
    for i in range(3):
        oid, rec = _record(i)
        w.append(oid, rec)
        assert os.path.getsize(pack.path) == HEADER_SIZE + (i + 1) * RECORD  # not buffered
        assert pack.scanned == w.size == HEADER_SIZE + (i + 1) * RECORD
        assert pack.offsets[oid] == (HEADER_SIZE + i * RECORD, RECORD)
    w.close()


def test_buffered_records_reach_the_os_once_they_fill_the_buffer(packs_dir, monkeypatch):
    monkeypatch.setattr(packwriter, "BUFFER_BYTES", 4 * RECORD)
    w = PackWriter(packs_dir, "batch", sync_interval=1000, sync_objects=10**6)
    pack, _ = w.acquire([])
    w.buffering = True
    sizes = []
    for i in range(9):
        w.append(*_record(i))
        sizes.append(os.path.getsize(pack.path) - HEADER_SIZE)
    # written when exactly 4 records' bytes are buffered, then again at 8
    assert sizes == [0, 0, 0] + [4 * RECORD] * 4 + [8 * RECORD] * 2
    assert w.buffered == RECORD and w.size == HEADER_SIZE + 9 * RECORD
    w.drain()
    assert os.path.getsize(pack.path) == HEADER_SIZE + 9 * RECORD and w.buffered == 0
    w.close()


def test_always_writes_through_even_while_buffering(packs_dir, syncs):
    """Durability "always" syncs each record before append returns: it can buffer nothing."""
    w = PackWriter(packs_dir, "always")
    pack, _ = w.acquire([])
    w.buffering = True
    w.append(*_record(0))
    assert os.path.getsize(pack.path) == HEADER_SIZE + RECORD and len(syncs) == 1
    w.close()


def test_group_commit_syncs_once_sync_objects_are_pending(packs_dir, syncs):
    w = PackWriter(packs_dir, "batch", sync_interval=1000, sync_objects=5)
    w.acquire([])
    for i in range(4):
        w.append(*_record(i))
    assert w._pending == 4
    time.sleep(0.2)
    assert syncs == []  # 4 of 5, and the interval is far away
    w.append(*_record(4))
    assert _wait_for(lambda: len(syncs) == 1)
    assert _wait_for(lambda: w._pending == 0)
    w.close()


def test_group_commit_syncs_when_the_oldest_pending_record_is_sync_interval_old(packs_dir,
                                                                               syncs):
    w = PackWriter(packs_dir, "batch", sync_interval=0.5, sync_objects=1000)
    w.acquire([])
    start = time.monotonic()
    w.append(*_record(0))
    assert _wait_for(lambda: len(syncs) == 1)
    assert time.monotonic() - start >= 0.5  # not before the interval
    w.close()


@pytest.mark.parametrize("durability", ["always", "never"])
def test_the_partial_index_is_extended_when_index_every_bytes_are_unindexed(packs_dir,
                                                                            durability):
    w = PackWriter(packs_dir, durability, index_every=3 * RECORD, index_at_close=10**9)
    pack, _ = w.acquire([])
    pidx = pack.path[:-5] + ".pidx"
    for i in range(2):
        w.append(*_record(i))
    assert not os.path.exists(pidx)
    w.append(*_record(2))  # exactly index_every bytes after the header
    assert os.path.exists(pidx) and pack.indexed_end == HEADER_SIZE + 3 * RECORD
    w.close()


def _closed_active_pack(packs_dir, n, start=0):
    fd, path = create_pack(packs_dir)
    for i in range(start, start + n):
        os.write(fd, _record(i)[1])
    os.close(fd)
    return Pack(path, sealed=False)


@pytest.mark.parametrize("why", ["locked", "sealed", "damaged"])
def test_acquire_passes_over_a_pack_it_cannot_take_to_the_next(packs_dir, why):
    """The larger pack is looked at first; when it cannot be taken (another writer holds it,
    it was sealed meanwhile, it is damaged in the middle), the next one is taken over — no
    new pack is made — and no descriptor is left open."""
    big = _closed_active_pack(packs_dir, 6)
    small = _closed_active_pack(packs_dir, 2, start=100)
    holder = None
    if why == "locked":
        holder = packwriter.open_locked(big.path)
    elif why == "sealed":
        open(big.path[:-5] + ".idx", "wb").close()
    else:
        with open(big.path, "ab") as f:  # bad bytes, then a whole record
            f.write(b"torn" + _record(7)[1])
    fds = set(os.listdir("/proc/self/fd"))
    w = PackWriter(packs_dir, "never")
    pack, orphans = w.acquire([big, small])
    assert pack is small and orphans == []
    files = [os.path.basename(p) for p in (big.path, small.path)]
    if why == "sealed":
        files.append(os.path.basename(big.path)[:-5] + ".idx")
    assert sorted(os.listdir(packs_dir)) == sorted(files)  # no new pack
    w.close()
    assert set(os.listdir("/proc/self/fd")) == fds
    if holder is not None:
        os.close(holder)


def test_a_store_never_loses_a_record_to_the_syncer_thread(tmp_path):
    """Puts from one thread while the group-commit thread syncs: every object readable after."""
    with PackStore(tmp_path, dict_samples=0, sync_interval=0.001, sync_objects=3) as s:
        ids = []
        t = threading.Thread(target=lambda: ids.extend(s.put("blob", b"x%05d" % i)
                                                        for i in range(300)))
        t.start()
        t.join()
    with PackStore(tmp_path) as s:
        assert [s.get_raw(i)[1] for i in ids] == [b"x%05d" % i for i in range(300)]


def test_records_drained_from_the_buffer_are_group_committed_in_batch_mode(packs_dir, syncs):
    """A transaction's buffered records, once written, are synced by the group-commit thread
    like any others ("batch"); with "never" no thread is started at all."""
    w = PackWriter(packs_dir, "batch", sync_interval=0.05, sync_objects=1000)
    w.acquire([])
    w.buffering = True
    for i in range(3):
        w.append(*_record(i))
    assert syncs == [] and w._thread is None  # nothing written yet: nothing to sync
    w.drain()
    assert _wait_for(lambda: len(syncs) == 1)
    w.close()
    n = PackWriter(packs_dir, "never")
    n.acquire([])
    n.buffering = True
    n.append(*_record(9))
    n.drain()
    assert n._thread is None
    n.close()


@pytest.mark.parametrize("index_every, records, indexed", [
    (3 * RECORD, 3, True),        # exactly index_every bytes unindexed: extended
    (2 * RECORD + 10, 2, False),  # fewer: not
], ids=["at", "below"])
def test_a_sync_extends_the_partial_index_from_index_every_bytes_on(packs_dir, index_every,
                                                                     records, indexed):
    w = PackWriter(packs_dir, "batch", sync_interval=1000, sync_objects=10**6,
                   index_every=index_every, index_at_close=10**9)
    pack, _ = w.acquire([])
    for i in range(records):
        w.append(*_record(i))
    w.sync()
    assert os.path.exists(pack.path[:-5] + ".pidx") is indexed
    assert pack.indexed_end == (HEADER_SIZE + records * RECORD if indexed else HEADER_SIZE)
    w.close()


@pytest.mark.parametrize("index_at_close, records, indexed", [
    (3 * RECORD, 3, True), (2 * RECORD + 10, 2, False)], ids=["at", "below"])
def test_close_indexes_what_is_left_from_index_at_close_bytes_on(packs_dir, index_at_close,
                                                                 records, indexed):
    w = PackWriter(packs_dir, "never", index_at_close=index_at_close)
    pack, _ = w.acquire([])
    for i in range(records):
        w.append(*_record(i))
    w.close()
    assert os.path.exists(pack.path[:-5] + ".pidx") is indexed


def test_close_lets_go_of_orphans_it_did_not_seal(packs_dir):
    big = _closed_active_pack(packs_dir, 6)
    small = _closed_active_pack(packs_dir, 2, start=100)
    fds = set(os.listdir("/proc/self/fd"))
    w = PackWriter(packs_dir, "never")
    pack, orphans = w.acquire([big, small])
    assert pack is big and orphans == [small]
    w.close()
    assert w.orphans == [] and set(os.listdir("/proc/self/fd")) == fds
    fd = packwriter.open_locked(small.path)  # unlocked again: another writer may take it
    assert fd is not None
    os.close(fd)
