"""Pack files (store/pack.py) through `Pack` and the module's helpers, one rule at a time:
the header checks and their messages, names, reading a file to its end, what a read error
says, counting and listing an active pack with a partial index, and a pack used again after
it was closed."""

from __future__ import annotations

import os

import pytest

from ctxstore.errors import CorruptObject, CorruptStore
from ctxstore.store import pack as packmod
from ctxstore.store import packwriter
from ctxstore.store.pack import HEADER, HEADER_SIZE, Pack, check_header, pack_name, scan
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event, put_events


def _active(tmp_path, n=6):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, n)
        path = next(p.path for p in s.packs() if not p.sealed)
    data = open(path, "rb").read()
    entries, _ = scan(data, HEADER_SIZE)
    return path, ids, entries


@pytest.mark.parametrize("head, message", [
    (b"NOPE\x01\x00\x00\x00", "{path} is not a ctxstore pack (bad magic)"),
    (b"CPAK\x02\x00\x00\x00", "{path}: unsupported pack version 2"),
])
def test_a_bad_header_is_named_with_its_file(tmp_path, head, message):
    path = str(tmp_path / "pack-x.pack")
    with open(path, "wb") as f:
        f.write(head + b"rest")
    for check in (lambda: check_header(head, path), lambda: Pack(path, sealed=False).fd()):
        with pytest.raises(CorruptStore) as exc:
            check()
        assert str(exc.value) == message.format(path=path)
        assert exc.value.details["path"] == path
    check_header(HEADER[:5], path)  # shorter than a header: a pack being born, no error


def test_pack_name_is_the_file_name_without_its_last_suffix():
    assert pack_name("/store/packs/pack-ab12.pack") == "pack-ab12"
    assert pack_name("/a.b/packs/pack-ab12.idx") == "pack-ab12"
    assert pack_name("pack-ab.12.pidx") == "pack-ab.12"


def test_read_file_from_reads_to_the_end_in_as_many_reads_as_it_takes(tmp_path, monkeypatch):
    path = tmp_path / "f"
    data = bytes(range(256)) * 3
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert packmod.read_file_from(fd, 0) == data
        assert packmod.read_file_from(fd, 700) == data[700:]
        assert packmod.read_file_from(fd, len(data)) == b""
        real = os.pread
        monkeypatch.setattr(packmod.os, "pread", lambda fd, n, pos: real(fd, min(n, 5), pos))
        assert packmod.read_file_from(fd, 3) == data[3:]  # in reads of 5 bytes, joined
        # the file shrank while being read (a recovering writer cut it): what was read
        monkeypatch.setattr(packmod.os, "pread", lambda fd, n, pos: real(fd, 5, pos) if pos < 13
                            else b"")
        assert packmod.read_file_from(fd, 3) == data[3:13]
    finally:
        monkeypatch.undo()
        os.close(fd)


def test_a_record_that_is_not_the_one_asked_for_is_named(tmp_path):
    """The record at the offset names another object: the error names the object asked for,
    the pack, the offset, and what the record holds instead."""
    path, ids, entries = _active(tmp_path)
    with PackStore(tmp_path) as s:
        reader = s._read
        p = Pack(path, sealed=False)  # not scanned: each record read from its header on
        (a, off_a, _), (b, off_b, _) = entries[0], entries[1]
        with pytest.raises(CorruptObject) as exc:
            p.read(a, off_b, reader)
        assert str(exc.value) == (f"object {a} in pack {p.name} at offset {off_b}: "
                                  f"record header names {b}")
        assert (exc.value.details["id"], exc.value.details["pack"],
                exc.value.details["offset"]) == (a, p.name, off_b)
        assert p.read(a, off_a, reader)[0] == "value"
        p.close()


def test_an_active_pack_with_a_partial_index_counts_and_lists_each_object_once(tmp_path):
    path, ids, entries = _active(tmp_path)
    fd = os.open(path, os.O_RDWR)
    try:
        p = Pack(path, sealed=False)
        p.offsets = {h: (off, size) for h, off, size in entries}
        p.scanned = entries[-1][1] + entries[-1][2]
        packwriter.extend_partial(p, entries[2][1])  # 2 in the partial index, 4 in the tail
    finally:
        os.close(fd)
    q = Pack(path, sealed=False)
    assert q.refresh() == 6 and q.count() == 6
    assert sorted(q.ids()) == sorted(ids) and len(list(q.ids())) == 6
    q.offsets[entries[0][0]] = (entries[0][1], entries[0][2])  # in both: listed once
    assert sorted(q.ids()) == sorted(ids)
    q.close()
    r = Pack(path, sealed=False)  # no partial index: everything from the scan
    os.unlink(path[:-5] + ".pidx")
    assert r.refresh() == 6 and r.count() == 6
    r.close()
    empty = tmp_path / "pack-e.pack"
    empty.write_bytes(HEADER)
    e = Pack(str(empty), sealed=False)
    assert e.refresh() == 0 and e.count() == 0 and list(e.ids()) == []
    e.close()


@pytest.mark.parametrize("sealed", [False, True], ids=["active", "sealed"])
def test_a_pack_closed_and_used_again_reads_as_before(tmp_path, sealed):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 5)
        if sealed:
            s.seal_active()
        path = s.packs()[0].path
    with PackStore(tmp_path) as s:
        reader = s._read
        p = Pack(path, sealed=sealed)
        p.refresh() if not sealed else None
        for _ in range(2):
            for n, i in enumerate(ids):
                off = p.locate(i, bytes.fromhex(i))
                assert off >= HEADER_SIZE
                assert reader is not None and p.read(i, off, reader) == ("value", s.get_raw(i)[1])
                assert s.get(i) == event(n)
            p.close()
            p.close()  # twice is fine
