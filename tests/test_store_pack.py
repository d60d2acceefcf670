"""PackStore: the store contract, plus what only an on-disk pack store has to get right."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ctxstore import codec
from ctxstore.errors import CorruptObject, CtxError, ObjectNotFound, StoreNotFound
from ctxstore.store.fsck import verify
from ctxstore.store.pack import HEADER_SIZE
from ctxstore.store.packconsolidate import choose
from ctxstore.store.packstore import PackStore
from tests.store_contract import StoreContract

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TestPackStore(StoreContract):
    def make_store(self, tmp_path):
        return PackStore(tmp_path / "objects")


def event(i: int, text: str = "ran the tests, 3 failed") -> dict:
    return {"type": "ToolCallFinished", "actor": "tool", "generation": i,
            "payload": {"tool_call_id": f"call_{i:06d}", "name": "bash",
                        "preview": f"{text} #{i}", "size": 100 + i, "truncated": False},
            "ts": f"2026-01-01T00:00:{i % 60:02d}.000Z"}


def pack_files(path, suffix=".pack"):
    return sorted(p for p in os.listdir(os.path.join(path, "packs"))
                  if p.startswith("pack-") and p.endswith(suffix))


def put_events(store, n, start=0):
    return [store.put("value", event(i)) for i in range(start, start + n)]


def test_reopen_sees_everything(tmp_path):
    with PackStore(tmp_path) as s:
        ids = put_events(s, 500)
    with PackStore(tmp_path, create=False) as s:
        assert set(s) == set(ids) and len(s) == 500
        assert s.get(ids[123]) == event(123)


def test_missing_store_without_create(tmp_path):
    with pytest.raises(StoreNotFound):
        PackStore(tmp_path / "nope", create=False)


# The durability modes against a kill -9 and a simulated power cut: test_durability_crash.py.


def test_invalid_durability_rejected(tmp_path):
    with pytest.raises(CtxError):
        PackStore(tmp_path, durability="sometimes")


def test_sequential_writers_take_over_one_pack(tmp_path):
    ids = []
    for i in range(12):
        with PackStore(tmp_path) as s:
            ids.append(s.put("value", event(i)))
    assert len(pack_files(tmp_path)) == 1
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids)


def test_sequential_processes_take_over_one_pack(tmp_path):
    code = ("import sys; from ctxstore.store.packstore import PackStore\n"
            "with PackStore(sys.argv[1]) as s: print(s.put('value', {'n': int(sys.argv[2])}))\n")
    ids = [subprocess.run([sys.executable, "-c", code, str(tmp_path), str(i)], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout.strip()
           for i in range(4)]
    assert len(pack_files(tmp_path)) == 1
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [{"n": i} for i in range(4)]


def test_two_live_writers_use_two_packs(tmp_path):
    a, b = PackStore(tmp_path), PackStore(tmp_path)
    ia, ib = a.put("value", 1), b.put("value", 2)
    assert len(pack_files(tmp_path)) == 2
    assert ib in a and ia in b  # a miss rescans the other writer's tail
    a.close()
    b.close()


def test_sealing_writes_index_and_lookups_use_it(tmp_path):
    with PackStore(tmp_path, seal_size=20_000, dict_samples=0) as s:
        ids = put_events(s, 400)
    assert pack_files(tmp_path, ".idx")  # at least one pack sealed
    with PackStore(tmp_path) as s:
        sealed = [p for p in s.packs() if p.sealed]
        assert sealed and all(p.count() > 0 for p in sealed)
        in_idx = {i for p in sealed for i in p.ids()}
        probe = next(iter(in_idx))
        assert s.get_raw(probe)[0] == "value"
        assert set(s) == set(ids)
        assert sorted(s.ids_with_prefix(probe[:6])) == sorted(i for i in ids if i.startswith(probe[:6]))
        assert list(verify(s)) == []


def test_consolidation_merges_small_packs(tmp_path):
    with PackStore(tmp_path, seal_size=4096, max_packs=3, dict_samples=0) as s:
        ids = put_events(s, 600)
    sealed = pack_files(tmp_path, ".idx")
    # 600 events of ~250 bytes would make ~35 packs of 4 KB without consolidation
    assert 1 <= len(sealed) <= 8
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids)
        assert all(s.get(i) == event(n) for n, i in enumerate(ids))
        assert list(verify(s)) == []


def test_choose_is_geometric():
    assert choose([10, 10, 10, 10]) == 4
    assert choose([1, 1, 100]) == 2
    assert choose([1, 4, 16]) == 0
    assert choose([5]) == 0


def test_dictionary_trained_and_used(tmp_path):
    with PackStore(tmp_path, dict_samples=300) as s:
        ids = put_events(s, 1000)
        assert s._compressor.dict_id != 0
    lines = open(tmp_path / "dicts").read().split()
    assert len(lines) == 2 and int(lines[0]) == s._compressor.dict_id
    with PackStore(tmp_path) as s:  # a fresh reader loads the dictionary on demand
        assert s.type_of(lines[1]) == "zdict"
        assert [s.get(i) for i in ids[-50:]] == [event(i) for i in range(950, 1000)]
        assert list(verify(s)) == []
    with PackStore(tmp_path) as s:  # and a later writer compresses with it
        new = s.put("value", event(5000))
        assert s._compressor.dict_id == int(lines[0])
    with PackStore(tmp_path) as s:
        assert s.get(new) == event(5000)


def _record_offset(store, obj_id):
    for pack in store.packs():
        off = pack.locate(obj_id, bytes.fromhex(obj_id))
        if off >= 0:
            return pack, off
    raise AssertionError("not found")


@pytest.mark.parametrize("seal", [False, True])
def test_flipped_byte_is_corrupt_and_fsck_names_it(tmp_path, seal):
    with PackStore(tmp_path, seal_size=1024 * 1024 if not seal else 2048, dict_samples=0) as s:
        ids = put_events(s, 30)
    with PackStore(tmp_path) as s:
        victim = ids[7]
        pack, off = _record_offset(s, victim)
        assert pack.sealed == seal
    with open(pack.path, "r+b") as f:
        f.seek(off + codec.RECORD_HEAD_SIZE + 3)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))
    with PackStore(tmp_path) as s:
        with pytest.raises(CorruptObject) as exc:
            s.get_raw(victim)
        assert victim in str(exc.value) and exc.value.details["offset"] == off
        assert exc.value.details["pack"] == pack.name
        assert s.get(ids[8]) == event(8)
        problems = list(verify(s))
    assert [(p.id, p.pack, p.offset) for p in problems] == [(victim, pack.name, off)]


def test_torn_tail_keeps_everything_before_it(tmp_path):
    with PackStore(tmp_path) as s:
        ids = put_events(s, 50)
    (name,) = pack_files(tmp_path)
    path = tmp_path / "packs" / name
    good = path.stat().st_size
    last = codec.encode_record("ab" * 32, "value", b"x" * 100, codec.COMP_NONE, 0, 100)
    with open(path, "ab") as f:
        f.write(last[:60])  # a record cut short by a crash
    with PackStore(tmp_path) as s:  # readers stop at the tear
        assert set(s) == set(ids)
        assert list(verify(s)) == []
    with PackStore(tmp_path) as s:  # the next writer cuts the tail and appends after it
        new = s.put("value", "after the crash")
        assert os.path.getsize(path) > good
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids) | {new}
        assert list(verify(s)) == []


def test_bad_crc_at_tail_is_cut_but_damage_in_middle_is_kept(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 10)
    (name,) = pack_files(tmp_path)
    path = tmp_path / "packs" / name
    size = path.stat().st_size
    with open(path, "r+b") as f:  # zero the last record's final bytes, as a power cut might
        f.seek(size - 8)
        f.write(b"\0" * 8)
    with PackStore(tmp_path) as s:
        s.put("value", 1)
    with PackStore(tmp_path) as s:
        assert ids[-1] not in s and all(i in s for i in ids[:-1])
        # damage in the middle of an active pack: the pack is left alone, not truncated
        pack, off = _record_offset(s, ids[2])
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(b"XX")
    before = path.stat().st_size
    with PackStore(tmp_path) as s:
        s.put("value", 2)
        assert [p.kind for p in verify(s)] == ["damage"]
    assert path.stat().st_size == before
    assert len(pack_files(tmp_path)) == 2


def test_reader_sees_other_writers_new_tail(tmp_path):
    w = PackStore(tmp_path)
    r = PackStore(tmp_path)
    first = w.put("value", "one")
    assert r.get(first) == "one"
    second = w.put("value", "two")
    assert r.get(second) == "two"  # miss -> rescan of the new tail
    with pytest.raises(ObjectNotFound):
        r.get_raw("0" * 64)
    w.close()
    r.close()


def test_idle_batch_writer_syncs_in_background(tmp_path, monkeypatch):
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    with PackStore(tmp_path, durability="batch") as s:
        s.put("value", "x")
        deadline = time.monotonic() + 2
        while not synced and time.monotonic() < deadline:
            time.sleep(0.01)
        assert synced, "pending object not synced by the timer thread"


def test_reader_survives_consolidation_by_another_process(tmp_path):
    with PackStore(tmp_path, seal_size=4096, dict_samples=0, max_packs=100) as s:
        ids = put_events(s, 300)
    reader = PackStore(tmp_path)
    assert reader.get(ids[0]) == event(0)
    with PackStore(tmp_path, seal_size=4096, dict_samples=0, max_packs=2) as s:
        put_events(s, 100, start=300)  # seals and consolidates
    assert all(reader.get(i) == event(n) for n, i in enumerate(ids))
    reader.close()


def test_empty_pack_file_header_only(tmp_path):
    with PackStore(tmp_path) as s:
        s.put("value", 1)
    (name,) = pack_files(tmp_path)
    with open(tmp_path / "packs" / name, "r+b") as f:
        f.truncate(HEADER_SIZE)
    with PackStore(tmp_path) as s:
        assert len(s) == 0
        s.put("value", 2)
        assert len(s) == 1
