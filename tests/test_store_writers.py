"""Pack writers at the edges the everyday tests never reach: active packs orphaned by writers
that ran side by side and exited, and writes the OS accepts only in part.

Both used to be reached only from crash tests in child processes (or not at all), so a broken
`seal_orphans` or a short-write loop that gave up early failed no test in this process."""

from __future__ import annotations

import os
import types

import pytest

from ctxstore.errors import CorruptObject, CorruptStore
from ctxstore.store import fsck, pack, packwriter
from ctxstore.store.pack import _RECORD_START, HEADER_SIZE, Pack, later_record, scan
from ctxstore.store.packstore import PackStore, _dicts_line
from tests.test_bulk_append import _records
from tests.test_store_pack import event, put_events


def _packs(path):
    names = sorted(os.listdir(os.path.join(path, "packs")))
    return {n[:-5]: f"{n[:-5]}.idx" in names for n in names if n.endswith(".pack")}


def test_orphaned_active_packs_are_sealed_by_the_next_writer(tmp_path):
    """Two writers at once each write their own active pack (the other's is locked); both
    exit. The next writer takes over the larger one and seals the other, so that readers stop
    scanning it: every object stays readable and fsck is clean."""
    a = PackStore(tmp_path, dict_samples=0)
    b = PackStore(tmp_path, dict_samples=0)
    ids = put_events(a, 30) + put_events(b, 10, start=30)
    a.close()
    b.close()
    before = _packs(tmp_path)
    assert len(before) == 2 and not any(before.values())  # two active packs, no index
    sizes = {n: os.path.getsize(tmp_path / "packs" / f"{n}.pack") for n in before}
    larger, smaller = sorted(sizes, key=sizes.get, reverse=True)
    with PackStore(tmp_path, dict_samples=0) as c:
        ids += put_events(c, 1, start=40)
        assert [p.name for p in c.packs() if not p.sealed] == [larger]
    after = _packs(tmp_path)
    assert after == {larger: False, smaller: True}
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in range(41)]
        assert list(fsck.verify(s, workers=1)) == []


@pytest.fixture
def short_writes(monkeypatch):
    """The pack writer's os.write accepts at most 7 bytes a call (a pipe, a full disk
    recovering, a signal): the writer must finish every record itself."""
    calls = []

    def write(fd, data):
        n = os.write(fd, bytes(data)[:7])
        calls.append(n)
        return n

    proxy = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    proxy.write = write
    monkeypatch.setattr(packwriter, "os", proxy)
    return calls


@pytest.mark.parametrize("in_transaction", [False, True], ids=["one-by-one", "buffered"])
def test_short_writes_are_finished(tmp_path, short_writes, in_transaction):
    with PackStore(tmp_path, dict_samples=0, durability="never") as s:
        if in_transaction:
            s.begin_transaction()  # records are buffered and written together
        ids = put_events(s, 20)
        s.flush()
    assert short_writes and max(short_writes) == 7 and len(short_writes) > 20
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in range(20)]
        assert list(fsck.verify(s, workers=1)) == []


def _active_pack(tmp_path, n=6):
    """(path, bytes, [(hex id, offset, size)]) of an active pack of `n` events."""
    with PackStore(tmp_path, dict_samples=0) as s:
        put_events(s, n)
        path = next(p.path for p in s.packs() if not p.sealed)
    data = open(path, "rb").read()
    entries, end = scan(data, HEADER_SIZE)
    assert len(entries) == n and end == len(data)
    return path, data, entries


