"""A full disk and damaged store files (issue 28, item 9; docs/security.md): one line naming
the file, a non-zero exit, nothing acknowledged lost — never a traceback."""

from __future__ import annotations

import errno
import os

from ctxstore.store.pack import HEADER_SIZE
from ctxstore.store.packindex import build_index
from tests.clitools import Ctx


def _is_pack(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(".pack")
    except OSError:
        return False


def test_a_full_disk_is_one_line_naming_the_pack(tmp_path, monkeypatch):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "kept"}')
    before = [e["id"] for e in ctx.json("log")]
    real = os.write

    def full(fd, data):
        if _is_pack(fd):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    err = ctx.fails(16, "append", "UserPromptSubmitted", "--payload", '{"text": "lost"}')
    assert "No space left on device" in err and ".pack" in err and "Traceback" not in err
    monkeypatch.setattr(os, "write", real)
    assert [e["id"] for e in ctx.json("log")] == before  # nothing acknowledged lost
    ctx("fsck", "--full")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "after"}')
    ctx("fsck", "--full")


def test_an_empty_sealed_pack_is_reported_not_a_traceback(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    packs = tmp_path / ".ctx" / "objects" / "packs"
    name = packs / ("pack-" + "cd" * 20)
    (packs / (name.name + ".pack")).write_bytes(b"")
    (packs / (name.name + ".idx")).write_bytes(build_index([], HEADER_SIZE))
    res = ctx("fsck", code=13)
    assert "shorter than its header" in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    ctx("gc", "--prune=now")  # the damaged pack is kept whole, the rest collected
    ctx.json("log")


GHOST = "ab" * 32


def _store(tmp_path) -> tuple[Ctx, str]:
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "x"}')
    return ctx, ctx.json("sessions")[0]["id"]


def test_a_damaged_op_head_is_an_fsck_problem(tmp_path):
    ctx, _ = _store(tmp_path)
    (tmp_path / ".ctx" / "op-head").write_text("garbage\n")
    res = ctx("fsck", code=13)
    assert "op-head" in res.stdout and "garbage" in res.stdout
    (tmp_path / ".ctx" / "op-head").write_text(GHOST + "\n")
    res = ctx("fsck", code=13)
    assert "op-head" in res.stdout and GHOST in res.stdout


def test_a_head_naming_a_missing_object_names_its_file(tmp_path):
    ctx, sid = _store(tmp_path)
    head = tmp_path / ".ctx" / "HEAD"
    head.write_text(GHOST + "\n")
    for args in (("log",), ("status",), ("show", "HEAD~1")):
        err = ctx.fails(17, *args)
        assert str(head) in err and GHOST in err
    head.write_text(f"ref: refs/sessions/{sid}/main\n")
    branch = tmp_path / ".ctx" / "refs" / "sessions" / sid / "main"
    branch.write_text(GHOST + "\n")
    err = ctx.fails(17, "log")
    assert str(branch) in err


def test_a_session_meta_ref_naming_a_missing_object_names_its_file(tmp_path):
    ctx, sid = _store(tmp_path)
    ctx("session", "rename", sid, "renamed")
    meta = tmp_path / ".ctx" / "refs" / "session-meta" / sid
    assert meta.is_file()
    meta.write_text(GHOST + "\n")
    err = ctx.fails(17, "sessions")
    assert str(meta) in err and GHOST in err
