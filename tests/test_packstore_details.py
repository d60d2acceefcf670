"""PackStore (store/packstore.py) line by line: what each branch, constant and message is for,
checked where the everyday tests only see that the store "works".

Every test here states one observable rule of the module (docs/format.md "Packs",
"Dictionaries", "The gc lock"; the docstrings of packstore.py) with exact values: the messages
of a damaged `dicts` file, which puts are queued inside a transaction, when a pack is sealed
and consolidation runs, how often the directory is listed, which fsyncs a new dictionary
costs in each durability mode. Some rules are about cost (a put lists no directory; a miss
probes each pack once): they are stated in the module's docstrings and counted by wrapping
`os.listdir` or `Pack.locate`."""

from __future__ import annotations

import os

import pytest

from ctxstore import codec
from ctxstore.errors import (
    CorruptObject,
    CorruptStore,
    CtxError,
    InvalidInput,
    ObjectNotFound,
    StoreNotFound,
)
from ctxstore.store import packstore
from ctxstore.store.pack import HEADER_SIZE, Pack, scan
from ctxstore.store.packstore import (
    _MTIME_TRUST_NS,
    CATCH_UP_SECONDS,
    DEFAULT_MAX_PACKS,
    DEFAULT_SEAL_SIZE,
    PackStore,
    _dir_mtime,
    read_dicts_file,
)
from ctxstore.store.packwriter import INDEX_AT_CLOSE, INDEX_EVERY

EXPECTED = "expected '<zstd dictionary id> <zdict object id>'"


# -- helpers ---------------------------------------------------------------------------------------
def blob(i: int) -> tuple[str, bytes]:
    """(id, body) of a 10-byte blob: stored uncompressed, so every record is 66 bytes."""
    body = b"item %05d" % i
    return codec.compute_id("blob", body), body


RECORD = codec.RECORD_HEAD_SIZE + 10


def put_blob(store: PackStore, i: int) -> str:
    return store.put("blob", blob(i)[1])


def pack_names(path, suffix=".pack") -> list[str]:
    return sorted(n[:-len(suffix)] for n in os.listdir(os.path.join(path, "packs"))
                  if n.startswith("pack-") and n.endswith(suffix))


def records(path) -> list[str]:
    """Every record's id in every pack file, duplicates included."""
    out = []
    for name in pack_names(path):
        with open(os.path.join(path, "packs", name + ".pack"), "rb") as f:
            entries, _ = scan(f.read(), HEADER_SIZE)
        out += [hex_id for hex_id, _, _ in entries]
    return out


def active_size(store: PackStore) -> int:
    return os.path.getsize(store._writer.pack.path)


@pytest.fixture
def listings(monkeypatch):
    """How many times the packs directory is listed."""
    calls = []
    real = os.listdir

    def listdir(path="."):
        if os.path.basename(os.fspath(path)) == "packs":
            calls.append(path)
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    return calls


@pytest.fixture
def probes(monkeypatch):
    """How many times a pack is asked for an id (Pack.locate)."""
    calls = []
    real = Pack.locate

    def locate(self, hex_id, raw):
        calls.append(self.name)
        return real(self, hex_id, raw)

    monkeypatch.setattr(Pack, "locate", locate)
    return calls


def sealed_store(path, sizes=(3,), start=0, **kw) -> list[list[str]]:
    """Seal one pack per entry of `sizes` (that many blobs each); the ids per pack."""
    out, n = [], start
    with PackStore(path, dict_samples=0, max_packs=100, **kw) as s:
        for size in sizes:
            out.append([put_blob(s, n + k) for k in range(size)])
            n += size
            s.seal_active()
    return out


def small_dictionary(dict_id: int) -> bytes:
    samples = [b"tool output line %d: ran the tests, %d failed, words words" % (i, i % 7)
               for i in range(400)]
    import zstandard

    return zstandard.train_dictionary(2048, samples, dict_id=dict_id).as_bytes()


# -- read_dicts_file, _dir_mtime -------------------------------------------------------------------
def test_read_dicts_file_names_file_line_and_why(tmp_path):
    path = str(tmp_path / "dicts")
    assert read_dicts_file(path) == ({}, [])  # no file: no dictionaries, no damage
    good1, good2 = "7 " + "ab" * 32, "8 " + "cd" * 32
    long_line = "y" * 150
    with open(path, "wb") as f:
        f.write(f"{good1}\n{long_line}\n".encode() + b"9 \xff\n" + f"{good2}\n9 {'ef' * 32}".encode())
    entries, problems = read_dicts_file(path)
    REPLACED = "9 \ufffd"  # a byte that is not ascii, replaced
    assert entries == {7: "ab" * 32, 8: "cd" * 32}
    assert [str(p) for p in problems] == [
        f"{path}:2: damaged line {'y' * 100!r} ({EXPECTED})",
        f"{path}:3: damaged line {REPLACED!r} ({EXPECTED})",
        f"{path}:5: damaged line {'9 ' + 'ef' * 32!r} (no newline at the end)",
    ]
    assert [p.details for p in problems] == [{"path": path, "line": n} for n in (2, 3, 5)]
    assert all(type(p) is CorruptStore for p in problems)

    with open(path, "w") as f:  # intact: every line ends with a newline
        f.write(f"{good1}\n{good2}\n")
    assert read_dicts_file(path) == ({7: "ab" * 32, 8: "cd" * 32}, [])
    with open(path, "w") as f:  # one unterminated line that does not parse either
        f.write("garbage")
    entries, problems = read_dicts_file(path)
    assert entries == {} and [str(p) for p in problems] == [
        f"{path}:1: damaged line 'garbage' ({EXPECTED})"]


