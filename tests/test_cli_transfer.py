"""`ctx pack` / `ctx unpack` through the CLI: round trip, inspection, refusals and exit codes."""

from __future__ import annotations

import json
import os

import pytest

from ctxstore.transfer import packfile
from tests.clitools import Ctx, store_files
from tests.test_links import build_repo


def _src(tmp_path):
    repo, info = build_repo(tmp_path / "src")
    repo.close()
    return Ctx(tmp_path / "src"), info


def test_pack_unpack_round_trip(tmp_path):
    src, info = _src(tmp_path)
    out = str(tmp_path / "s.ctxpack")
    res = src("pack", "--all", "-o", out)
    assert res.stdout.startswith(f"Wrote {out}:")
    dst = Ctx(tmp_path / "dst")
    dst("init", str(tmp_path / "dst"))
    data = dst.json("unpack", out)
    assert {r["action"] for r in data["refs"]} == {"create"}
    assert dst.json("log", "-n", "1")[0]["id"] == info["main"]
    assert dst("unpack", out).stdout.count("unchanged") == 2


def test_pack_json_and_default_is_heads_session(tmp_path):
    src, info = _src(tmp_path)
    out = str(tmp_path / "s.pack")
    summary = src.json("pack", "-o", out)
    assert set(summary["refs"]) == {f"refs/sessions/{info['session']}/main",
                                    f"refs/sessions/{info['session']}/alt"}


def test_verify_and_list(tmp_path):
    src, info = _src(tmp_path)
    out = str(tmp_path / "s.pack")
    src("pack", info["session"], "-o", out)
    text = src("pack", "--verify", out).stdout
    assert ": ok —" in text and info["main"][:12] in text
    assert src.json("pack", "--verify", out)["ok"] is True
    listing = src.json("pack", "--list", out)
    assert info["main"] in {o["id"] for o in listing["objects"]}
    assert info["main"] in src("pack", "--list", out).stdout


def test_broken_pack_exits_12_and_changes_nothing(tmp_path):
    src, _ = _src(tmp_path)
    out = tmp_path / "s.pack"
    src("pack", "--all", "-o", str(out))
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 1
    out.write_bytes(bytes(data))
    before = store_files(tmp_path / "src")
    err = src.fails(12, "unpack", str(out))
    assert "checksum trailer" in err
    assert store_files(tmp_path / "src") == before
    src.fails(12, "pack", "--verify", str(out))


def test_non_fast_forward_exits_6_unless_forced(tmp_path):
    src, info = _src(tmp_path)
    out = str(tmp_path / "s.pack")
    src("pack", "main", "-o", out)
    dst = Ctx(tmp_path / "dst")
    dst("init", str(tmp_path / "dst"))
    dst("unpack", out)
    dst("append", "MessageAdded", "--payload", json.dumps({"role": "custom", "text": "local"}))
    before = store_files(tmp_path / "dst")
    assert "non-fast-forward" in dst.fails(6, "unpack", out)
    assert store_files(tmp_path / "dst") == before
    assert "forced" in dst("unpack", out, "--force").stdout


def test_usage_errors(tmp_path):
    src, _ = _src(tmp_path)
    src("pack", code=2)
    src("pack", "--list", str(tmp_path), code=2)  # a directory is a usage error
    assert "neither a branch nor a session" in src.fails(5, "pack", "zzzz", "-o",
                                                         str(tmp_path / "x"))


@pytest.mark.parametrize("args", [("unpack",), ("pack", "--verify"), ("pack", "--list")])
def test_missing_pack_file_exits_3(tmp_path, args):
    src, _ = _src(tmp_path)
    before = store_files(tmp_path / "src")
    missing = str(tmp_path / "missing.ctxpack")
    assert src.fails(3, *args, missing) == f"ctx: error: no such pack file: {missing}\n"
    assert store_files(tmp_path / "src") == before


def test_pack_into_a_missing_directory_exits_16(tmp_path):
    src, _ = _src(tmp_path)
    out = tmp_path / "nonexistent" / "dir" / "x.ctxpack"
    err = src.fails(16, "pack", "--all", "-o", str(out))
    assert err.startswith(f"ctx: error: cannot write {out}: No such file or directory")
    assert not (tmp_path / "nonexistent").exists()


def test_failed_pack_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    src, _ = _src(tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    (outdir / "x.ctxpack.tmp").write_bytes(b"someone else's")  # not ours: left alone
    calls = [0]
    real = packfile.codec.encode_record

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(packfile.codec, "encode_record", failing)
    err = src.fails(16, "pack", "--all", "-o", str(outdir / "x.ctxpack"))
    assert err == f"ctx: error: cannot write {outdir / 'x.ctxpack'}: No space left on device\n"
    assert calls[0] == 3 and sorted(os.listdir(outdir)) == ["x.ctxpack.tmp"]
    assert (outdir / "x.ctxpack.tmp").read_bytes() == b"someone else's"
    monkeypatch.undo()
    src("pack", "--all", "-o", str(outdir / "x.ctxpack"))
    assert sorted(os.listdir(outdir)) == ["x.ctxpack", "x.ctxpack.tmp"]
    assert oct(os.stat(outdir / "x.ctxpack").st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
