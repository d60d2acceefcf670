"""Hostile and broken packs are refused with BadPack and the store left byte-for-byte unchanged."""

from __future__ import annotations

import struct

import blake3
import pytest
import zstandard

from ctxstore import codec
from ctxstore.errors import BadPack
from ctxstore.porcelain import transfer
from ctxstore.repo import Repository
from ctxstore.transfer import packfile
from ctxstore.transfer.packfile import Limits
from tests.clitools import store_files
from tests.test_links import build_repo

HEADER = {"capabilities": ["zstd"], "dicts": [], "objects": 0, "prerequisites": [], "refs": {}}


def _record(type_name: str, value, obj_id: str | None = None, raw_len: int | None = None,
            payload: bytes | None = None, comp: int = codec.COMP_NONE) -> tuple[str, bytes]:
    oid, body = codec.encode_object(type_name, value)
    oid = obj_id or oid
    payload = body if payload is None else payload
    return oid, codec.encode_record(oid, type_name, payload, comp, 0,
                                    len(body) if raw_len is None else raw_len)


def _event(parents=(), text="x"):
    return {"type": "MessageAdded", "actor": "agent", "payload": {"text": text},
            "parents": list(parents), "generation": len(parents) + 1, "ts": "", "causality": {}}


def _pack(records: list[tuple[str, bytes]], refs: dict | None = None, **header) -> bytes:
    records = sorted(records)
    h = dict(HEADER, objects=len(records), refs=refs or {})
    h.update(header)
    return packfile.frame(h, [r for _, r in records])


def _retrailer(data: bytes) -> bytes:
    body = data[:-32]
    return body + blake3.blake3(body).digest()


@pytest.fixture
def dst(tmp_path):
    repo, _ = build_repo(tmp_path / "dst")
    repo.close()
    return Repository.open(tmp_path / "dst")


@pytest.fixture
def good(tmp_path):
    src, _ = build_repo(tmp_path / "src", title="other")
    out = tmp_path / "good.pack"
    transfer.pack(src, str(out), all_refs=True)
    src.close()
    return out.read_bytes()


def _refused(tmp_path, dst, data: bytes, match: str, limits: Limits | None = None):
    path = tmp_path / "hostile.pack"
    path.write_bytes(data)
    before = store_files(tmp_path / "dst")
    with pytest.raises(BadPack, match=match):
        if limits is None:
            transfer.unpack(dst, str(path))
        else:
            transfer.unpack(dst, str(path), limits=limits)
    dst.objects.flush()
    assert store_files(tmp_path / "dst") == before


def test_good_pack_is_accepted(tmp_path, dst, good):
    path = str(tmp_path / "ok.pack")
    (tmp_path / "ok.pack").write_bytes(good)
    listing = transfer.listing(path)
    res = transfer.unpack(dst, path)
    assert len(listing["refs"]) == 2 and {u.name: u.new for u in res.refs} == listing["refs"]
    assert {u.action for u in res.refs} == {"create"}
    assert all(dst.refs.read(name) == tip for name, tip in listing["refs"].items())
    assert res.objects == len(listing["objects"]) > 10 and 0 < res.new_objects <= res.objects
    assert all(o["id"] in dst.objects for o in listing["objects"])
    dst.objects.flush()
    before = store_files(tmp_path / "dst")
    again = transfer.unpack(dst, path)  # a second import is a no-op
    dst.objects.flush()
    assert again.new_objects == 0 and {u.action for u in again.refs} == {"unchanged"}
    assert store_files(tmp_path / "dst") == before


def test_wrong_magic(tmp_path, dst, good):
    _refused(tmp_path, dst, b"GARBAGE!" + good[8:], "bad magic")


def test_wrong_version(tmp_path, dst, good):
    data = good[:8] + struct.pack("<I", 99) + good[12:]
    _refused(tmp_path, dst, _retrailer(data), "unsupported pack version 99")


@pytest.mark.parametrize("keep", [0, 5, 20, -1, -33, -200])
def test_truncated(tmp_path, dst, good, keep):
    _refused(tmp_path, dst, good[:keep], "truncated|checksum trailer")


def test_bad_trailer_and_flipped_byte(tmp_path, dst, good):
    _refused(tmp_path, dst, good[:-1] + bytes([good[-1] ^ 1]), "checksum trailer")
    mid = len(good) // 2
    _refused(tmp_path, dst, good[:mid] + bytes([good[mid] ^ 0x40]) + good[mid + 1:],
             "checksum trailer")


def test_object_that_does_not_hash_to_its_id(tmp_path, dst):
    eid, _ = _record("event", _event())
    liar = _record("event", _event(text="evil"), obj_id=eid)
    data = _pack([liar], refs={"refs/sessions/x/main": eid})
    _refused(tmp_path, dst, data, "hashes to")


def test_declared_size_over_limit_is_a_bomb(tmp_path, dst):
    big = b"\0" * (4 << 20)
    payload = zstandard.ZstdCompressor().compress(big)
    rec = _record("blob", big, payload=payload, comp=codec.COMP_ZSTD)
    _refused(tmp_path, dst, _pack([rec]), "decompression bomb",
             limits=Limits(max_object=1 << 20))
    _refused(tmp_path, dst, _pack([rec]), "decompression bomb",
             limits=Limits(max_total=1 << 20))


