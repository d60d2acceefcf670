"""Content-defined chunking of large artifacts: ids of the whole, sharing, streaming, fallback."""

from __future__ import annotations

import io
import random

import pytest

from ctxstore import chunking, codec
from ctxstore.errors import CorruptObject, InvalidInput
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.objects import Artifact, Event, links
from ctxstore.porcelain import transfer
from ctxstore.repo import Repository
from ctxstore.store import MemoryStore

SMALL = chunking.ChunkParams(threshold=64 << 10, min=4 << 10, avg=16 << 10, max=64 << 10)


def _text(n: int, seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"log", b"line", b"error", b"ok", b"\n"]
    out = bytearray()
    while len(out) < n:
        out += rnd.choice(words) + b" " + str(rnd.getrandbits(20)).encode()
    return bytes(out[:n])


def _chunk_ids(store, cid):
    if store.type_of(cid) != "chunks":
        return {cid}
    return {c[0] for c in store.get(cid)["chunks"]}


def test_small_content_is_one_blob():
    store = MemoryStore()
    cid = chunking.put_large(store, b"hello", SMALL)
    assert store.type_of(cid) == "blob" and cid == codec.compute_id("blob", b"hello")
    assert chunking.read_content(store, cid) == b"hello"


def test_large_content_is_chunked_and_reads_back():
    store = MemoryStore()
    data = _text(400 << 10)
    cid = chunking.put_large(store, data, SMALL)
    assert store.type_of(cid) == "chunks"
    manifest = store.get(cid)
    assert manifest["size"] == len(data)
    assert manifest["id_of_whole"] == codec.compute_id("blob", data)
    assert len(manifest["chunks"]) > 5
    assert chunking.read_content(store, cid) == data
    assert chunking.content_id(store, cid) == codec.compute_id("blob", data)
    assert chunking.content_size(store, cid) == len(data)
    with chunking.open_content(store, cid) as f:
        assert f.read(10) == data[:10] and f.read() == data[10:]


def test_stream_input_matches_bytes_input(tmp_path):
    data = _text(300 << 10, seed=2)
    a, b = MemoryStore(), MemoryStore()
    path = tmp_path / "f.log"
    path.write_bytes(data)
    with open(path, "rb") as f:
        from_file = chunking.put_large(a, f, SMALL)
    assert from_file == chunking.put_large(b, data, SMALL)
    assert chunking.put_large(MemoryStore(), io.BytesIO(data), SMALL) == from_file


def test_growing_log_and_edited_file_share_chunks():
    store = MemoryStore()
    log = _text(600 << 10, seed=3)
    v1 = chunking.put_large(store, log[:300 << 10], SMALL)
    v2 = chunking.put_large(store, log, SMALL)
    c1, c2 = _chunk_ids(store, v1), _chunk_ids(store, v2)
    assert len(c1 & c2) >= len(c1) - 2  # all but the tail chunk(s) of v1 are reused
    edited = bytearray(log)
    edited[200_000:200_010] = b"EDITEDEDIT"
    v3 = chunking.put_large(store, bytes(edited), SMALL)
    c3 = _chunk_ids(store, v3)
    assert len(c2 - c3) <= 3


def test_fallback_without_fastcdc(monkeypatch):
    monkeypatch.setattr(chunking, "FastCDC", None)
    store = MemoryStore()
    data = _text(200 << 10)
    cid = chunking.put_large(store, data, SMALL)
    assert store.type_of(cid) == "blob" and chunking.read_content(store, cid) == data
    assert not chunking.available()


def test_params_from_config_and_validation():
    assert chunking.ChunkParams.from_config({}) == chunking.ChunkParams()
    p = chunking.ChunkParams.from_config({"chunking": {"threshold": 10, "min": 64, "avg": 256,
                                                       "max": 1024}})
    assert p.threshold == 10
    with pytest.raises(InvalidInput):
        chunking.ChunkParams.from_config({"chunking": {"min": 10 << 20, "avg": 1, "max": 2}})


def test_damaged_manifest_and_wrong_type():
    store = MemoryStore()
    bad = store.put("chunks", {"size": 5, "id_of_whole": "x", "chunks": [["a" * 64, 4]]})
    with pytest.raises(CorruptObject, match="malformed"):
        chunking.read_content(store, bad)
    ev = store.put_object(Event("MessageAdded"))
    with pytest.raises(CorruptObject, match="not content"):
        chunking.read_content(store, ev)


def test_chunked_artifact_is_reachable_packed_and_checked(tmp_path):
    repo = Repository.init(tmp_path / "a", chunking={"threshold": 64 << 10, "min": 4 << 10,
                                                     "avg": 16 << 10, "max": 64 << 10})
    data = _text(500 << 10, seed=5)
    cid, size = chunking.put_artifact_content(repo, data)
    assert size == len(data) and repo.objects.type_of(cid) == "chunks"
    art = repo.objects.put_object(Artifact("command_log", cid, size))
    sid, _ = repo.new_session(title="c", nonce="c")
    with repo.transaction() as tx:
        tx.append("FileRead", "tool", {"path": "big.log"}, {"artifact_id": art})
    live = links.reachable(repo.objects, [tx.tip])
    assert cid in live and _chunk_ids(repo.objects, cid) <= live
    assert fsck_repo.check(repo, full=True).problems == []
    out = str(tmp_path / "c.pack")
    transfer.pack(repo, out, [sid])
    dst = Repository.init(tmp_path / "b")
    transfer.unpack(dst, out)
    assert chunking.read_content(dst.objects, cid) == data
