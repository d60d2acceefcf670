"""Damage is reported, never skipped (issue 13 item 4): damaged `dicts`, ref and reflog lines raise
CorruptStore (exit 17) naming file and line; gc refuses while a source of its roots is damaged;
fsck lists every bad line; unpack tells this store's damage from a bad pack; re-importing an
unchanged file writes nothing; a damaged session object stops a re-import."""

from __future__ import annotations

import os
import shutil

import pytest

from ctxstore.errors import CorruptStore
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.repo import Repository
from ctxstore.store.pack import PACK_SUFFIX, Pack
from ctxstore.store.packstore import read_dicts_file
from ctxstore.store.repack import seal_idle
from tests.clitools import Ctx, store_files
from tests.test_links import build_repo

GC = ("gc", "--prune=now")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A store with a trained zstd dictionary (over 1000 small bodies), its session info."""
    root = tmp_path_factory.mktemp("trained")
    repo, info = build_repo(root, events=1100)
    repo.close()
    assert (root / ".ctx" / "objects" / "dicts").is_file()
    return root, info


@pytest.fixture
def store(tmp_path, trained):
    root, info = trained
    shutil.copytree(root / ".ctx", tmp_path / ".ctx")
    return tmp_path, info


def _edit(path, old: bytes, new: bytes, count: int = 1) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, count))


def _branch(root, info, name="main"):
    return root / ".ctx" / "refs" / "sessions" / info["session"] / name


def _log(root, info, name="main"):
    return root / ".ctx" / "logs" / "refs" / "sessions" / info["session"] / name


# -- dicts -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["syntax", "hex digit", "dictionary id", "no newline"])
def test_a_damaged_dicts_line_makes_gc_refuse(store, damage):
    """Issue 13's measurement: one changed hex digit in `dicts` made gc delete 2,525 of 2,527
    live objects. Now gc exits 17 with one line naming the file and line, deleting nothing."""
    root, _ = store
    dicts = root / ".ctx" / "objects" / "dicts"
    line = dicts.read_bytes()
    dict_id, zid = line.split()
    if damage == "syntax":
        dicts.write_bytes(dict_id + b" " + zid[:10] + b"g" + zid[11:] + b"\n")
    elif damage == "hex digit":  # still well-formed: names a zdict that is not stored
        dicts.write_bytes(dict_id + b" " + zid[:10] + (b"a" if zid[10:11] != b"a" else b"b")
                          + zid[11:] + b"\n")
    elif damage == "dictionary id":  # names a stored zdict of another zstd dictionary id
        dicts.write_bytes(str(int(dict_id) + 1).encode() + b" " + zid + b"\n")
    else:
        dicts.write_bytes(line.rstrip(b"\n"))
    before = store_files(root)
    err = Ctx(root).fails(17, *GC)
    assert "gc refused, nothing deleted" in err and f"{dicts}:1:" in err
    assert store_files(root) == before
    Ctx(root).fails(17, "gc", "--dry-run")
    # fsck names the line too (and every record it makes unreadable)
    problems = fsck_repo.check(Repository.open(root)).problems
    assert any(p.kind == "dicts" and f"{dicts}:1:" in p.message for p in problems)


def test_dicts_parser_names_every_damaged_line(tmp_path):
    path = tmp_path / "dicts"
    good = "7 " + "ab" * 32
    path.write_text(f"{good}\nnot a line\n\n8 {'cd' * 31}\n")
    entries, problems = read_dicts_file(str(path))
    assert entries == {7: "ab" * 32}
    assert [p.details["line"] for p in problems] == [2, 3, 4]
    assert all(isinstance(p, CorruptStore) and p.exit_code == 17 for p in problems)


def test_a_clean_store_still_collects(store):
    """The strict checks refuse nothing on an undamaged store with a trained dictionary: gc
    removes exactly the unreachable objects planted here, keeps every reachable one, and the
    store stays fsck-clean."""
    root, info = store
    repo = Repository.open(root)
    garbage = [repo.objects.put_blob(os.urandom(48) + b"%d" % i) for i in range(7)]
    repo.close()
    res = Ctx(root).json(*GC)
    assert res["objects_removed"] == len(garbage)
    repo = Repository.open(root)
    try:
        assert not any(g in repo.objects for g in garbage)
        assert all(info[k] in repo.objects for k in ("prompt", "call", "result", "blob",
                                                     "artifact"))
        assert fsck_repo.check(repo).problems == []
    finally:
        repo.close()


# -- refs and reflogs ------------------------------------------------------------------------------
def test_a_damaged_ref_file_raises_and_gc_refuses(store):
    root, info = store
    ref = _branch(root, info, "alt")
    ref.write_text("not an id\n")
    repo = Repository.open(root)
    with pytest.raises(CorruptStore, match=f"{ref}:1: ref .* holds 'not an id'"):
        list(repo.refs.iter_refs("refs/"))
    repo.close()
    before = store_files(root)
    err = Ctx(root).fails(17, *GC)
    assert f"{ref}:1:" in err
    assert store_files(root) == before
    problems = fsck_repo.check(Repository.open(root)).problems
    assert [p.kind for p in problems if str(ref) in p.message] == ["ref"]


def test_a_damaged_reflog_line_raises_and_gc_refuses(store):
    root, info = store
    log = _log(root, info)
    lines = log.read_bytes().split(b"\n")
    assert len(lines) >= 3
    lines[1] = lines[1].replace(b" ", b"", 1)  # line 2: old and new ids run together
    log.write_bytes(b"\n".join(lines))
    repo = Repository.open(root)
    with pytest.raises(CorruptStore, match=f"{log}:2: damaged reflog line"):
        repo.refs.reflog(f"refs/sessions/{info['session']}/main")
    repo.close()
    before = store_files(root)
    err = Ctx(root).fails(17, *GC)
    assert f"{log}:2: damaged reflog line" in err
    assert store_files(root) == before
    Ctx(root).fails(17, "reflog", "expire", "--expire=now")  # nothing rewritten either
    assert store_files(root) == before


def test_fsck_reports_every_bad_reflog_line(store):
    root, info = store
    log = _log(root, info)
    good = log.read_bytes()
    log.write_bytes(good + b"garbage\n" + b"\xff\xfe not utf-8\n" + good.split(b"\n")[0])
    n = good.count(b"\n")
    report = fsck_repo.check(Repository.open(root))
    bad = [p.message for p in report.problems if p.kind == "reflog"]
    assert [m.split(": damaged")[0] for m in bad] == [f"{log}:{n + 1}", f"{log}:{n + 2}",
                                                      f"{log}:{n + 3}"]
    assert "no newline at the end" in bad[-1]
    out = Ctx(root)("fsck", code=13).stdout
    assert f"{log}:{n + 1}: damaged reflog line 'garbage'" in out


# -- unpack: a bad pack (12) is not a damaged store (17) -------------------------------------------
def _damage_record(root, obj_id: str) -> None:
    """Flip a payload byte of one stored record (sealing active packs first to find it)."""
    packs = root / ".ctx" / "objects" / "packs"
    seal_idle(str(packs))
    for name in os.listdir(packs):
        if name.endswith(PACK_SUFFIX):
            p = Pack(str(packs / name), sealed=True)
            off = p.index.find(bytes.fromhex(obj_id))
            p.close()
            if off >= 0:
                data = bytearray((packs / name).read_bytes())
                data[off + 60] ^= 0xFF
                (packs / name).write_bytes(bytes(data))
                return
    raise AssertionError("record not found")


def test_unpack_tells_local_damage_from_a_bad_pack(tmp_path):
    from ctxstore.porcelain import transfer

    src, info = build_repo(tmp_path / "src")
    base = str(tmp_path / "base.pack")
    transfer.pack(src, base, ["alt"])
    thin = str(tmp_path / "thin.pack")
    transfer.pack(src, thin, ["main"], since=info["prompt"])
    src.close()
    dst = Ctx(tmp_path / "dst")
    dst("init", str(tmp_path / "dst"))
    dst("unpack", base)
    # the thin pack's base history is this store's: damage it here
    _damage_record(tmp_path / "dst", info["prompt"])
    before = store_files(tmp_path / "dst")
    err = dst.fails(17, "unpack", thin)
    assert "this store is damaged, not the pack" in err and info["prompt"] in err
    assert store_files(tmp_path / "dst") == before
    # the same pack, itself damaged, is a bad pack
    data = bytearray(open(thin, "rb").read())
    data[len(data) // 2] ^= 1
    open(thin, "wb").write(bytes(data))
    assert "nothing was imported" in dst.fails(12, "unpack", thin)


# -- import ----------------------------------------------------------------------------------------
def _transcript(tmp_path):
    from tests.corpus import require_corpus

    corpus = require_corpus()  # .../corpus/sessions
    return corpus / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl"


def test_reimport_of_an_unchanged_file_writes_nothing(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    src = _transcript(tmp_path)
    ctx("import", str(src))
    before = store_files(tmp_path)
    objects = ctx.json("fsck")["objects"]
    for _ in range(2):
        ctx("import", str(src))
    assert store_files(tmp_path) == before  # byte-identical: no duplicate Session record
    assert ctx.json("fsck")["objects"] == objects


def test_reimport_with_a_damaged_session_object_fails_clearly(tmp_path):
    """A subagent transcript is linked to its parent session by reading every session's origin;
    a damaged session object used to be skipped, and the subagent silently became a new,
    unlinked (duplicate) session. Now the import stops with the damaged object's error."""
    from tests.corpus import require_corpus

    folder = require_corpus() / "claude-code" / \
        "ccl_worktrees-agent-team_subagents-dir_v2.1.114"
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    ctx("import", str(folder))
    repo = Repository.open(tmp_path)
    sid = next(s for s in repo.session_ids() if repo.session(s).kind == "main")
    repo.close()
    _damage_record(tmp_path, sid)
    before = store_files(tmp_path)
    (agent,) = [p for p in folder.rglob("agent-a36efb2a1231c41e2.jsonl")]
    err = ctx.fails(8, "import", str(agent))  # re-imported alone: its parent is looked up
    assert f"session {sid} cannot be read" in err
    assert store_files(tmp_path) == before
