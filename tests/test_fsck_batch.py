"""fsck's batched record check (`codec.Decompressor.check_run`) finds every bad record of a run
and names it with pack and offset, in this process and in workers, exactly as an independent
oracle does: a reader written here from docs/format.md (struct, zlib, zstandard, blake3,
msgpack), sharing no code with the store.
"""

from __future__ import annotations

import math
import os
import struct
import zlib
from concurrent.futures import ProcessPoolExecutor

import blake3
import msgpack
import pytest
import zstandard

from ctxstore import codec
from ctxstore.store import fsck
from ctxstore.store.packstore import PackStore
from tests.test_fsck_parallel import _flip, _verify
from tests.test_store_pack import _record_offset, event

# docs/format.md "Records": magic, version, type, compression, 3 reserved, dict id, raw length,
# stored length, id, crc over bytes 0..51 and then the payload.
HEAD = struct.Struct("<2sBBB3sIII32sI")
TYPES = {1: "blob", 2: "event", 10: "zdict", 13: "value"}
RAW = {"blob", "zdict"}
CHUNK = 100  # records per run: many frames per batch, several batches per pack


def _events(n):
    return [event(i, "ran the tests, 3 failed; the fixture path was wrong " * 3)
            for i in range(n)]


def _store(path, seal):
    """Dictionary-compressed events (the dictionary is trained on the first 200)."""
    with PackStore(path, seal_size=64 * 1024 if seal else 1 << 24, dict_samples=200) as s:
        ids = [s.put("value", ev) for ev in _events(600)]
    return ids


def _head(path, off):
    with open(path, "rb") as f:
        f.seek(off)
        return HEAD.unpack(f.read(HEAD.size))


def _rewrite(path, off, change, fix_crc=True):
    """Replace the record at `off` by change(header fields, payload) of the same size, with a
    crc that holds (unless fix_crc is False)."""
    with open(path, "r+b") as f:
        f.seek(off)
        fields = list(HEAD.unpack(f.read(HEAD.size)))
        payload = f.read(fields[7])
        fields, payload = change(fields, payload)
        assert len(payload) == fields[7]
        head = HEAD.pack(*fields)
        if fix_crc:
            head = head[:52] + struct.pack("<I", zlib.crc32(payload, zlib.crc32(head[:52])))
        f.seek(off)
        f.write(head + payload)


def _canonical(value):
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return None
        out = {}
        for k in sorted(value):
            v = _canonical(value[k])
            if v is None and value[k] is not None:
                return None
            out[k] = v
        return out
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)
                                     or math.copysign(1.0, value) < 0 and value == 0.0):
        return None
    return value


def oracle(store_path):
    """(kind, id, pack, offset) of every bad record of every pack, read from the bytes."""
    packs_dir = os.path.join(store_path, "packs")
    records, dicts = [], {}
    for name in sorted(os.listdir(packs_dir)):
        if not (name.startswith("pack-") and name.endswith(".pack")):
            continue
        data = open(os.path.join(packs_dir, name), "rb").read()
        pos = 8  # pack header: magic `CPAK`, version u32
        while pos + HEAD.size <= len(data):
            fields = HEAD.unpack_from(data, pos)
            size = HEAD.size + fields[7]
            records.append((name[:-5], pos, fields, data[pos + HEAD.size:pos + size],
                            zlib.crc32(data[pos + HEAD.size:pos + size], zlib.crc32(
                                data[pos:pos + 52])) == fields[9]))
            pos += size
    for _, _, fields, payload, crc_ok in records:
        if TYPES.get(fields[2]) == "zdict" and crc_ok:
            body = payload if fields[3] == 0 else zstandard.ZstdDecompressor().decompress(payload)
            dicts[zstandard.ZstdCompressionDict(body).dict_id()] = body
    found = []
    for pack, off, (_, _, code, comp, _, dict_id, raw_len, _, raw_id, _), payload, crc_ok \
            in records:
        where = (raw_id.hex(), pack, off)
        if not crc_ok:
            found.append(("checksum", *where))
            continue
        try:
            if comp == 0:
                body = payload
            else:
                d = zstandard.ZstdDecompressor(
                    dict_data=zstandard.ZstdCompressionDict(dicts[dict_id]) if comp == 2 else None)
                body = d.decompress(payload, max_output_size=raw_len)
        except zstandard.ZstdError:
            found.append(("decode", *where))
            continue
        if len(body) != raw_len:
            found.append(("decode", *where))
            continue
        type_name = TYPES[code]
        if blake3.blake3(b"ctx1 %s %d\x00" % (type_name.encode(), len(body)) + body).digest() \
                != raw_id:
            found.append(("hash", *where))
        elif type_name not in RAW:
            canon = _canonical(msgpack.unpackb(body, strict_map_key=False))
            if canon is None or msgpack.packb(canon, use_bin_type=True) != body:
                found.append(("canonical", *where))
    return found


