"""The bulk append path (issue 19): bodies queued inside a transaction and compressed together,
`BranchAppend.extend`, events stored without a presence check after a new one, fewer GC passes.

Each must change nothing a reader can see: the same frames, the same ids, the same objects
readable at every moment, no duplicate records, the GC thresholds given back."""

from __future__ import annotations

import gc
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, codec
from ctxstore.porcelain import sessions as ps
from ctxstore.repo import Repository
from ctxstore.repo.eventcache import EventCache
from ctxstore.repo.gcpause import YOUNG, fewer_collections
from ctxstore.store.bodyqueue import BATCH as QUEUE_BODIES
from ctxstore.store.bodyqueue import BodyQueue
from ctxstore.store.pack import HEADER_SIZE, scan
from ctxstore.store.packstore import PackStore
from tests.store_contract import StoreContract


class TestPackStoreInTransaction(StoreContract):
    """The whole store contract with the queue in use (puts inside a transaction)."""

    def make_store(self, tmp_path):
        s = PackStore(tmp_path / "objects", dict_samples=5)
        s.begin_transaction()
        return s


def _bodies():
    text = st.text(min_size=0, max_size=400)
    return st.lists(st.one_of(st.binary(max_size=300), text.map(lambda t: t.encode() * 3)),
                    min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(_bodies(), st.sampled_from([0, 2]), st.booleans())
def test_compress_many_gives_the_frames_of_compress(bodies, threads, with_dict):
    samples = [b"tool output line %d with words " % i * 4 for i in range(300)]
    dictionary = codec.train_dictionary(samples) if with_dict else None
    comp = codec.Compressor(3, dictionary)
    assert comp.compress_many(bodies, threads) == [comp.compress(b) for b in bodies]


def test_compress_many_large_and_tiny_bodies():
    comp = codec.Compressor(3)
    bodies = [b"x", b"y" * (codec.SMALL_OBJECT_LIMIT + 10), os.urandom(500), b"ab" * 400]
    assert comp.compress_many(bodies) == [comp.compress(b) for b in bodies]
    assert comp.compress_many([]) == []


def _records(store: PackStore) -> list[str]:
    """Every record's id in every pack file, duplicates included."""
    store.flush()
    out = []
    for name in sorted(os.listdir(os.path.join(store.path, "packs"))):
        if name.endswith(".pack"):
            with open(os.path.join(store.path, "packs", name), "rb") as f:
                entries, _ = scan(f.read(), HEADER_SIZE)
            out += [hex_id for hex_id, _, _ in entries]
    return out


def test_queued_bodies_are_readable_at_every_moment(tmp_path):
    s = PackStore(tmp_path, dict_samples=10, seal_size=16 * 1024)
    s.put("blob", b"start")
    for i in range(20):  # train the dictionary: the queue is used once there is one
        s.put("value", {"warm": i, "text": "some words " * 20})
    s.begin_transaction()
    ids = []
    for i in range(QUEUE_BODIES + 100):
        ids.append(s.put("value", {"i": i, "text": "tool output " * 30}))
        assert ids[-1] in s
    assert s._queued  # some are still waiting
    assert s.get(ids[-1]) == {"i": QUEUE_BODIES + 99, "text": "tool output " * 30}
    assert not s._queued  # the read wrote them
    again = s.put("value", {"i": 3, "text": "tool output " * 30})
    assert again == ids[3]
    s.end_transaction()
    assert set(ids) <= set(s)
    s.close()
    with PackStore(tmp_path, create=False) as r:
        for i, obj_id in enumerate(ids):
            assert r.get(obj_id) == {"i": i, "text": "tool output " * 30}
        assert len(pack_names := [p for p in os.listdir(tmp_path / "packs")
                                  if p.endswith(".idx")]) >= 2, pack_names  # sealed meanwhile


def test_flush_writes_the_queue_durably(tmp_path):
    s = PackStore(tmp_path, dict_samples=3)
    for i in range(5):
        s.put("value", {"warm": i, "text": "words " * 30})
    s.begin_transaction()
    obj_id = s.put("value", {"queued": True, "text": "words " * 30})
    assert obj_id in s._queued
    s.flush()
    assert not s._queued
    # another process sees it once flushed, before the transaction ends
    with PackStore(tmp_path, create=False) as r:
        assert r.get(obj_id) == {"queued": True, "text": "words " * 30}
    s.end_transaction()
    s.close()


def _session(tmp_path, name):
    repo = Repository.init(tmp_path / name)
    repo.new_session(title="bulk", nonce="fixed", ts="2026-01-01T00:00:00.000Z")
    return repo


LINES = [f'{{"type":"ToolCallFinished","actor":"tool","payload":{{"output":"line {i} "}},'
         f'"ts":"2026-01-01T00:00:{i % 60:02d}.000Z"}}' for i in range(700)]


def test_extend_stores_the_ids_append_stores(tmp_path):
    bulk = _session(tmp_path, "bulk")
    res = ps.append_batch(bulk, LINES)
    one = _session(tmp_path, "one")
    with one.transaction(message="one by one") as tx:
        for line in LINES:
            obj = json.loads(line)
            tx.append(obj["type"], obj["actor"], obj["payload"], None, obj["ts"])
    assert res.head == tx.tip
    assert bulk.graph.generation(res.head) == len(LINES) + 1
    bulk.close()
    one.close()


def test_a_batch_appended_twice_stores_no_duplicate_records(tmp_path):
    repo = _session(tmp_path, "r")
    base = repo.current().tip
    first = ps.append_batch(repo, LINES)
    branch = repo.head_branch()
    with repo.transaction(message="reset") as tx:
        tx.set_ref(branch, base)
    second = ps.append_batch(repo, LINES)  # same tip, same lines: the same events
    assert second.head == first.head
    records = _records(repo.objects)
    assert len(records) > len(LINES)
    assert len(records) == len(set(records))
    repo.close()


def test_context_manager_batch_twice_stores_no_duplicate_records(tmp_path):
    repo = _session(tmp_path, "r")
    cm = ContextManager(repo)
    base = cm.tip
    heads = []
    for _ in range(2):
        with repo.transaction(message="reset") as tx:
            tx.set_ref(repo.head_branch(), base)
        with cm.batch():
            for i in range(600):
                cm.append_event("x.test.Step", "agent", {"i": i}, ts="2026-01-01T00:00:00.000Z")
        heads.append(cm.tip)
    assert heads[0] == heads[1]
    assert repo.graph.generation(heads[0]) == 601
    records = _records(repo.objects)
    assert len(records) == len(set(records))
    repo.close()


def test_fewer_collections_restores_the_thresholds():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == YOUNG
        with fewer_collections():  # nested: joins the outer one
            assert gc.get_threshold()[0] == YOUNG
        assert gc.get_threshold()[0] == YOUNG
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_fewer_collections_leaves_a_disabled_collector_alone():
    gc.disable()
    try:
        before = gc.get_threshold()
        with fewer_collections():
            assert gc.get_threshold() == before
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Failing(codec.Compressor):
    def compress_many(self, bodies, threads=0):
        raise MemoryError("no room for the frames")


@pytest.mark.parametrize("background", [True, False])
def test_a_compression_error_on_the_worker_is_raised_to_the_writer(background):
    q = BodyQueue(batch=3, background=background)
    comp = _Failing(3)
    for i in range(3):
        full = q.add(f"{i:064x}", "blob", b"body %d" % i * 30)
    assert full
    if background:
        assert q.rotate(comp) == []  # started on the worker; its failure comes with the next
        assert f"{0:064x}" in q
    with pytest.raises(MemoryError, match="no room"):
        q.rotate(comp) if not background else q.drain(comp)
    assert f"{0:064x}" not in q  # not left looking stored
    q.close()


@pytest.mark.parametrize("background", [True, False])
def test_queue_hands_back_every_body_in_put_order(background):
    q = BodyQueue(batch=4, background=background)
    comp = codec.Compressor(3)
    items = [(f"{i:064x}", "blob", b"payload %d " % i * 20) for i in range(10)]
    out = []
    for item in items:
        if q.add(*item):
            out += q.rotate(comp)
    out += q.drain(comp)
    assert [item for item, _ in out] == items
    assert [frame for _, frame in out] == [comp.compress(b) for _, _, b in items]
    assert not q
    q.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_compresses_with_its_own_worker():
    q = BodyQueue(batch=2)
    comp = codec.Compressor(3)
    for i in range(2):
        q.add(f"{i:064x}", "blob", b"first %d " % i * 20)
    q.rotate(comp)  # the parent's worker now exists (its batch maybe still running)
    pid = os.fork()
    if pid == 0:  # the child: its batches must still come back (an inherited pool would hang)
        code = 1
        try:
            for i in range(2, 6):
                if q.add(f"{i:064x}", "blob", b"child %d " % i * 20):
                    q.rotate(comp)
            code = 0 if len(q.drain(comp)) == 2 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(q.drain(comp)) == 2
    q.close()


def test_marks_written_soon_are_on_disk_after_wait(tmp_path):
    cache = EventCache(tmp_path, "sessions")
    ids = [f"{i:064x}" for i in range(5)]
    for eid in ids:
        cache.put_soon(eid, "a" * 64)
        assert cache.get(eid) == "a" * 64  # readable at once
    cache.wait()
    fresh = EventCache(tmp_path, "sessions")
    assert [fresh.get(eid) for eid in ids] == ["a" * 64] * 5


def test_a_mark_that_cannot_be_written_fails_the_wait(tmp_path):
    (tmp_path / "cache").write_text("a file where the cache directory should be")
    cache = EventCache(tmp_path, "sessions")
    cache.put_soon("0" * 64, "a" * 64)
    with pytest.raises(OSError):
        cache.wait()
    cache.wait()  # nothing pending any more


def test_a_bulk_append_marks_its_session_every_256_generations(tmp_path):
    repo = _session(tmp_path, "r")
    res = ps.append_batch(repo, LINES)
    sid = repo.current().session
    fresh = Repository.open(tmp_path / "r")
    tip, found = res.head, []
    while tip:
        if fresh.graph.generation(tip) % 256 == 0:
            found.append(fresh.session_marks.get(tip))
        parents = fresh.objects.get(tip).parents
        tip = parents[0] if parents else None
    assert found == [sid, sid]  # generations 512 and 256, read from disk
    fresh.close()
    repo.close()