def test_later_record_finds_the_next_whole_record_only(tmp_path):
    """From any position: the first offset after it where a whole record with a good crc
    starts; the record magic alone (in junk, or a record cut short) is not one."""
    _, data, entries = _active_pack(tmp_path)
    offs = [off for _, off, _ in entries]
    for here, nxt in zip(offs, [*offs[1:], -1], strict=True):
        assert later_record(data, here) == nxt
        assert later_record(data, here - 1) == here  # from the byte before: this one
    assert later_record(data, len(data)) == -1
    fake = _RECORD_START + b"\x00" * 40  # a record's first bytes, then nothing valid
    cut = offs[2]
    junk = data[:cut] + fake + fake + data[cut:]
    assert later_record(junk, offs[1]) == cut + 2 * len(fake)
    assert later_record(junk, cut) == cut + 2 * len(fake)
    assert later_record(data[:cut] + fake + data[cut:cut + 30], offs[1]) == -1  # cut short


def test_takeover_cuts_a_tail_that_only_looks_like_records(tmp_path):
    """Junk holding the record magic after the last record is a torn tail: cut, records kept.
    A whole record after bad bytes is damage in the middle: the pack is left untouched."""
    path, data, entries = _active_pack(tmp_path)
    fake = _RECORD_START + b"\x00" * 40
    with open(path, "ab") as f:
        f.write(b"torn" + fake)
    fd = os.open(path, os.O_RDWR)
    try:
        found, end = packwriter.recover(fd, path)
    finally:
        os.close(fd)
    assert end == len(data) == os.path.getsize(path)
    assert sorted(found) == sorted(h for h, _, _ in entries)

    last = entries[-1]
    with open(path, "ab") as f:
        f.write(b"torn" + data[last[1]:last[1] + last[2]])  # bad bytes, then a whole record
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDWR)
    try:
        assert packwriter.recover(fd, path) is None
    finally:
        os.close(fd)
    assert os.path.getsize(path) == size


def test_a_dicts_line_naming_a_missing_zdict_is_named_by_reads_and_fsck(tmp_path):
    """A record compressed with a dictionary whose zdict object the store lacks: the read and
    `dicts_problems` both name the file, the line and the zdict id."""
    with PackStore(tmp_path, seal_size=8192, dict_samples=40) as s:
        ids = [s.put("value", event(i, "ran the tests, 3 failed " * 4)) for i in range(120)]
        path = s._dicts_path()
    dict_id, zid = open(path).read().split()
    missing = "ab" * 32
    with open(path, "w") as f:
        f.write(f"{int(dict_id) + 1} {zid}\n{dict_id} {missing}\n")
    message = (f"{path}:2: dictionary {dict_id} names zdict {missing}, which is not in the "
               f"store")
    with PackStore(tmp_path) as s:
        with pytest.raises(CorruptObject) as exc:  # the read names the record, then why
            for i in ids[40:]:
                s.get(i)
        assert str(exc.value).endswith(f" at offset {exc.value.details['offset']}: {message}")
        (problem,) = [p for p in s.dicts_problems() if missing in str(p)]
        assert str(problem) == message
        assert (problem.details["path"], problem.details["id"]) == (path, missing)


def test_dicts_line_names_the_line_or_a_question_mark(tmp_path):
    path = str(tmp_path / "dicts")
    assert _dicts_line(path, "ab" * 32) == "?"  # no file
    with open(path, "w") as f:
        f.write(f"1 {'cd' * 32}\n2 {'ef' * 32}\n3 {'ab' * 32}\n")
    assert _dicts_line(path, "ab" * 32) == 3
    assert _dicts_line(path, "cd" * 32) == 1
    assert _dicts_line(path, "12" * 32) == "?"


def _encoded(i):
    from ctxstore import codec as c

    return c.encode_object("value", event(i))