def _where(store_path, ids, i):
    with PackStore(store_path) as s:
        pack, off = _record_offset(s, ids[i])
    return pack.path, pack.name, off


@pytest.mark.parametrize("seal", [False, True], ids=["active", "sealed"])
@pytest.mark.parametrize("workers", [1, 2])
def test_flipped_byte_inside_a_batch_is_named(tmp_path, workers, seal):
    ids = _store(tmp_path, seal)
    path, pack, off = _where(tmp_path, ids, 450)
    head = _head(path, off)
    assert head[3] == codec.COMP_ZSTD_DICT  # a dictionary frame, in the middle of a run
    clean, _ = _verify(tmp_path, workers, CHUNK)
    assert clean == []
    _flip(path, off + codec.RECORD_HEAD_SIZE + head[7] // 2)
    problems, runs = _verify(tmp_path, workers, CHUNK)
    assert problems == [("checksum", ids[450], pack, off)]
    assert runs >= (2 if workers == 2 else 0)


def _damage(store_path, ids):
    """One record of each kind of fault the batch path must hand to the slow path, all in the
    same runs; returns (kind, id) of each as the store's reader would classify it."""
    def flip_payload(fields, payload):
        return fields, payload[:5] + bytes([payload[5] ^ 1]) + payload[6:]

    def other_id(fields, payload):
        fields[8] = bytes(32 - len(b"x")) + b"x"
        return fields, payload

    def scramble_frame(fields, payload):
        return fields, payload[:4] + bytes(len(payload) - 4)  # magic kept, the rest zeros

    def longer(fields, payload):
        fields[6] += 1
        return fields, payload

    def reserved(fields, payload):
        fields[4] = b"\x00\x01\x00"
        return fields, payload

    plan = [(310, flip_payload, True), (320, flip_payload, False), (330, other_id, True),
            (340, scramble_frame, True), (350, longer, True), (360, reserved, False)]
    for i, change, fix_crc in plan:
        path, _, off = _where(store_path, ids, i)
        _rewrite(path, off, change, fix_crc)
    path, _, off = _where(store_path, ids, 370)
    with open(path, "r+b") as f:  # the crc field itself
        f.seek(off + 52)
        crc = f.read(1)
        f.seek(off + 52)
        f.write(bytes([crc[0] ^ 0x80]))


@pytest.mark.parametrize("workers", [1, 2])
def test_every_kind_of_bad_record_matches_the_oracle(tmp_path, workers):
    ids = _store(tmp_path, seal=False)
    with PackStore(tmp_path) as s:  # a true id over a body that is not canonical msgpack
        body = msgpack.packb({"zeta": 1, "alpha": [1, 2.5, "x" * 80]})
        odd = s.put_encoded(codec.compute_id("value", body), "value", body)
        ids += [s.put("value", ev) for ev in _events(700)[600:]]
    _damage(tmp_path, ids)
    expected = oracle(tmp_path)
    problems, _ = _verify(tmp_path, workers, CHUNK)
    assert {kind for kind, *_ in expected} == {"checksum", "decode", "hash", "canonical"}
    assert ("canonical", odd) in {(kind, oid) for kind, oid, *_ in problems}
    assert len(expected) == 8
    assert [p for p in problems if p[0] != "index"] == expected
    # the record given another id no longer matches the partial index, both ways
    renamed = next(off for kind, _, _, off in expected if kind == "hash")
    assert {(kind, off) for kind, _, _, off in problems if kind == "index"} == {("index", renamed)}


@pytest.mark.parametrize("body, canonical", [
    (codec.pack_value({"a": [1, {"b": None}], "c": "x"}), True),
    (b"\x92\xcb" + struct.pack(">d", 1.5) + b"\x01", True),
    (b"\x92\xcb" + struct.pack(">d", math.nan) + b"\x01", False),
    (b"\x92\xcb" + struct.pack(">d", math.inf) + b"\x01", False),
    (b"\x92\xcb" + struct.pack(">d", -0.0) + b"\x01", False),
    (b"\xca" + struct.pack(">f", 1.5), False),  # float32
    (b"\xcc\x05", False),  # 5 in a longer form than its shortest
    (b"\x82\xa1b\x01\xa1a\x02", False),  # keys out of order
    (b"\x82\xa1a\x01\xa1a\x02", False),  # a duplicate key
    (b"\x81\x01\x02", False),  # a non-str key
    (msgpack.packb(msgpack.ExtType(3, b"ab")), False),
    (b"\x93\x01", False),  # truncated
])
def test_is_canonical_edge_cases(body, canonical):
    """The C round trip (ormsgpack) accepts only what the reference accepts."""
    assert codec.is_canonical(body) is canonical


@pytest.mark.parametrize("workers, min_parallel", [(None, "many"), (None, "all"), (1, "all"),
                                                   (2, "many")])
def test_verify_in_this_process_names_the_same_problems(tmp_path, monkeypatch, workers,
                                                        min_parallel):
    """`verify` called directly: the oracle's problems in pack order, progress that ends at the
    number of records, and worker processes exactly when it may use them: asked for (or left
    to choose, for a store of at least PARALLEL_MIN records), on a machine with more than one
    CPU — forked from a process with one thread, else from a fork server (pytest-xdist's
    workers have more threads)."""
    ids = _store(tmp_path, seal=True)
    _damage(tmp_path, ids)
    expected = oracle(tmp_path)
    submitted = []

    class Counting(ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            submitted.append(args)
            return super().submit(fn, *args, **kwargs)

    here = os.getpid()
    checked_here = []
    verify_records = fsck._verify_records

    def counted(*args):
        if os.getpid() == here:
            checked_here.append(args[1:3])
        return verify_records(*args)

    monkeypatch.setattr(fsck, "ProcessPoolExecutor", Counting)
    monkeypatch.setattr(fsck, "_verify_records", counted)
    monkeypatch.setattr(fsck, "CHUNK", CHUNK)
    seen = []
    with PackStore(tmp_path) as s:
        total = sum(p.count() for p in s.packs())
        monkeypatch.setattr(fsck, "PARALLEL_MIN", total if min_parallel == "all" else total + 1)
        problems = [(p.kind, p.id, p.pack, p.offset)
                    for p in fsck.verify(s, progress=seen.append, workers=workers)]
    parallel = workers == 2 or workers is None and min_parallel == "all" and fsck._cpus() > 1
    assert len(submitted) >= 2 if parallel else submitted == []
    assert (checked_here == []) is parallel  # the workers did the checking, or this process
    records = [p for p in problems if p[0] != "index"]
    assert sorted(records) == sorted(expected) and len(expected) == 7
    for pack in {p[2] for p in records}:  # within a pack, by offset
        offsets = [p[3] for p in records if p[2] == pack]
        assert offsets == sorted(offsets)
    assert seen[-1] == total and seen == sorted(seen)


def test_damage_does_not_stop_the_check_of_what_follows(tmp_path):
    """Unreadable bytes inside an active pack are damage, named with pack and offset; the
    records after them are still checked (a flipped byte there is found too)."""
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = [s.put("value", ev) for ev in _events(40)]
    path, name, off = _where(tmp_path, ids, 10)
    _, _, later = _where(tmp_path, ids, 30)
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(b"\xff\xfe")  # the magic of record 10: not a record header
    _flip(path, later + codec.RECORD_HEAD_SIZE + 4)
    seen = []
    with PackStore(tmp_path) as s:
        problems = [(p.kind, p.id, p.pack, p.offset, p.message)
                    for p in fsck.verify(s, progress=seen.append, workers=1) if p.kind != "index"]
    assert seen[-1] == 39  # every record but the one whose header is gone
    assert [p[:4] for p in problems] == [("damage", None, name, off),
                                         ("checksum", ids[30], name, later)]
    assert problems[0][4] == f"pack {name}: unreadable bytes at offset {off}: bad record " \
                             f"magic/version at offset {off}"


def _a_sealed_pack(tmp_path):
    """(path, name) of a sealed pack in a store of 30 events at `tmp_path`."""
    with PackStore(tmp_path, seal_size=2048, dict_samples=0) as s:
        for ev in _events(30):
            s.put("value", ev)
    with PackStore(tmp_path) as s:
        pack = next(p for p in s.packs() if p.sealed)
        return pack.path, pack.name


def test_junk_after_the_last_record_of_a_sealed_pack_is_damage(tmp_path):
    """A torn tail is normal only in an active pack: a sealed one never grows."""
    path, name = _a_sealed_pack(tmp_path)
    end = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    with PackStore(tmp_path) as s:
        problems = [(p.kind, p.pack, p.offset) for p in fsck.verify(s, workers=1)]
    assert ("damage", name, end) in problems


def test_a_file_that_is_no_pack_is_named(tmp_path):
    path, name = _a_sealed_pack(tmp_path)
    with open(path, "r+b") as f:
        f.write(b"JUNK")
    with PackStore(tmp_path) as s:
        problems = [(p.kind, p.id, p.pack, p.offset, p.message)
                    for p in fsck.verify(s, workers=1) if p.kind == "pack"]
    assert problems == [("pack", None, name, None,
                         f"pack {name}: {path} is not a ctxstore pack (bad magic)")]


def test_a_dicts_line_naming_no_dictionary_is_named(tmp_path):
    ids = _store(tmp_path, seal=False)
    with PackStore(tmp_path) as s:
        dict_id = s.dicts_problems() == [] and int(open(s._dicts_path()).read().split()[0])
        dicts_path = s._dicts_path()
    with open(dicts_path, "a") as f:
        f.write(f"{dict_id + 1} {ids[5]}\n")  # an event, not a zdict
    with PackStore(tmp_path) as s:
        problems = [(p.kind, p.id, p.message) for p in fsck.verify(s, workers=1)]
    ((kind, oid, message),) = problems
    assert (kind, oid) == ("dicts", ids[5])
    assert message == f"{dicts_path}:2: dictionary {dict_id + 1} names {ids[5]}, which is a value"


def _die(*args):
    os._exit(3)  # a worker killed mid-run (OOM killer, kill -9)


def test_a_worker_that_dies_costs_time_not_answers(tmp_path, monkeypatch):
    """When a worker process dies, its runs are checked in this process: same problems."""
    ids = _store(tmp_path, seal=True)
    _damage(tmp_path, ids)
    expected = oracle(tmp_path)
    monkeypatch.setattr(fsck, "_verify_chunk", _die)
    monkeypatch.setattr(fsck, "CHUNK", CHUNK)
    seen = []
    with PackStore(tmp_path) as s:
        total = sum(p.count() for p in s.packs())
        problems = [(p.kind, p.id, p.pack, p.offset)
                    for p in fsck.verify(s, progress=seen.append, workers=2)]
    assert sorted(p for p in problems if p[0] != "index") == sorted(expected)
    assert seen[-1] == total