def test_dir_mtime_of_a_missing_directory_is_minus_one(tmp_path):
    assert _dir_mtime(str(tmp_path / "nope")) == -1
    assert _dir_mtime(str(tmp_path)) == os.stat(tmp_path).st_mtime_ns


# -- opening ---------------------------------------------------------------------------------------
def test_opening_checks_its_arguments_with_exact_messages(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(StoreNotFound) as exc:
        PackStore(missing, create=False)
    assert str(exc.value) == f"no object store at {missing}" and exc.value.exit_code == 9
    assert not missing.exists()
    for kw in ({"seal_size": 1023}, {"max_packs": 1}, {"seal_size": 1023, "max_packs": 8},
               {"seal_size": 4096, "max_packs": 1}):
        with pytest.raises(InvalidInput) as exc:
            PackStore(tmp_path / "s", **kw)
        assert str(exc.value) == "seal_size must be >= 1024 and max_packs >= 2"
        assert isinstance(exc.value, CtxError)
    with pytest.raises(InvalidInput) as exc:
        PackStore(tmp_path / "s", durability="sometimes")
    assert str(exc.value) == "durability must be one of always, batch, never, not 'sometimes'"
    with PackStore(tmp_path / "s", seal_size=1024, max_packs=2) as s:  # the limits themselves
        assert (s.seal_size, s.max_packs) == (1024, 2)


def test_a_new_store_holds_only_the_gc_lock_and_the_defaults(tmp_path):
    s = PackStore(tmp_path / "objects")
    assert os.listdir(tmp_path / "objects") == ["packs"]
    assert os.listdir(tmp_path / "objects" / "packs") == ["gc.lock"]
    assert (s.path, s.packs_dir) == (str(tmp_path / "objects"), str(tmp_path / "objects" / "packs"))
    assert (s.durability, s.level, s.seal_size, s.max_packs) == \
        ("batch", 3, DEFAULT_SEAL_SIZE, DEFAULT_MAX_PACKS)
    put_blob(s, 0)
    w = s._writer
    assert (w.durability, w.sync_interval, w.sync_objects, w.index_every, w.index_at_close) == \
        ("batch", 0.1, 100, INDEX_EVERY, INDEX_AT_CLOSE)
    assert s._compressor.level == 3
    s.close()


def test_the_writer_gets_the_stores_settings(tmp_path):
    with PackStore(tmp_path, durability="never", level=7, sync_interval=0.5, sync_objects=7,
                   index_every=4096, index_at_close=2048) as s:
        put_blob(s, 0)
        w = s._writer
        assert (w.packs_dir, w.durability, w.sync_interval, w.sync_objects, w.index_every,
                w.index_at_close) == (s.packs_dir, "never", 0.5, 7, 4096, 2048)
        assert s._compressor.level == 7


def test_opening_a_store_another_process_just_created_is_no_error(tmp_path, monkeypatch):
    """Two processes creating one store: the later one's makedirs finds the directory."""
    sealed_store(tmp_path)
    packs_dir = str(tmp_path / "packs")
    real = os.path.isdir
    told = []

    def isdir(p):  # says no once: the other process created it after we looked
        if p == packs_dir and not told:
            told.append(p)
            return False
        return real(p)

    monkeypatch.setattr(os.path, "isdir", isdir)
    with PackStore(tmp_path) as s:
        assert s.get_raw(blob(0)[0]) == ("blob", blob(0)[1])


# -- the pack set ----------------------------------------------------------------------------------
def test_stray_files_in_the_packs_directory_are_not_packs(tmp_path):
    ids = sealed_store(tmp_path, (3, 4))
    with PackStore(tmp_path, dict_samples=0) as s:
        ids.append([put_blob(s, 100)])  # an active pack too
    real = set(pack_names(tmp_path))
    packs_dir = tmp_path / "packs"
    for i in range(40):  # many: the listing's order is a set's, so some come before the packs
        (packs_dir / f"tmp-pack-{i:040x}.pack").write_bytes(b"junk")
        (packs_dir / f"pack-{i:040x}.idx").write_bytes(b"junk")  # its pack deleted first
        (packs_dir / f"pack-{i + 100:040x}.pidx").write_bytes(b"junk")
        (packs_dir / f"notes-{i}.txt").write_bytes(b"junk")
    with PackStore(tmp_path) as s:
        assert {p.name for p in s.packs()} == real
        assert [p.sealed for p in s.packs()] == [True, True, False]
        assert sorted(s) == sorted(i for group in ids for i in group)


def _packs_of_growing_size(path, store):
    """Five sealed packs, each larger than the one before; their names, largest first."""
    for n, size in enumerate((2, 3, 4, 5, 6)):
        for k in range(size):
            put_blob(store, 10 * n + k)
        store.seal_active()
    return sorted(pack_names(path, ".idx"),
                  key=lambda n: -os.path.getsize(os.path.join(path, "packs", f"{n}.pack")))


def test_probe_order_is_sealed_packs_largest_first_then_active(tmp_path, monkeypatch):
    s = PackStore(tmp_path, dict_samples=0, max_packs=100)
    by_size = _packs_of_growing_size(tmp_path, s)
    assert [p.name for p in s.packs()] == by_size  # re-ordered at each seal
    put_blob(s, 99)
    active = s._writer.pack.name
    s.close()
    with PackStore(tmp_path) as r:  # a reader orders by the sizes its listing saw
        assert [p.name for p in r.packs()] == by_size + [active]
    # a sealed pack that vanishes between the listing and its stat counts as empty: last
    gone = os.path.join(tmp_path, "packs", by_size[0] + ".pack")
    real = os.stat

    def stat(path, *a, **kw):
        if os.fspath(path) == gone:
            raise FileNotFoundError(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    r = PackStore(tmp_path)
    assert [p.name for p in r._order] == by_size[1:] + [by_size[0], active]
    monkeypatch.setattr(os, "stat", real)
    r.close()


def test_a_writer_keeps_the_probe_order_once_it_starts_its_next_pack(tmp_path):
    with PackStore(tmp_path, dict_samples=0, max_packs=100) as s:
        by_size = _packs_of_growing_size(tmp_path, s)
        put_blob(s, 99)
        assert [p.name for p in s.packs()] == by_size + [s._writer.pack.name]


def test_a_listing_never_drops_the_pack_this_process_writes(tmp_path, monkeypatch):
    s = PackStore(tmp_path, dict_samples=0)
    x = put_blob(s, 0)
    mine = s._writer.pack.name + ".pack"
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": [n for n in real(p) if n != mine])
    assert "0" * 64 not in s  # a miss re-lists the directory
    assert s._writer.pack in s._order
    assert s.get_raw(x) == ("blob", blob(0)[1])
    monkeypatch.setattr(os, "listdir", real)
    s.close()


def test_another_stores_new_and_newly_sealed_packs_are_found(tmp_path):
    r = PackStore(tmp_path)
    assert "0" * 64 not in r  # r has listed the (empty) directory
    w = PackStore(tmp_path, dict_samples=0)
    x = put_blob(w, 0)
    w.seal_active()  # a new pack, sealed before r ever saw it active
    assert x in r and r.get_raw(x) == ("blob", blob(0)[1])
    y = put_blob(w, 1)
    assert y in r  # w's new active pack, scanned by r
    z = put_blob(w, 2)
    w.seal_active()  # r knew this pack active; its index now has z
    assert z in r and r.get_raw(z) == ("blob", blob(2)[1])
    assert [(p.name, p.sealed) for p in r.packs()] == [(p.name, True) for p in w.packs()]
    assert all(p.offsets == {} for p in r.packs())  # sealed packs are looked up by index only
    w.close()
    r.close()


def test_packs_consolidated_away_are_dropped_and_their_objects_found(tmp_path):
    w = PackStore(tmp_path, dict_samples=0)
    w.put_absent(*blob(900)[:1], "blob", blob(900)[1])  # a writer with its own active pack
    ids = sealed_store(tmp_path, (10, 11, 12, 13, 14))
    r = PackStore(tmp_path)  # lists five sealed packs, maps none
    w.packs()  # w lists them too, without looking anything up in them
    with PackStore(tmp_path, dict_samples=0, max_packs=2) as c:
        put_blob(c, 500)
        c.seal_active()  # six sealed packs > 2: merged into one
    (merged,) = pack_names(tmp_path, ".idx")
    assert sorted(pack_names(tmp_path)) == sorted([merged, w._writer.pack.name])
    x = ids[0][0]
    assert x in r  # its pack vanished before r mapped it: r re-lists and finds the merged one
    assert [p.name for p in r.packs()] == [merged, w._writer.pack.name]
    assert r.get_raw(ids[4][-1]) == ("blob", blob(59)[1])
    assert w.put_encoded(x, "blob", blob(0)[1]) == x  # found the same way: not stored again
    assert w.get_raw(x) == ("blob", blob(0)[1])
    w.close()
    r.close()
    assert records(tmp_path).count(x) == 1


def test_an_object_in_two_packs_is_listed_once(tmp_path):
    (ids,) = sealed_store(tmp_path, (3,))
    x = ids[1]
    with PackStore(tmp_path, dict_samples=0) as b:
        y = put_blob(b, 7)
        b.put_absent(x, "blob", blob(1)[1])  # no presence check: a second record
    assert records(tmp_path).count(x) == 2
    with PackStore(tmp_path) as s:
        assert sorted(s) == sorted([*ids, y])
        assert len(s) == 4
        assert list(s.ids_with_prefix(x[:8])) == [x]


def test_get_raw_of_a_bad_or_missing_id_names_it(tmp_path):
    (ids,) = sealed_store(tmp_path, (3,))
    with PackStore(tmp_path) as s:
        for bad in ("0" * 64, "zz" * 32, ids[0][:4], ids[0][:-2], ids[0] + "00", 123):
            with pytest.raises(ObjectNotFound) as exc:
                s.get_raw(bad)
            assert str(exc.value) == f"no object {bad}"
        assert 123 not in s and bytes.fromhex(ids[0]) not in s and "zz" * 32 not in s
        assert ids[0] in s


# -- how often the directory is listed, how often packs are probed ---------------------------------
def test_opening_lists_once_and_puts_list_only_to_start_the_writer(tmp_path, listings):
    (ids,) = sealed_store(tmp_path, (3,))
    listings.clear()
    s = PackStore(tmp_path, dict_samples=0)
    assert len(listings) == 1
    assert ids[0] in s  # in a pack known since opening: no listing
    assert s.put("blob", blob(1)[1]) == ids[1]
    assert len(listings) == 1
    new = put_blob(s, 50)  # starting the writer lists once (to take over an active pack)
    assert len(listings) == 2
    put_blob(s, 51)
    put_blob(s, 52)
    assert len(listings) == 2  # a put's presence check lists nothing
    assert s.get_raw(new) == ("blob", blob(50)[1])
    s.close()
    assert records(tmp_path).count(ids[1]) == 1


def test_a_miss_relists_only_when_the_directory_moved_or_is_too_recent(tmp_path, monkeypatch,
                                                                       listings, probes):
    sealed_store(tmp_path, (3,))
    with PackStore(tmp_path, dict_samples=0) as w:
        put_blob(w, 10)  # another (closed) writer's active pack
    packs_dir = str(tmp_path / "packs")
    m = os.stat(packs_dir).st_mtime_ns
    clock = [m + _MTIME_TRUST_NS + 1]
    monkeypatch.setattr(packstore.time, "time_ns", lambda: clock[0])
    s = PackStore(tmp_path)
    listings.clear()
    assert "0" * 64 not in s
    assert len(listings) == 1  # never listed by a look-up before
    probes.clear()
    assert "0" * 64 not in s
    assert len(listings) == 1  # the directory did not move and is old enough to trust
    assert len(probes) == 2  # each pack probed once: nothing new, so no second probe
    clock[0] = m + _MTIME_TRUST_NS  # not older than the trust window: listed again
    assert "0" * 64 not in s
    assert len(listings) == 2
    os.utime(packs_dir, ns=(m + 5 * 10**9, m + 5 * 10**9))
    clock[0] = m + 5 * 10**9 + 10 * _MTIME_TRUST_NS
    assert "0" * 64 not in s
    assert len(listings) == 3  # the directory moved
    assert "0" * 64 not in s
    assert len(listings) == 3
    assert all(p.offsets == {} for p in s.packs() if p.sealed)
    s.close()


# -- put, put_encoded, put_new, put_absent -----------------------------------------------------------
def test_every_look_up_takes_the_shared_gc_lock_and_close_drops_it(tmp_path):
    (ids,) = sealed_store(tmp_path, (2,))
    oid, body = blob(40)
    for look_up in (lambda s: ids[0] in s, lambda s: list(s.ids_with_prefix(ids[0][:5])),
                    lambda s: put_blob(s, 41), lambda s: s.put_encoded(oid, "blob", body),
                    lambda s: s.put_new(oid, "blob", body)):
        s = PackStore(tmp_path, dict_samples=0)
        assert not s.gc_lock.held  # opening takes no lock
        look_up(s)
        assert s.gc_lock.held
        s.end_transaction()
        assert not s.gc_lock.held  # released between transactions
        look_up(s)
        assert s.gc_lock.held
        s.close()
        assert not s.gc_lock.held


def test_put_writes_an_object_once(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        x = put_blob(s, 0)
        assert put_blob(s, 0) == x
        assert s.put_encoded(x, "blob", blob(0)[1]) == x
        assert s.put_new(x, "blob", blob(0)[1]) is False
        ids = [put_blob(s, i) for i in range(1, 20)]
        assert len(pack_names(tmp_path)) == 1  # one pack for all the puts of one writer
    assert sorted(records(tmp_path)) == sorted([x, *ids])


def test_a_writer_taking_over_a_pack_that_holds_the_object_writes_no_copy(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as a:
        x = put_blob(a, 0)
    with PackStore(tmp_path, dict_samples=0) as b:
        assert put_blob(b, 0) == x  # b had not scanned the pack; it takes it over and sees x
        y = put_blob(b, 1)
    assert records(tmp_path) == [x, y]


def test_put_new_catches_up_at_its_first_call_whatever_the_clock(tmp_path, monkeypatch):
    monkeypatch.setattr(packstore.time, "monotonic", lambda: 0.0)
    mine = PackStore(tmp_path, dict_samples=0)
    with PackStore(tmp_path, dict_samples=0) as other:
        x = put_blob(other, 0)
    assert mine.put_new(x, "blob", blob(0)[1]) is False
    mine.close()
    assert records(tmp_path) == [x]


def test_put_new_stores_what_a_catch_up_did_not_find(tmp_path, monkeypatch):
    """A catch-up that finds other writers' new objects, but not this one: stored, new."""
    clock = [1000.0]
    monkeypatch.setattr(packstore.time, "monotonic", lambda: clock[0])
    mine = PackStore(tmp_path, dict_samples=0)
    other = PackStore(tmp_path, dict_samples=0)
    assert mine.put_new(*blob(0)[:1], "blob", blob(0)[1]) is True
    put_blob(other, 1)
    other.flush()
    clock[0] += CATCH_UP_SECONDS
    c, body = blob(2)
    assert mine.put_new(c, "blob", body) is True
    assert mine.get_raw(c) == ("blob", body)
    mine.close()
    other.close()
    assert records(tmp_path).count(c) == 1


# -- transactions: the writer's buffer and the queue -------------------------------------------------
def test_a_transaction_begun_before_the_first_put_buffers_its_records(tmp_path):
    s = PackStore(tmp_path)  # collecting dictionary samples: nothing is queued
    s.begin_transaction()
    x = put_blob(s, 0)
    assert not s._queued
    assert active_size(s) == HEADER_SIZE  # the record is in the writer's buffer
    assert [p.name for p in s.packs()] == [s._writer.pack.name]
    assert active_size(s) == HEADER_SIZE + RECORD  # packs() hands the buffer to the OS
    y = put_blob(s, 1)
    assert active_size(s) == HEADER_SIZE + RECORD
    assert s.get_raw(y) == ("blob", blob(1)[1])  # a read does too
    assert active_size(s) == HEADER_SIZE + 2 * RECORD
    z = put_blob(s, 2)
    s.end_transaction()
    assert active_size(s) == HEADER_SIZE + 3 * RECORD
    put_blob(s, 3)  # after the transaction: written at once
    assert active_size(s) == HEADER_SIZE + 4 * RECORD
    s.close()
    assert records(tmp_path)[:3] == [x, y, z]


def test_a_transaction_begun_after_the_writer_started_buffers_too(tmp_path):
    s = PackStore(tmp_path)
    put_blob(s, 0)
    s.begin_transaction()
    put_blob(s, 1)
    assert active_size(s) == HEADER_SIZE + RECORD
    s.end_transaction()
    assert active_size(s) == HEADER_SIZE + 2 * RECORD
    put_blob(s, 2)
    assert active_size(s) == HEADER_SIZE + 3 * RECORD
    s.close()


def test_what_a_transaction_queues(tmp_path):
    """Queued: small bodies, once the writer has a pack and no samples are being collected,
    inside a transaction, unless durability is "always"."""
    limit = codec.SMALL_OBJECT_LIMIT
    s = PackStore(tmp_path / "a", dict_samples=0)
    put_blob(s, 0)
    assert not s._queued  # no transaction
    s.begin_transaction()
    x = put_blob(s, 1)
    assert x in s._queued
    at_limit = s.put("blob", b"a" * limit)
    assert at_limit in s._queued
    over = s.put("blob", b"b" * (limit + 1))
    assert not s._queued  # written, with those before it (the records stay in put order)
    s.flush()
    assert records(tmp_path / "a")[-3:] == [x, at_limit, over]
    s.seal_active()  # writes the queue and seals: no pack until the next put
    assert not s._queued
    after_seal = put_blob(s, 2)
    assert after_seal not in s._queued and s._writer.pack is not None
    assert put_blob(s, 3) in s._queued
    s.end_transaction()
    assert not s._queued
    assert put_blob(s, 4) not in s._queued  # transaction over
    s.close()

    s = PackStore(tmp_path / "b", dict_samples=0)
    s.begin_transaction()
    assert put_blob(s, 0) not in s._queued  # no writer yet
    assert put_blob(s, 1) in s._queued
    s.close()
    for kw in ({"dict_samples": 0, "durability": "always"}, {"dict_samples": 1000}):
        s = PackStore(tmp_path / str(kw), **kw)
        put_blob(s, 0)
        s.begin_transaction()
        assert put_blob(s, 1) not in s._queued
        s.close()


def test_an_object_queued_is_not_queued_again(tmp_path):
    s = PackStore(tmp_path, dict_samples=0)
    put_blob(s, 0)
    s.begin_transaction()
    x, body = blob(1)
    assert s.put_encoded(x, "blob", body) == x
    assert x in s._queued
    assert s.put_encoded(x, "blob", body) == x
    assert s.put("blob", body) == x
    assert s.put_new(x, "blob", body) is False
    s.end_transaction()
    s.close()
    assert records(tmp_path) == [blob(0)[0], x]


def test_a_pack_is_sealed_by_the_put_that_reaches_seal_size(tmp_path):
    n = 16
    seal = HEADER_SIZE + n * RECORD
    s = PackStore(tmp_path, dict_samples=0, seal_size=seal)
    for i in range(n - 1):
        put_blob(s, i)
    assert pack_names(tmp_path, ".idx") == [] and active_size(s) == seal - RECORD
    put_blob(s, n - 1)
    assert pack_names(tmp_path, ".idx") == pack_names(tmp_path) and s._writer.pack is None
    s.close()


def test_a_queued_batch_seals_at_seal_size_too(tmp_path):
    n = 16
    s = PackStore(tmp_path, dict_samples=0, seal_size=HEADER_SIZE + n * RECORD)
    put_blob(s, 0)
    s.begin_transaction()
    for i in range(1, n):
        assert put_blob(s, i) in s._queued
    assert pack_names(tmp_path, ".idx") == []
    s.end_transaction()
    assert pack_names(tmp_path, ".idx") == pack_names(tmp_path) and s._writer.pack is None
    s.close()


def test_a_queued_object_found_in_a_pack_taken_over_midway_is_not_copied(tmp_path):
    """The queue is written across a seal; the next pack is another writer's orphan that
    already holds one of the queued objects: that one is skipped, the rest written."""
    k = 16
    a = PackStore(tmp_path, dict_samples=0)
    b = PackStore(tmp_path, dict_samples=0, seal_size=HEADER_SIZE + (k + 1) * RECORD)
    put_blob(a, 0)
    put_blob(b, 1)  # a's pack is locked: b makes its own
    x = put_blob(a, 2)
    a.close()  # a's pack, holding x, is now an orphan b has not scanned
    b.begin_transaction()
    for i in range(k):
        put_blob(b, 100 + i)
    assert put_blob(b, 2) in b._queued  # b cannot tell it is stored
    y = put_blob(b, 3)
    b.end_transaction()  # seals b's pack after the k-th, takes a's over for x and y
    assert b._writer.pack is not None and b.get_raw(y) == ("blob", blob(3)[1])
    b.close()
    recs = records(tmp_path)
    assert (recs.count(x), recs.count(y), len(recs)) == (1, 1, k + 4)


def test_objects_seen_only_in_packs_deleted_meanwhile_are_written_again(tmp_path):
    """end_transaction lets gc's lock go; the next look-up re-lists the packs first, so an
    object whose pack gc deleted meanwhile is stored again rather than named (format.md)."""
    s = PackStore(tmp_path, dict_samples=0)
    x = put_blob(s, 0)
    s.seal_active()
    assert s.get_raw(x) == ("blob", blob(0)[1])  # its index is mapped
    s.end_transaction()
    (name,) = pack_names(tmp_path)
    for suffix in (".pack", ".idx"):  # what gc does with the exclusive lock
        os.unlink(tmp_path / "packs" / f"{name}{suffix}")
    assert put_blob(s, 0) == x
    s.close()
    with PackStore(tmp_path) as r:
        assert r.get_raw(x) == ("blob", blob(0)[1])


def test_the_lookup_after_end_transaction_relists_once(tmp_path, listings):
    (ids,) = sealed_store(tmp_path, (2,))
    s = PackStore(tmp_path)
    assert ids[0] in s
    n = len(listings)
    assert ids[1] in s
    assert len(listings) == n
    s.end_transaction()
    assert ids[1] in s
    assert len(listings) == n + 1
    assert ids[0] in s
    assert len(listings) == n + 1
    s.close()


# -- sealing, consolidation, flush, close ----------------------------------------------------------
def test_consolidation_runs_only_past_max_packs(tmp_path, monkeypatch):
    calls = []
    real = packstore.consolidate

    def consolidate(packs_dir, max_packs):
        calls.append((packs_dir, max_packs))
        return real(packs_dir, max_packs)

    monkeypatch.setattr(packstore, "consolidate", consolidate)
    s = PackStore(tmp_path, dict_samples=0, max_packs=3)
    for i in range(3):
        put_blob(s, i)
        s.seal_active()
        assert calls == []
    assert len(pack_names(tmp_path, ".idx")) == 3
    put_blob(s, 3)
    s.seal_active()
    assert calls == [(s.packs_dir, 3)]
    assert len(pack_names(tmp_path, ".idx")) < 4  # merged
    assert sorted(s) == sorted(blob(i)[0] for i in range(4))
    s.close()


def test_seal_active_flush_and_close_without_a_pack_are_no_ops(tmp_path, monkeypatch):
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    s = PackStore(tmp_path, dict_samples=0, sync_interval=60, sync_objects=10**6)
    s.seal_active()
    s.flush()
    assert os.listdir(tmp_path / "packs") == ["gc.lock"] and synced == []
    put_blob(s, 0)
    s.flush()  # batch: what was put is made durable now
    assert synced == [s._writer._fd]
    s.seal_active()
    s.seal_active()  # nothing active any more
    assert pack_names(tmp_path, ".idx") == pack_names(tmp_path)
    s.close()
    s.close()
    with pytest.raises(InvalidInput) as exc:
        put_blob(s, 1)
    assert str(exc.value) == "the store is closed"


def test_a_put_on_a_closed_store_leaves_the_gc_lock_alone(tmp_path):
    s = PackStore(tmp_path, dict_samples=0)
    put_blob(s, 0)
    s.close()
    assert not s.gc_lock.held
    with pytest.raises(InvalidInput):
        put_blob(s, 1)
    assert not s.gc_lock.held


# -- dictionaries ----------------------------------------------------------------------------------
@pytest.fixture
def trainings(monkeypatch):
    """Calls to train_dictionary, which trains nothing (returns None)."""
    calls = []

    def train(samples, **params):
        calls.append((list(samples), params))
        return None

    monkeypatch.setattr(packstore.codec, "train_dictionary", train)
    return calls


def test_training_takes_dict_samples_small_bodies_and_the_store_parameters(tmp_path, trainings):
    limit = codec.SMALL_OBJECT_LIMIT
    s = PackStore(tmp_path / "a", dict_samples=3)
    s.put("blob", b"one")
    s.put("blob", b"x" * (limit + 1))  # too large to be a sample
    s.put("blob", b"two")
    assert trainings == []
    s.put("blob", b"y" * limit)  # the largest sample
    assert trainings == [([b"one", b"two", b"y" * limit], {"k": 1024, "d": 8})]
    assert s._samples is None and s._compressor.dict_id == 0  # nothing learnt
    assert not os.path.exists(tmp_path / "a" / "dicts")
    s.put("blob", b"three")
    assert len(trainings) == 1
    s.close()
    with PackStore(tmp_path / "b", dict_samples=0) as s:
        for i in range(5):
            put_blob(s, i)
    assert len(trainings) == 1
    with PackStore(tmp_path / "c", dict_samples=1) as s:
        s.put("blob", b"only")
    assert trainings[1:] == [([b"only"], {"k": 1024, "d": 8})]


def test_a_zdict_put_while_collecting_samples_is_no_sample(tmp_path, trainings):
    s = PackStore(tmp_path, dict_samples=2)
    s.put("blob", b"a sample")
    dictionary = small_dictionary(40001)
    assert len(dictionary) <= codec.SMALL_OBJECT_LIMIT
    assert s.add_dictionary(dictionary) == 40001
    assert trainings == [] and s._samples is None
    s.close()


def test_a_trained_dictionary_is_added(tmp_path):
    with PackStore(tmp_path, dict_samples=60) as s:
        bodies = [b"tool output line %d: ran the tests, %d failed, more words here" % (i, i % 7)
                  for i in range(60)]
        for body in bodies[:59]:
            s.put("blob", body)
        assert not os.path.exists(tmp_path / "dicts")
        s.put("blob", bodies[59])
        dict_id, zid = open(tmp_path / "dicts").read().split()
        assert s._compressor.dict_id == int(dict_id) and s._samples is None
        assert s.get_raw(zid)[0] == "zdict"
        x = s.put("blob", b"tool output line 999: ran the tests, 3 failed, more words here")
        assert s.get_raw(x)[1].startswith(b"tool output line 999")


@pytest.mark.parametrize("durability, fsyncs", [("batch", 2), ("always", 2), ("never", 0)])
def test_add_dictionary_keeps_lines_and_syncs_per_durability(tmp_path, monkeypatch, durability,
                                                              fsyncs):
    s = PackStore(tmp_path, durability=durability, dict_samples=0, level=5, sync_interval=60,
                  sync_objects=10**6)
    put_blob(s, 0)  # the writer and its pack exist: their own syncs are not counted
    calls = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append("fdatasync"), real_fdatasync(fd)))
    d1 = small_dictionary(40001)
    assert s.add_dictionary(d1) == 40001
    z1 = codec.compute_id("zdict", d1)
    path = os.path.join(tmp_path, "dicts")
    assert open(path).read() == f"40001 {z1}\n"
    assert calls.count("fsync") == fsyncs  # the new dicts, then its directory
    if durability != "never":  # the zdict record durable first ("always": at its append)
        assert calls[0] == "fdatasync" and calls[1:] == ["fsync"] * fsyncs
    monkeypatch.setattr(os, "fsync", real_fsync)
    monkeypatch.setattr(os, "fdatasync", real_fdatasync)
    d2 = small_dictionary(40002)
    assert s.add_dictionary(d2) == 40002
    z2 = codec.compute_id("zdict", d2)
    assert open(path).read() == f"40001 {z1}\n40002 {z2}\n"
    assert (s._compressor.dict_id, s._compressor.level) == (40002, 5)
    assert s.get_raw(z2) == ("zdict", d2)
    with pytest.raises(CorruptStore) as exc:
        s.add_dictionary(d1)
    assert str(exc.value) == f"{path}: zstd dictionary id 40001 is already in use"
    assert exc.value.details == {"path": path}
    assert open(path).read() == f"40001 {z1}\n40002 {z2}\n"
    body = b"tool output line 5: ran the tests, 5 failed, words words, and more words"
    x = s.put("blob", body)
    s.close()
    with PackStore(tmp_path, dict_samples=0) as w:  # a later writer: the last dictionary
        put_blob(w, 1)
        assert (w._compressor.dict_id, w._compressor.level) == (40002, 3)
    with PackStore(tmp_path) as r:
        assert r.get_raw(x) == ("blob", body)


def test_add_dictionary_refuses_a_damaged_dicts_file(tmp_path):
    path = os.path.join(tmp_path, "dicts")
    with open(path, "w") as f:
        f.write("garbage\n")
    with PackStore(tmp_path, dict_samples=0) as s:
        with pytest.raises(CorruptStore) as exc:
            s.add_dictionary(small_dictionary(40001))
        assert str(exc.value) == f"{path}:1: damaged line 'garbage' ({EXPECTED})"
        with pytest.raises(CorruptStore) as exc:  # a writer reads dicts before its first record
            put_blob(s, 0)
        assert str(exc.value) == f"{path}:1: damaged line 'garbage' ({EXPECTED})"
    assert open(path).read() == "garbage\n"


def test_a_dicts_line_naming_a_value_stops_the_writer(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        v = put_blob(s, 0)
    with open(tmp_path / "dicts", "w") as f:
        f.write(f"5 {v}\n")
    with PackStore(tmp_path) as s:
        with pytest.raises(CorruptObject) as exc:
            put_blob(s, 1)
        assert str(exc.value) == f"dictionary {v} is a blob, not a zdict"
        assert exc.value.details == {"id": v}


def test_a_record_whose_dictionary_has_no_line(tmp_path):
    body = b"tool output line 5: ran the tests, 5 failed, words words, and more words"
    with PackStore(tmp_path, dict_samples=0) as s:
        s.add_dictionary(small_dictionary(40001))
        x = s.put("blob", body)
    path = os.path.join(tmp_path, "dicts")
    open(path, "w").close()
    with PackStore(tmp_path) as r:
        with pytest.raises(CorruptObject) as exc:
            r.get_raw(x)
    assert str(exc.value).endswith(
        f": {path}: no line for zstd dictionary 40001, which records are compressed with")
    with PackStore(tmp_path) as r:  # as fsck's checker asks for it: the file in the details
        with pytest.raises(CorruptStore) as exc:
            r._load_dictionary(40001)
    assert exc.value.details["path"] == path


def test_dicts_problems_names_every_bad_line_in_order(tmp_path):
    d1, d2, d3 = small_dictionary(40001), small_dictionary(40002), small_dictionary(40003)
    with PackStore(tmp_path, dict_samples=0) as s:
        z1, z2, z3 = (s.put("zdict", d) for d in (d1, d2, d3))
        v = put_blob(s, 0)
        pack = s._writer.pack
        off = pack.locate(z3, bytes.fromhex(z3))
    with open(pack.path, "r+b") as f:  # damage z3's record
        f.seek(off + codec.RECORD_HEAD_SIZE + 100)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x55]))
    missing = "ab" * 32
    path = os.path.join(tmp_path, "dicts")
    with open(path, "w") as f:
        f.write(f"40001 {z1}\n7 {missing}\n40003 {z3}\n8 {v}\n9 {z2}\ngarbage\n")
    with PackStore(tmp_path) as s:
        with pytest.raises(CorruptObject) as exc:
            s.get_raw(z3)
        problems = s.dicts_problems()
        assert [str(p) for p in problems] == [
            f"{path}:6: damaged line 'garbage' ({EXPECTED})",
            f"{path}:2: dictionary 7 names zdict {missing}, which is not in the store",
            f"{path}:3: {exc.value}",
            f"{path}:4: dictionary 8 names {v}, which is a blob",
            f"{path}:5: dictionary 9 names {z2}, which is zstd dictionary 40002",
        ]
        assert [p.details for p in problems[1:]] == [
            {"path": path, "id": i} for i in (missing, z3, v, z2)]
        assert all(isinstance(p, CorruptStore) for p in problems)
