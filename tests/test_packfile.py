"""Portable packs: round trip into a fresh store, determinism, thin packs, ref moves."""

from __future__ import annotations

import pytest

from ctxstore.errors import BadPack, RefConflict
from ctxstore.objects import links
from ctxstore.porcelain import transfer
from ctxstore.repo import Repository
from ctxstore.transfer import packfile
from tests.test_links import build_repo


def _all_refs(repo):
    return dict(repo.refs.iter_refs("refs/"))


def test_round_trip_gives_identical_ids_and_refs(tmp_path):
    src, info = build_repo(tmp_path / "a")
    out = str(tmp_path / "s.ctxpack")
    summary = transfer.pack(src, out, all_refs=True)
    live = links.reachable(src.objects, _all_refs(src).values())
    assert summary.objects >= len(live)
    dst = Repository.init(tmp_path / "b")
    result = transfer.unpack(dst, out)
    assert _all_refs(dst) == _all_refs(src)
    assert {u.action for u in result.refs} == {"create"}
    for obj_id in live:
        assert dst.objects.get_raw(obj_id) == src.objects.get_raw(obj_id)
    assert dst.current().ref == f"refs/sessions/{info['session']}/main"
    # importing again changes nothing
    again = transfer.unpack(dst, out)
    assert again.new_objects == 0 and {u.action for u in again.refs} == {"unchanged"}


def test_pack_is_deterministic(tmp_path):
    src, _ = build_repo(tmp_path / "a", events=400)
    a, b = str(tmp_path / "1.pack"), str(tmp_path / "2.pack")
    transfer.pack(src, a, all_refs=True)
    transfer.pack(src, b, all_refs=True)
    assert open(a, "rb").read() == open(b, "rb").read()
    # a copy of the store in another place (other packs, other order) packs to the same bytes
    dst = Repository.init(tmp_path / "c")
    transfer.unpack(dst, a)
    c = str(tmp_path / "3.pack")
    transfer.pack(dst, c, all_refs=True)
    assert open(a, "rb").read() == open(c, "rb").read()


def test_dictionary_is_carried_when_trained(tmp_path):
    src, _ = build_repo(tmp_path / "a", events=600)
    out = str(tmp_path / "d.pack")
    summary = transfer.pack(src, out, all_refs=True)
    assert summary.dicts and "zstd-dict" in transfer.listing(out)["capabilities"]
    dst = Repository.init(tmp_path / "b")
    transfer.unpack(dst, out)
    assert _all_refs(dst) == _all_refs(src)


def test_pack_of_one_session_by_id_and_by_branch(tmp_path):
    src, info = build_repo(tmp_path / "a")
    other, _ = src.new_session(title="other", nonce="other", checkout=False)
    out = str(tmp_path / "one.pack")
    transfer.pack(src, out, [info["session"][:10]])
    refs = transfer.listing(out)["refs"]
    assert set(refs) == {f"refs/sessions/{info['session']}/main",
                         f"refs/sessions/{info['session']}/alt"}
    transfer.pack(src, out, ["alt"])
    assert set(transfer.listing(out)["refs"]) == {f"refs/sessions/{info['session']}/alt"}


def test_thin_pack_needs_its_prerequisite(tmp_path):
    src, info = build_repo(tmp_path / "a")
    base = str(tmp_path / "base.pack")
    transfer.pack(src, base, ["alt"])
    thin = str(tmp_path / "thin.pack")
    summary = transfer.pack(src, thin, ["main"], since=info["prompt"])
    assert summary.prerequisites == [info["prompt"]]
    full = transfer.pack(src, str(tmp_path / "full.pack"), ["main"])
    assert summary.objects < full.objects
    dst = Repository.init(tmp_path / "b")
    with pytest.raises(BadPack, match="thin pack needs"):
        transfer.unpack(dst, thin)
    transfer.unpack(dst, base)
    transfer.unpack(dst, thin)
    assert dst.refs.read(f"refs/sessions/{info['session']}/main") == info["main"]
    assert transfer.verify(thin)["prerequisites"] == [info["prompt"]]


def test_non_fast_forward_is_refused_unless_forced(tmp_path):
    src, info = build_repo(tmp_path / "a")
    out = str(tmp_path / "s.pack")
    transfer.pack(src, out, ["main"])
    dst = Repository.init(tmp_path / "b")
    transfer.unpack(dst, out)
    ref = f"refs/sessions/{info['session']}/main"
    # the destination moves main to a side line that the pack's tip does not descend from
    with dst.transaction(ref) as tx:
        tx.append("MessageAdded", "agent", {"role": "custom", "text": "local"})
    local = dst.refs.read(ref)
    with pytest.raises(RefConflict, match="non-fast-forward"):
        transfer.unpack(dst, out)
    assert dst.refs.read(ref) == local
    res = transfer.unpack(dst, out, force=True)
    assert dst.refs.read(ref) == info["main"] and res.refs[0].action == "forced"


def test_fast_forward(tmp_path):
    src, info = build_repo(tmp_path / "a")
    ref = f"refs/sessions/{info['session']}/main"
    old = str(tmp_path / "old.pack")
    transfer.pack(src, old, ["main"])
    with src.transaction(ref) as tx:
        tx.append("MessageAdded", "agent", {"role": "custom", "text": "more"})
    new = str(tmp_path / "new.pack")
    transfer.pack(src, new, ["main"])
    dst = Repository.init(tmp_path / "b")
    transfer.unpack(dst, old)
    res = transfer.unpack(dst, new)
    assert res.refs[0].action == "fast-forward" and dst.refs.read(ref) == src.refs.read(ref)
    assert [e.message for e in dst.refs.reflog(ref)][-1].startswith("unpack new.pack")


def test_list_and_verify_do_not_need_a_store(tmp_path):
    src, info = build_repo(tmp_path / "a")
    out = str(tmp_path / "s.pack")
    summary = transfer.pack(src, out, all_refs=True)
    listing = transfer.listing(out)
    assert len(listing["objects"]) == summary.objects
    assert [o["id"] for o in listing["objects"]] == sorted(o["id"] for o in listing["objects"])
    report = transfer.verify(out)
    assert report["ok"] and report["objects"] == summary.objects and report["external"] == 0
    assert report["checksum"] == summary.checksum


def test_frame_helper_round_trips_an_empty_pack(tmp_path):
    path = tmp_path / "empty.pack"
    path.write_bytes(packfile.frame({"capabilities": ["zstd"], "dicts": [], "objects": 0,
                                     "prerequisites": [], "refs": {}}, []))
    assert transfer.verify(str(path))["objects"] == 0