def test_put_new_catches_up_with_other_writers_at_most_once_a_period(tmp_path, monkeypatch):
    """Another writer's object is found when the catch-up period has passed (no second
    record, "not new"); within the period it is stored again and counted as new, as the
    docstring says — and the next catch-up waits a whole period from the last one."""
    from ctxstore.store import packstore

    clock = [1000.0]
    monkeypatch.setattr(packstore.time, "monotonic", lambda: clock[0])
    other = PackStore(tmp_path, dict_samples=0)
    mine = PackStore(tmp_path, dict_samples=0)
    (a, body_a), (b, body_b), (c, body_c), (d, body_d) = map(_encoded, (1, 2, 3, 4))
    first, body = _encoded(0)
    assert mine.put_new(first, "value", body) is True  # caught up now
    other.put("value", event(1))
    other.put("value", event(2))
    other.flush()
    clock[0] += packstore.CATCH_UP_SECONDS - 0.001  # within the period: not looked for
    assert mine.put_new(a, "value", body_a) is True
    clock[0] += 0.001  # a whole period since the last catch-up: found
    assert mine.put_new(b, "value", body_b) is False
    other.put("value", event(3))
    other.put("value", event(4))
    other.flush()
    clock[0] += packstore.CATCH_UP_SECONDS / 2  # the period restarted at that catch-up
    assert mine.put_new(c, "value", body_c) is True
    clock[0] += packstore.CATCH_UP_SECONDS / 2
    assert mine.put_new(d, "value", body_d) is False
    assert mine.put_new(b, "value", body_b) is False  # known by now
    mine.close()
    other.close()
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in (a, b, c, d)] == [event(1), event(2), event(3), event(4)]
        records = _records(s)
    assert [records.count(i) for i in (a, b, c, d)] == [2, 1, 2, 1]


def test_put_absent_shares_the_gc_lock_like_every_put(tmp_path):
    """A put must hold gc's shared lock (a gc waits for writers), the unchecked one too."""
    oid, body = _encoded(0)
    with PackStore(tmp_path, dict_samples=0) as s:
        assert not s.gc_lock.held
        s.put_absent(oid, "value", body)
        assert s.gc_lock.held
        assert s.get(oid) == event(0)


# -- recovery of an active pack, step by step ----------------------------------------------

@pytest.fixture
def os_calls(monkeypatch):
    """Names (and first arguments) of the file calls packwriter makes, in order."""
    calls = []
    proxy = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    for name in ("fsync", "fdatasync", "ftruncate", "pwrite", "unlink"):
        real = getattr(os, name)

        def call(*args, _name=name, _real=real):
            calls.append((_name, *args[1:2]))
            return _real(*args)

        setattr(proxy, name, call)
    monkeypatch.setattr(packwriter, "os", proxy)
    return calls


def _recover(path, start=HEADER_SIZE):
    fd = os.open(path, os.O_RDWR)
    try:
        return packwriter.recover(fd, path, start)
    finally:
        os.close(fd)


@pytest.mark.parametrize("head", [b"", b"CPA"], ids=["empty", "torn-header"])
def test_recovering_a_pack_cut_in_its_header_writes_the_header_again(tmp_path, os_calls, head):
    """A crash while a pack was being born (fewer bytes than its header): the pack is made an
    empty pack with a whole header, durably, and holds nothing."""
    path = str(tmp_path / "pack-x.pack")
    with open(path, "wb") as f:
        f.write(head)
    assert _recover(path) == ({}, HEADER_SIZE)
    with open(path, "rb") as f:
        assert f.read() == pack.HEADER
    assert [c[0] for c in os_calls] == ["ftruncate", "pwrite", "fsync"]


def test_recovering_an_intact_pack_changes_nothing(tmp_path, os_calls):
    path, data, entries = _active_pack(tmp_path)
    del os_calls[:]  # the store that wrote it has synced
    found, end = _recover(path)
    assert end == len(data)
    assert found == {h: (off, size) for h, off, size in entries}
    assert os_calls == []  # no truncation and no sync when nothing was torn
    with open(path, "rb") as f:
        assert f.read() == data


def test_recovering_from_an_end_mark_returns_only_the_records_after_it(tmp_path):
    path, data, entries = _active_pack(tmp_path)
    mark = entries[2][1]
    found, end = _recover(path, mark)
    assert found == {h: (off, size) for h, off, size in entries[2:]}
    assert end == len(data)