def test_frame_larger_than_declared_is_a_bomb(tmp_path, dst):
    big = b"\0" * (64 << 20)
    payload = zstandard.ZstdCompressor().compress(big)
    oid = codec.compute_id("blob", b"small")
    rec = (oid, codec.encode_record(oid, "blob", payload, codec.COMP_ZSTD, 0, 5))
    _refused(tmp_path, dst, _pack([rec]), "frame declares")


def test_absurd_lengths(tmp_path, dst, good):
    head_len = struct.unpack_from("<I", good, 12)[0]
    assert 0 < head_len < len(good)  # the field we overwrite really is the header length
    data = good[:12] + struct.pack("<I", 1 << 31) + good[16:]
    _refused(tmp_path, dst, _retrailer(data), "absurd header length 2147483648;")
    _refused(tmp_path, dst, _pack([], objects=10**12),
             "declares 1000000000000 objects; the file has room for at most 0;")
    rec = _record("event", _event())
    _refused(tmp_path, dst, _pack([rec], objects=3),
             "declares 3 objects; the file has room for at most 2;")
    oid, raw = rec
    # a record whose stored length runs past the end of the file
    bad = raw[:16] + struct.pack("<I", 1 << 30) + raw[20:]  # the stored-length field
    _refused(tmp_path, dst, _pack([(oid, bad)]),
             r"bad object record: truncated record payload at offset \d+;")
    # a record that declares 2 GiB once inflated: refused before anything is allocated
    bomb = raw[:12] + struct.pack("<I", 1 << 31) + raw[16:]  # the raw-length field
    _refused(tmp_path, dst, _pack([(oid, bomb)]),
             f"object {oid} declares 2147483648 bytes, over the 268435456-byte limit")


def test_duplicate_objects(tmp_path, dst):
    rec = _record("event", _event())
    _refused(tmp_path, dst, _pack([rec, rec]), "duplicate object")


def test_missing_parent(tmp_path, dst):
    ghost = "e" * 64
    child = _record("event", _event(parents=[ghost]))
    _refused(tmp_path, dst, _pack([child], refs={"refs/sessions/x/main": child[0]}),
             "missing object")
    # and a ref naming an object that is nowhere
    _refused(tmp_path, dst, _pack([], refs={"refs/sessions/x/main": ghost}), "does not carry")


@pytest.mark.parametrize("name", ["refs/sessions/../../evil", "/etc/passwd", "refs/a\x01b",
                                  "HEAD", "refs/x/.hidden", "refs/a b", "config.json",
                                  "refs/sessions/x/main.lock"])
def test_bad_ref_names(tmp_path, dst, name):
    rec = _record("event", _event())
    _refused(tmp_path, dst, _pack([rec], refs={name: rec[0]}), "ref name|not under refs")


def test_ref_to_a_non_event(tmp_path, dst):
    rec = _record("blob", b"hello")
    _refused(tmp_path, dst, _pack([rec], refs={"refs/sessions/x/main": rec[0]}), "not an event")


def test_thin_pack_without_prerequisites(tmp_path, dst):
    base = "d" * 64
    child = _record("event", _event(parents=[base]))
    data = _pack([child], refs={"refs/sessions/x/main": child[0]}, prerequisites=[base],
                 capabilities=["thin", "zstd"])
    _refused(tmp_path, dst, data, "thin pack needs")


def test_unknown_capability_and_header_shape(tmp_path, dst):
    _refused(tmp_path, dst, _pack([], capabilities=["zstd", "teleport"]), "teleport")
    _refused(tmp_path, dst, _pack([], extra=1), "exactly the keys")
    _refused(tmp_path, dst, _pack([], refs={"refs/x": "nothex"}), "not an object id")


def test_records_out_of_order(tmp_path, dst):
    a, b = _record("blob", b"a"), _record("blob", b"b")
    recs = sorted([a, b])
    data = packfile.frame(dict(HEADER, objects=2), [recs[1][1], recs[0][1]])
    _refused(tmp_path, dst, data, "out of order")


def test_damaged_record_crc(tmp_path, dst):
    oid, raw = _record("blob", b"payload bytes")
    raw = raw[:-1] + bytes([raw[-1] ^ 1])
    _refused(tmp_path, dst, _pack([(oid, raw)]), "checksum mismatch")


def test_non_canonical_body_with_a_true_id(tmp_path, dst):
    import msgpack

    body = msgpack.packb({"b": 1, "a": 2})  # keys out of order: hashes fine, not canonical
    oid = codec.compute_id("value", body)
    rec = (oid, codec.encode_record(oid, "value", body, codec.COMP_NONE, 0, len(body)))
    _refused(tmp_path, dst, _pack([rec]), "not canonical")


