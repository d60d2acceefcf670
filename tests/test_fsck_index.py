"""fsck checks a sealed pack's index against the pack, both ways: each kind of damage to an
.idx file is reported with what exactly is wrong (the index checks had no test of their own),
and the worker function of the parallel fsck verifies a run of records in this process too."""

from __future__ import annotations

import os

import pytest

from ctxstore import codec
from ctxstore.errors import CtxError
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


def _problems(store_dir, fields=False):
    """(kind, message) of each problem; with `fields`, also the id, pack and offset it names."""
    with PackStore(store_dir) as s:
        return [(p.kind, p.message, p.id, p.pack, p.offset) if fields else (p.kind, p.message)
                for p in fsck.verify(s, workers=1)]


def _write(idx, entries, length):
    with open(idx, "wb") as f:
        f.write(build_index(list(entries.items()), length))


def test_intact_index_is_clean(sealed):
    store_dir, _, idx, entries, length = sealed
    _write(idx, entries, length)  # rebuilt from its own entries: byte-identical
    assert _problems(store_dir) == []


def test_index_covering_another_length(sealed):
    store_dir, path, idx, entries, length = sealed
    _assert_covers_another_length(store_dir, idx, entries, length, os.path.basename(path)[:-5],
                                  "index")


def _assert_covers_another_length(store_dir, idx, entries, length, name, what):
    """`what` ("index" or "partial index") written for 7 more bytes than the pack has."""
    _write(idx, entries, length + 7)
    assert _problems(store_dir, fields=True) == [
        ("index", f"{what} of pack {name} covers {length + 7} bytes, pack has {length}", None,
         name, None)]


def _assert_wrong_offset_and_missing(store_dir, idx, entries, length, name, what):
    """`what` naming its first object one byte off and leaving out its second: both named."""
    (a, off_a), (b, off_b) = sorted(entries.items())[:2]
    moved = dict(entries)
    moved[a] = off_a + 1
    del moved[b]
    _write(idx, moved, length)
    assert _problems(store_dir, fields=True) == [
        ("index", f"{what} of pack {name} names {a.hex()} at offset {off_a + 1}, where the pack "
                  f"has no such record", a.hex(), name, off_a + 1),
        ("index", f"object {b.hex()} in pack {name} at offset {off_b} is missing from its "
                  f"{what}", b.hex(), name, off_b)]


def test_index_naming_a_wrong_offset_or_missing_an_object(sealed):
    store_dir, path, idx, entries, length = sealed
    _assert_wrong_offset_and_missing(store_dir, idx, entries, length,
                                     os.path.basename(path)[:-5], "index")


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
    assert _problems(store_dir, fields=True) == [
        ("index", f"index of pack {name}: checksum mismatch", None, name, None)]
    with open(idx, "wb") as f:
        f.write(data[:100])
    ((kind, message, oid, pack, offset),) = [p for p in _problems(store_dir, fields=True)
                                             if p[0] in ("index", "pack")]
    assert message.startswith(f"index of pack {name}: index ") and "truncated" in message
    assert (kind, oid, pack, offset) == ("index", None, name, None)


def _flip_under_a_worker(store_dir, dictionaries, path, sealed, at):
    """Start a worker in this process, check that the whole pack verifies clean, flip a bit of
    the byte `at` bytes into a record's payload, and return what the worker finds then."""
    fsck._init_worker(str(store_dir), dictionaries)
    end = os.path.getsize(path)
    assert fsck._verify_chunk(path, sealed, 8, end) == []
    with open(path, "r+b") as f:
        f.seek(at + codec.RECORD_HEAD_SIZE)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x20]))
    return fsck._verify_chunk(path, sealed, 8, end)


def test_the_worker_function_verifies_a_run_of_records(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 10)
        s.flush()
    with PackStore(tmp_path) as s:
        pack = s.packs()[0]
        off = pack.locate(ids[4], bytes.fromhex(ids[4]))
        assert s.get(ids[4]) == event(4)
    problems = _flip_under_a_worker(tmp_path, {}, pack.path, False, off + 2)
    assert [(p.kind, p.id, p.offset) for p in problems] == [("checksum", ids[4], off)]
    assert problems[0].message.startswith(f"object {ids[4]} in pack {pack.name} at offset {off}: ")


