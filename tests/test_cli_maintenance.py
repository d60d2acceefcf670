"""`ctx gc`, `ctx fsck`, `ctx reflog expire` through the CLI."""

from __future__ import annotations

import os

from ctxstore.objects import Event
from ctxstore.repo import Repository
from tests.clitools import Ctx, store_files
from tests.test_links import build_repo


def _repo(tmp_path, garbage: int = 20):
    repo, info = build_repo(tmp_path)
    for i in range(garbage):
        repo.objects.put_blob(os.urandom(32) + b"%d" % i)
    repo.close()
    return Ctx(tmp_path), info


def test_gc_dry_run_changes_nothing_then_gc_removes(tmp_path):
    ctx, info = _repo(tmp_path)
    before = store_files(tmp_path)
    dry = ctx.json("gc", "--prune=now", "--dry-run")
    assert dry["dry_run"] and dry["objects_removed"] >= 20
    assert store_files(tmp_path) == before
    text = ctx("gc", "--prune=now").stdout
    assert "removed" in text and "bytes" in text
    res = ctx.json("gc", "--prune=now")
    assert res["objects_removed"] == 0
    assert ctx.json("log", "-n", "1")[0]["id"] == info["main"]
    assert "objects checked, graph walked: no problems" in ctx("fsck", "--full").stdout


def test_gc_default_grace_keeps_everything(tmp_path):
    ctx, _ = _repo(tmp_path)
    assert ctx.json("gc")["objects_removed"] == 0


def test_fsck_lists_each_problem_and_exits_13(tmp_path):
    ctx, info = _repo(tmp_path, garbage=0)
    repo = Repository.open(tmp_path)
    bad = repo.objects.put_object(Event("MessageAdded", "agent", {}, (info["main"],), 42, ""))
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/bad", None, bad)
    repo.close()
    ctx("fsck")  # every record is sound: only the graph walk sees the wrong generation
    res = ctx("fsck", "--full", code=13)
    assert f"generation  {bad}" in res.stdout
    assert res.stderr == "ctx: error: fsck found 1 problem(s)\n"
    data = ctx("fsck", "--full", "--json", code=13).stdout
    assert '"kind": "generation"' in data and bad in data


def test_fsck_clean_json(tmp_path):
    ctx, _ = _repo(tmp_path, garbage=0)
    report = ctx.json("fsck", "--full")
    assert report == {"ok": True, "objects": report["objects"], "full": True, "problems": [],
                      "notes": [report["notes"][0]]}
    assert report["notes"][0].startswith("retrieval index: absent")
    assert report["objects"] > 10 and ctx.json("fsck")["objects"] == report["objects"]


def test_reflog_expire(tmp_path):
    ctx, info = _repo(tmp_path, garbage=0)
    dry = ctx.json("reflog", "expire", "--expire=now", "--dry-run")
    assert dry["expired"] > 0 and dry["dry_run"]
    ref = f"refs/sessions/{info['session']}/main"
    res = ctx.json("reflog", "expire", "--expire=now", ref)
    assert res["refs"][ref]["kept"] == 0 and res["expired"] > 0
    assert "0 entries expired" in ctx("reflog", "expire").stdout
    assert "cannot read time" in ctx.fails(10, "reflog", "expire", "--expire=soon")


def test_reflog_group_shows_by_default_and_keeps_the_old_alias(tmp_path):
    ctx, _ = _repo(tmp_path, garbage=0)
    assert ctx.json("reflog") == ctx.json("reflog", "show")
    assert ctx.json("reflog", "main")["entries"] == ctx.json("reflog", "show", "main")["entries"]
    assert "0 entries expired" in ctx("reflog-expire").stdout  # hidden alias
    assert "reflog-expire" not in ctx("--help").stdout


def test_gc_exits_7_and_deletes_nothing_while_the_store_is_open(tmp_path, monkeypatch):
    from ctxstore.store import repack

    ctx, info = _repo(tmp_path)
    monkeypatch.setattr(repack, "GC_WAIT", 0.1)
    other = Repository.open(tmp_path)
    assert info["main"] in other.objects  # a look-up: this process holds the shared gc lock
    err = ctx.fails(7, "gc", "--prune=now")
    assert err.startswith("ctx: error: gc deleted nothing: ") and "gc.lock" in err
    other.close()
    assert ctx.json("gc", "--prune=now")["objects_removed"] >= 20
    assert "no problems" in ctx("fsck", "--full").stdout