def _with_refs(data: bytes, refs: dict[str, str], records=None) -> bytes:
    """The pack `data` with its refs replaced (and, if given, its records)."""
    head_len = struct.unpack_from("<I", data, 12)[0]
    header = codec.unpack_value(data[16:16 + head_len])
    body = data[16 + head_len:-32]
    if records is not None:
        header["objects"] = len(records)
        return packfile.frame(dict(header, refs=refs), [r for _, r in sorted(records)])
    return packfile.frame(dict(header, refs=refs), [body])


@pytest.fixture
def other(tmp_path):
    """A second session's pack, its session id and root event."""
    src, info = build_repo(tmp_path / "other", title="third")
    out = tmp_path / "other.pack"
    transfer.pack(src, str(out), [info["session"]])
    src.close()
    return out.read_bytes(), info


def test_session_ref_for_a_session_that_does_not_exist(tmp_path, dst, other):
    data, info = other
    ghost = "ab" * 32
    _refused(tmp_path, dst, _with_refs(data, {f"refs/sessions/{ghost}/main": info["root"]}),
             f"session {ghost[:12]}: no such session in the pack")
    _refused(tmp_path, dst, _with_refs(data, {f"refs/sessions/{ghost}/main": info["main"]}),
             "no such session")
    _refused(tmp_path, dst, _with_refs(data, {"refs/sessions/xyz/main": info["main"]}),
             "refs/sessions/<session id>/<branch>")
    # the id of an object that is not a session (the pack's blob)
    _refused(tmp_path, dst, _with_refs(data, {f"refs/sessions/{info['blob']}/main": info["main"]}),
             "a blob, not a session")


def test_session_ref_to_another_sessions_history(tmp_path, dst, other):
    data, info = other
    mine = dst.current().session  # a session the store has, but the events are not its own
    _refused(tmp_path, dst, _with_refs(data, {f"refs/sessions/{mine}/main": info["main"]}),
             f"whose history starts session {info['session'][:12]}, not session {mine[:12]}")
    # an event chain whose root is no SessionStarted
    root = _record("event", _event(text="no session"))
    child = _record("event", _event(parents=[root[0]]))
    _refused(tmp_path, dst, _pack([root, child], refs={f"refs/sessions/{mine}/main": child[0]}),
             "whose history starts no session")
    path = tmp_path / "bad.pack"
    path.write_bytes(_with_refs(data, {f"refs/sessions/{mine}/main": info["main"]}))
    with pytest.raises(BadPack, match="no such session in the pack;"):
        transfer.verify(str(path))  # a full pack is checked without a store too
    path.write_bytes(_with_refs(data, {f"refs/sessions/{info['session']}/main": info["call"]}))
    assert transfer.verify(str(path))["ok"]


def test_thin_session_ref_is_checked_against_the_store(tmp_path, dst):
    sid = dst.current().session
    tip = dst.refs.read(f"refs/sessions/{sid}/main")
    child = _record("event", _event(parents=[tip], text="more"))
    thin = dict(prerequisites=[tip], capabilities=["thin", "zstd"])
    src, other = build_repo(tmp_path / "x", title="fourth")  # a session dst does not have
    src.close()
    _refused(tmp_path, dst, _pack([child], refs={f"refs/sessions/{other['session']}/more":
                                                 child[0]}, **thin),
             "no such session in the pack or the store")
    path = tmp_path / "thin.pack"
    path.write_bytes(_pack([child], refs={f"refs/sessions/{sid}/more": child[0]}, **thin))
    res = transfer.unpack(dst, str(path))  # its history, in the store, starts this session
    assert [(u.name, u.action) for u in res.refs] == [(f"refs/sessions/{sid}/more", "create")]


def test_a_forks_branch_may_start_on_its_parent_sessions_history(tmp_path):
    src, info = build_repo(tmp_path / "src", title="forked")
    fork, _ = src.new_session(title="fork", parent_session=info["session"], checkout=False,
                              nonce="fork")
    src.refs.set_if_equals(f"refs/sessions/{fork}/from-parent", None, info["main"])
    other, _ = src.new_session(title="unrelated", checkout=False, nonce="unrelated")
    src.objects.flush()
    out = tmp_path / "fork.pack"
    transfer.pack(src, str(out), [fork])
    data = out.read_bytes()
    src.close()
    dst = Repository.init(tmp_path / "dst")
    res = transfer.unpack(dst, str(out))
    assert f"refs/sessions/{fork}/from-parent" in {u.name for u in res.refs}
    # the same history under a session that is no fork of its session is refused
    src = Repository.open(tmp_path / "src")
    transfer.pack(src, str(tmp_path / "u.pack"), [other])
    src.close()
    bad = _with_refs(data, {f"refs/sessions/{other}/x": info["main"]})
    path = tmp_path / "bad.pack"
    path.write_bytes(bad)
    with pytest.raises(BadPack, match="no such session in the pack"):
        transfer.verify(str(path))
    transfer.unpack(dst, str(tmp_path / "u.pack"))
    before = store_files(tmp_path / "dst")
    with pytest.raises(BadPack, match=f"history starts session {info['session'][:12]}"):
        transfer.unpack(dst, str(path))
    dst.objects.flush()
    assert store_files(tmp_path / "dst") == before