def test_recovery_drops_a_last_record_whose_crc_fails_and_syncs_the_cut(tmp_path, os_calls):
    """Every byte of the last record arrived but its payload is wrong (a power cut can leave
    zeros): it is cut off, the cut made durable, and the records before it kept."""
    path, data, entries = _active_pack(tmp_path)
    del os_calls[:]  # the store that wrote it has synced
    last = entries[-1]
    with open(path, "r+b") as f:
        f.seek(last[1] + last[2] - 1)
        f.write(bytes([data[last[1] + last[2] - 1] ^ 0xFF]))
    found, end = _recover(path)
    assert end == last[1] == os.path.getsize(path)
    assert found == {h: (off, size) for h, off, size in entries[:-1]}
    assert os_calls == [("ftruncate", last[1]), ("fsync",)]


def test_recovery_keeps_the_first_of_two_records_of_one_object(tmp_path):
    """An object written twice (two writers raced on it): the map names its first record."""
    path, data, entries = _active_pack(tmp_path)
    first = entries[1]
    with open(path, "ab") as f:
        f.write(data[first[1]:first[1] + first[2]])
    found, end = _recover(path)
    assert found[first[0]] == (first[1], first[2])
    assert end == len(data) + first[2] and len(found) == len(entries)


def test_recovery_refuses_a_file_that_is_not_a_pack(tmp_path):
    path = str(tmp_path / "pack-x.pack")
    with open(path, "wb") as f:
        f.write(b"NOPE" + b"\x01\x00\x00\x00" + b"x" * 40)
    with pytest.raises(CorruptStore) as exc:
        _recover(path)
    assert str(exc.value) == f"{path} is not a ctxstore pack (bad magic)"
    assert os.path.getsize(path) == 48


def test_take_over_reads_the_partial_index_again_and_scans_after_its_end(tmp_path):
    """The previous writer extended the partial index: a takeover uses the new end mark and
    keeps only the records after it in the scanned map."""
    path, data, entries = _active_pack(tmp_path)
    p = Pack(path, sealed=False)
    assert p.load_partial() == HEADER_SIZE  # no partial index yet
    fd = os.open(path, os.O_RDWR)
    try:
        p.offsets = {h: (off, size) for h, off, size in entries}
        p.scanned = len(data)
        packwriter.extend_partial(p, entries[3][1])  # what the previous writer did
        assert p.indexed_end == entries[3][1]
        # exactly the records before the end mark: not the one that starts at it
        assert sorted(p.partial.entries()) == sorted((bytes.fromhex(h), off)
                                                     for h, off, _ in entries[:3])
        assert p.offsets == {h: (off, size) for h, off, size in entries[3:]}
        q = Pack(path, sealed=False)
        assert packwriter.take_over(fd, q)
        assert q.indexed_end == entries[3][1]
        assert q.offsets == {h: (off, size) for h, off, size in entries[3:]}
        assert q.scanned == len(data)
        assert sorted(q.ids()) == sorted(h for h, _, _ in entries)
        with open(path, "ab") as f:  # bad bytes, then a whole record: damage in the middle
            f.write(b"torn" + data[entries[0][1]:entries[0][1] + entries[0][2]])
        assert not packwriter.take_over(fd, Pack(path, sealed=False))
    finally:
        os.close(fd)
        p.close()


# -- sealing ------------------------------------------------------------------------------

