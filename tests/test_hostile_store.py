"""Damaged derived files and missing objects never make gc delete (issue 28, finding 6 and
9's store items; docs/security.md): a flipped byte in an active pack's `.pidx` is ignored and
rebuilt, never trusted; a ref naming an object the store lacks refuses gc (exit 17, naming
the ref's file); nothing acknowledged is lost."""

from __future__ import annotations

import json
import os

from ctxstore.store.pack import PIDX_SUFFIX
from tests.clitools import Ctx, store_files

IDS_START = 1040


def _store_with_partial_index(tmp_path) -> tuple[Ctx, list[str]]:
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    batch = tmp_path / "events.jsonl"
    batch.write_text("".join(json.dumps({"type": "UserPromptSubmitted", "actor": "user",
                                         "payload": {"text": f"prompt {i} " + os.urandom(450).hex()}})
                             + "\n" for i in range(300)))
    ctx("append", "--batch", str(batch))
    return ctx, [e["id"] for e in ctx.json("log")]


def _pidx(tmp_path):
    packs = tmp_path / ".ctx" / "objects" / "packs"
    found = sorted(packs.glob("*" + PIDX_SUFFIX))
    assert found, "the writer left no partial index"
    return found[0]


def test_a_flipped_byte_in_a_partial_index_is_not_trusted(tmp_path):
    ctx, ids = _store_with_partial_index(tmp_path)
    pidx = _pidx(tmp_path)
    raw = bytearray(pidx.read_bytes())
    count = (len(raw) - IDS_START - 32) // 40
    listed = [bytes(raw[IDS_START + 32 * i:IDS_START + 32 * i + 32]).hex() for i in range(count)]
    victim = ids[len(ids) // 2]
    assert victim in listed
    pos = IDS_START + 32 * listed.index(victim) + 31
    raw[pos] ^= 0x01  # one flipped bit in the id of a live event
    pidx.write_bytes(bytes(raw))
    # readers find the record all the same (the whole pack is scanned instead)
    ctx("show", victim)
    assert [e["id"] for e in ctx.json("log")] == ids
    # gc drops nothing that is live
    ctx("gc", "--prune=now")
    assert [e["id"] for e in ctx.json("log")] == ids
    ctx("fsck", "--full")


def test_a_ref_naming_a_missing_object_refuses_gc_naming_the_file(tmp_path):
    ctx, ids = _store_with_partial_index(tmp_path)
    sid = ctx.json("sessions")[0]["id"]
    ghost = "ab" * 32
    ref = tmp_path / ".ctx" / "refs" / "sessions" / sid / "ghost"
    ref.write_text(ghost + "\n")
    before = store_files(tmp_path)
    err = ctx.fails(17, "gc", "--prune=now")
    assert ghost in err and f"refs/sessions/{sid}/ghost" in err and "nothing deleted" in err
    after = store_files(tmp_path)
    assert {k: v for k, v in after.items() if not k.endswith(".lock")} == \
        {k: v for k, v in before.items() if not k.endswith(".lock")}
    os.unlink(ref)
    ctx("gc", "--prune=now")
    assert [e["id"] for e in ctx.json("log")] == ids
