"""fsck checks a sealed pack's index against the pack, both ways: each kind of damage to an
.idx file is reported with what exactly is wrong (the index checks had no test of their own),
and the worker function of the parallel fsck verifies a run of records in this process too."""

from __future__ import annotations

import os

import pytest

from ctxstore import codec
from ctxstore.store import fsck
from ctxstore.store.packindex import PackIndex, build_index
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event, put_events


@pytest.fixture
def sealed(tmp_path):
    """(store dir, the .pack path, its .idx path, its entries {raw id: offset}, pack length)."""
    with PackStore(tmp_path, seal_size=4096, dict_samples=0) as s:
        put_events(s, 40)
    with PackStore(tmp_path) as s:
        pack = next(p for p in s.packs() if p.sealed)
        path = pack.path
    idx = path[:-len(".pack")] + ".idx"
    entries = dict(PackIndex(idx).entries())
    return tmp_path, path, idx, entries, os.path.getsize(path)


def _problems(store_dir):
    with PackStore(store_dir) as s:
        return [(p.kind, p.message) for p in fsck.verify(s, workers=1)]


def _write(idx, entries, length):
    with open(idx, "wb") as f:
        f.write(build_index(list(entries.items()), length))


def test_intact_index_is_clean(sealed):
    store_dir, _, idx, entries, length = sealed
    _write(idx, entries, length)  # rebuilt from its own entries: byte-identical
    assert _problems(store_dir) == []


def test_index_covering_another_length(sealed):
    store_dir, path, idx, entries, length = sealed
    _write(idx, entries, length + 7)
    name = os.path.basename(path)[:-5]
    assert _problems(store_dir) == [
        ("index", f"index of pack {name} covers {length + 7} bytes, pack has {length}")]


def test_index_naming_a_wrong_offset_or_missing_an_object(sealed):
    store_dir, path, idx, entries, length = sealed
    name = os.path.basename(path)[:-5]
    (a, off_a), (b, off_b) = sorted(entries.items())[:2]
    moved = dict(entries)
    moved[a] = off_a + 1
    del moved[b]
    _write(idx, moved, length)
    assert _problems(store_dir) == [
        ("index", f"index of pack {name} names {a.hex()} at offset {off_a + 1}, where the pack "
                  f"has no such record"),
        ("index", f"object {b.hex()} in pack {name} at offset {off_b} is missing from its index")]


def test_index_naming_an_object_the_pack_lacks(sealed):
    store_dir, path, idx, entries, length = sealed
    name = os.path.basename(path)[:-5]
    ghost = bytes(range(32))
    _write(idx, {**entries, ghost: 8}, length)
    assert _problems(store_dir) == [
        ("index", f"index of pack {name} names {ghost.hex()} at offset 8, where the pack has no "
                  f"such record")]


def test_index_checksum_and_truncation(sealed):
    store_dir, path, idx, entries, length = sealed
    name = os.path.basename(path)[:-5]
    data = bytearray(build_index(list(entries.items()), length))
    data[-1] ^= 1
    with open(idx, "wb") as f:
        f.write(data)
    assert _problems(store_dir) == [("index", f"index of pack {name}: checksum mismatch")]
    with open(idx, "wb") as f:
        f.write(data[:100])
    ((kind, message),) = [p for p in _problems(store_dir) if p[0] in ("index", "pack")]
    assert message.startswith(f"index of pack {name}: index ") and "truncated" in message


def test_the_worker_function_verifies_a_run_of_records(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 10)
        s.flush()
    with PackStore(tmp_path) as s:
        pack = s.packs()[0]
        off = pack.locate(ids[4], bytes.fromhex(ids[4]))
        assert s.get(ids[4]) == event(4)
    fsck._init_worker(str(tmp_path), {})
    end = os.path.getsize(pack.path)
    assert fsck._verify_chunk(pack.path, False, 8, end) == []
    with open(pack.path, "r+b") as f:
        f.seek(off + codec.RECORD_HEAD_SIZE + 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x20]))
    problems = fsck._verify_chunk(pack.path, False, 8, end)
    assert [(p.kind, p.id, p.offset) for p in problems] == [("checksum", ids[4], off)]
    assert problems[0].message.startswith(f"object {ids[4]} in pack {pack.name} at offset {off}: ")