def test_sealing_makes_the_data_durable_before_the_index_and_then_reads_through_it(tmp_path,
                                                                                   os_calls):
    """seal(): fdatasync of the pack, then the index (a stale `.idx.lock` of a dead writer
    removed first), then the partial index removed; the sealing process itself now reads
    through the index (no scanned map, no partial index) and finds every object."""
    s = PackStore(tmp_path, dict_samples=0, durability="never")
    ids = put_events(s, 30)
    writer = s._writer
    p = writer.pack
    writer._index_to(writer.size - 1)  # a partial index the seal must supersede
    pidx = p.path[:-5] + ".pidx"
    assert os.path.exists(pidx)
    open(p.path[:-5] + ".idx.lock", "w").close()
    del os_calls[:]
    sealed = writer.seal()
    names = [c[0] for c in os_calls]
    assert names[0] == "fdatasync"
    assert ("unlink", ) in [c[:1] for c in os_calls] and names.index("unlink") > 0
    assert not os.path.exists(p.path[:-5] + ".idx.lock")
    assert os.path.exists(p.path[:-5] + ".idx") and not os.path.exists(pidx)
    assert sealed is p and p.sealed and p.offsets == {} and p.partial is None
    assert writer.pack is None and writer._fd is None and writer._pending == 0
    assert sorted(p.ids()) == sorted(ids)
    assert [s.get(i) for i in ids] == [event(i) for i in range(30)]
    s.close()
    with PackStore(tmp_path) as s:
        assert list(fsck.verify(s, workers=1)) == []


def test_a_queued_batch_that_crosses_seals_is_written_once_and_whole(tmp_path):
    """A transaction's queued bodies written together (bodyqueue) fill more than one pack:
    each seal is followed by a new pack, every object is written exactly once, in put order,
    and all read back."""
    with PackStore(tmp_path, seal_size=1024, max_packs=1000, dict_samples=0) as s:
        s.begin_transaction()
        ids = put_events(s, 60)
        s.end_transaction()
        records = _records(s)
        sealed = [p for p in s.packs() if p.sealed]
    assert len(sealed) >= 5
    assert sorted(records) == sorted(ids) and len(records) == len(ids)
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in range(60)]
        assert list(fsck.verify(s, workers=1)) == []


def test_seal_orphans_returns_the_packs_it_sealed(tmp_path):
    a = PackStore(tmp_path, dict_samples=0)
    b = PackStore(tmp_path, dict_samples=0)
    put_events(a, 3)
    put_events(b, 3, start=3)
    a.close()
    b.close()
    with PackStore(tmp_path, dict_samples=0) as s:
        candidates = [p for p in s.packs() if not p.sealed]
    writer = packwriter.PackWriter(str(tmp_path / "packs"), "never")
    chosen, orphans = writer.acquire(candidates)
    assert len(orphans) == 1 and orphans[0] is not chosen
    assert writer.seal_orphans() == orphans and orphans[0].sealed
    assert writer.orphans == [] and writer.seal_orphans() == []
    writer.close()


def test_a_queued_batch_skips_what_the_pack_it_takes_over_at_a_seal_holds(tmp_path):
    """A transaction's batch crosses a seal; the next pack is another writer's (closed since),
    which already holds some of the batch's objects: those are not written a second time, and
    the rest of the batch after them is written."""
    kw = dict(seal_size=1024, max_packs=1000, dict_samples=0)
    a = PackStore(tmp_path, **kw)
    put_events(a, 1, start=1000)  # a's writer has its own active pack
    b = PackStore(tmp_path, **kw)
    theirs = put_events(b, 3, start=100)  # into b's own pack (a's is locked)
    b.close()  # unlocked, still active; a has not looked at it
    a.begin_transaction()
    ids = put_events(a, 6, start=0) + put_events(a, 3, start=100) + put_events(a, 6, start=200)
    a.end_transaction()
    records = _records(a)
    assert [records.count(i) for i in theirs] == [1, 1, 1]
    assert all(records.count(i) == 1 for i in ids)
    a.close()
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids] == [event(i) for i in [*range(6), *range(100, 103),
                                                               *range(200, 206)]]


@pytest.fixture
def index_writes(monkeypatch):
    """(file name, fsync) of every index file packwriter writes."""
    writes = []
    real = packwriter.write_file_atomically

    def write(path, data, fsync=True):
        writes.append((os.path.basename(path).split(".")[-1], fsync))
        return real(path, data, fsync=fsync)

    monkeypatch.setattr(packwriter, "write_file_atomically", write)
    return writes