def _dict_store(path):
    """Sealed packs of events, dictionary-compressed after the first 40, and an active pack;
    returns (ids, the first sealed pack holding dictionary frames)."""
    with PackStore(path, seal_size=8192, dict_samples=40) as s:
        ids = [s.put("value", event(i, "ran the tests, 3 failed " * 4)) for i in range(120)]
    with PackStore(path) as s:
        pack = next(p for p in s.packs() if p.sealed and any(
            _comp(p.path, p.locate(i, bytes.fromhex(i))) == codec.COMP_ZSTD_DICT
            for i in ids if p.locate(i, bytes.fromhex(i)) >= 0))
        return ids, pack


def _comp(path, off):
    with open(path, "rb") as f:
        f.seek(off + 4)  # docs/format.md: the compression byte of a record header
        return f.read(1)[0]


@pytest.mark.parametrize("handed", [False, True], ids=["loads-itself", "handed"])
def test_a_worker_verifies_sealed_runs_with_the_store_dictionary(tmp_path, handed):
    """A worker reads dictionary frames whether fsck hands it the dictionaries or it has to
    load them from the store itself, and names a flipped byte in a sealed pack exactly; a run
    that starts in the middle of a pack is checked from there on only."""
    ids, pack = _dict_store(tmp_path)
    with PackStore(tmp_path) as s:
        assert len(fsck._dictionaries(s)) == 1
        dictionaries = fsck._dictionaries(s) if handed else {}
    victim = next(i for i in ids if pack.locate(i, bytes.fromhex(i)) >= 0
                  and _comp(pack.path, pack.locate(i, bytes.fromhex(i))) == codec.COMP_ZSTD_DICT)
    off = pack.locate(victim, bytes.fromhex(victim))
    problems = _flip_under_a_worker(tmp_path, dictionaries, pack.path, True, off + 3)
    end = os.path.getsize(pack.path)
    assert [(p.kind, p.id, p.pack, p.offset) for p in problems] == \
           [("checksum", victim, pack.name, off)]
    size = codec.record_span(open(pack.path, "rb").read(), off)[1]
    assert fsck._verify_chunk(pack.path, True, off + size, end) == []  # the run after it


def test_a_worker_never_creates_a_store(tmp_path):
    """A worker that must load a dictionary from a store that has gone fails; it does not
    create an empty store where the old one was."""
    _, pack = _dict_store(tmp_path / "s")
    gone = tmp_path / "gone"
    fsck._init_worker(str(gone), {})
    with pytest.raises(CtxError):
        fsck._verify_chunk(pack.path, True, 8, os.path.getsize(pack.path))
    assert not gone.exists()


@pytest.fixture
def active(tmp_path):
    """(store dir, an active .pack, its .pidx path, the entries it should list, pack length)."""
    with PackStore(tmp_path, dict_samples=0) as s:
        put_events(s, 30)
    with PackStore(tmp_path) as s:
        pack = next(p for p in s.packs() if not p.sealed)
        path = pack.path
        entries = {bytes.fromhex(i): pack.locate(i, bytes.fromhex(i)) for i in pack.ids()}
    return tmp_path, path, path[:-len(".pack")] + ".pidx", entries, os.path.getsize(path)


def test_partial_index_damage_is_named(active):
    """An active pack's .pidx (docs/format.md "Partial indexes"): readers ignore a bad one, but
    fsck names each way it can be wrong, with the pack."""
    store_dir, path, pidx, entries, length = active
    name = os.path.basename(path)[:-5]
    _write(pidx, entries, length)
    assert _problems(store_dir) == []
    data = bytearray(build_index(list(entries.items()), length))
    data[-1] ^= 1
    with open(pidx, "wb") as f:
        f.write(data)
    assert _problems(store_dir, fields=True) == [
        ("index", f"partial index of pack {name}: checksum mismatch", None, name, None)]
    _assert_covers_another_length(store_dir, pidx, entries, length, name, "partial index")
    _assert_wrong_offset_and_missing(store_dir, pidx, entries, length, name, "partial index")
    with open(pidx, "wb") as f:
        f.write(data[:100])
    ((kind, message, oid, pack, offset),) = _problems(store_dir, fields=True)
    assert message.startswith(f"partial index of pack {name}: ")
    assert (kind, oid, pack, offset) == ("index", None, name, None)


def test_a_partial_index_covering_part_of_the_pack_lists_just_that_part(active):
    store_dir, path, pidx, entries, length = active
    first = sorted(entries.values())[:10]
    end = sorted(entries.values())[10]
    _write(pidx, {raw: off for raw, off in entries.items() if off in first}, end)
    assert _problems(store_dir) == []
    os.remove(pidx)
    assert _problems(store_dir) == []  # no partial index: nothing to check