@pytest.mark.parametrize("durability", ["always", "batch", "never"])
def test_partial_indexes_and_seals_are_synced_per_durability(tmp_path, index_writes, durability):
    """A partial index is made durable unless durability is "never" (its end mark may then
    only name bytes the OS has); a seal's index is always made durable (rule 7 of the write
    ordering); extending the partial index to where it already ends writes nothing."""
    s = PackStore(tmp_path, dict_samples=0, durability=durability, index_every=2048)
    put_events(s, 40)
    s.flush()
    assert index_writes and {name for name, _ in index_writes} == {"pidx"}
    assert {fsync for _, fsync in index_writes} == {durability != "never"}
    writer = s._writer
    n = len(index_writes)
    packwriter.extend_partial(writer.pack, writer.pack.indexed_end)
    assert len(index_writes) == n
    put_events(s, 3, start=40)
    s.flush()
    packwriter.extend_partial(writer.pack, writer.size)  # called without fsync=: durable
    assert index_writes[n:] == [("pidx", True)]
    writer.seal()
    assert index_writes[-1] == ("idx", True)
    s.close()
    with PackStore(tmp_path) as s:
        assert list(fsck.verify(s, workers=1)) == []


def test_good_end_of_an_intact_buffer_keeps_every_record(tmp_path):
    _, data, entries = _active_pack(tmp_path)
    assert pack.good_end(data, entries, len(data)) == (len(data), len(entries))
    cut = data[:-1]  # the last record's last byte lost: scan stops before it
    found, end = scan(cut, HEADER_SIZE)
    assert pack.good_end(cut, found, end) == (entries[-1][1], len(entries) - 1)
    tail = data[entries[2][1]:]  # a buffer that starts at offset base of the pack
    found, end = scan(tail, 0, entries[2][1])
    assert pack.good_end(tail, found, end, entries[2][1]) == (len(data), len(entries) - 2)


def test_the_group_commit_thread_is_a_named_daemon(tmp_path):
    """Named so that a stack dump says what it is; a daemon, so that a program that forgets
    to close its store still exits (its last records are then only as durable as the OS)."""
    s = PackStore(tmp_path, dict_samples=0, durability="batch")
    put_events(s, 1)
    thread = s._writer._thread
    assert thread.name == "ctxstore-sync" and thread.daemon and thread.is_alive()
    s.close()
    assert not thread.is_alive()


def test_create_pack_makes_a_locked_pack_with_its_header(tmp_path, monkeypatch, renames):
    """`pack-<40 hex>.pack` in the packs directory, mode 0644, holding its header, locked by
    the returned descriptor; nothing left under a temporary name or in the working directory.
    If the rename fails the descriptor is closed and the error raised."""
    packs_dir = tmp_path / "packs"
    packs_dir.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    old_umask = os.umask(0o022)
    try:
        fd, path = pack.create_pack(str(packs_dir))
    finally:
        os.umask(old_umask)
    # born under a temporary name in the packs directory itself (one rename, one fsync_dir)
    ((src, dst),) = renames
    assert os.path.dirname(src) == str(packs_dir) and dst == path
    assert os.path.basename(src) == "tmp-" + os.path.basename(path)
    try:
        name = os.path.basename(path)
        assert os.path.dirname(path) == str(packs_dir) and os.listdir(packs_dir) == [name]
        assert name.startswith("pack-") and name.endswith(".pack") and len(name) == 50
        int(name[5:45], 16)
        assert os.stat(path).st_mode & 0o777 == 0o644 and os.listdir(cwd) == []
        with open(path, "rb") as f:
            assert f.read() == pack.HEADER
        assert packwriter.open_locked(path) is None  # ours
    finally:
        os.close(fd)

    def rename(src, dst):
        raise OSError(28, "No space left on device")

    before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(pack.os, "rename", rename)
    with pytest.raises(OSError, match="No space left"):
        pack.create_pack(str(packs_dir))
    monkeypatch.undo()
    assert set(os.listdir("/proc/self/fd")) == before
