"""The repository transaction: the journal format, atomic multi-ref moves under kill -9,
rebase of racing appends, conflicts that write nothing, and the operation log (undo, restore)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ctxstore import codec
from ctxstore.errors import RefConflict
from ctxstore.porcelain import branches as pb
from ctxstore.porcelain import sessions as ps
from ctxstore.refs import HEAD, branch_ref
from ctxstore.repo import Repository, operations
from ctxstore.repo.transaction import Journal, Move

ROOT = Path(__file__).resolve().parent.parent


def _all_refs(repo: Repository) -> dict:
    out = dict(repo.refs.iter_refs("refs/"))
    out[HEAD] = repo.refs.read_head_value()
    return out


def _repo(tmp_path, durability: str = "never") -> Repository:
    return Repository.init(tmp_path, durability=durability)


# ---------------------------------------------------------------------------------------------
# the on-disk form: docs/format.md
# ---------------------------------------------------------------------------------------------

def test_journal_golden_vector_matches_the_docs():
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    section = text.split("**Journal.**", 1)[1]
    doc_line = re.search(r"```\n(\{.*\})\n```", section).group(1)
    sid = "5e671f4fe10844dc1c0036e3042781ff3c86c34e2e154505fb2a52caf6b977d6"
    root = "99db66a954598bfa01fa2ca8c843ca04243f1ac1d196f1a7a94585ddb31a8ea6"
    op = codec.encode_object("operation", {
        "parents": [], "time": "2026-01-01T00:00:00.000Z", "user": "ada", "host": "box",
        "command": "ctx new", "description": "new session",
        "changes": [[f"refs/sessions/{sid}/main", None, root]]})[0]
    journal = Journal(op, 1767225600000, "ctx", (
        Move(f"refs/sessions/{sid}/main", None, root, "session: created"),
        Move(HEAD, None, f"ref: refs/sessions/{sid}/main", f"checkout: new session {sid[:12]}")))
    assert journal.encode() == (doc_line + "\n").encode()
    assert Journal.decode(journal.encode()) == journal


def test_a_damaged_journal_is_corrupt_store_naming_it(tmp_path):
    repo = _repo(tmp_path)
    repo.close()
    (tmp_path / ".ctx" / "journal").write_text("{not json")
    from ctxstore.errors import CorruptStore

    with pytest.raises(CorruptStore, match="journal"):
        Repository.open(tmp_path)


# ---------------------------------------------------------------------------------------------
# one operation per transaction; atomic multi-ref moves
# ---------------------------------------------------------------------------------------------

def test_every_transaction_is_one_operation_with_its_changes(tmp_path):
    repo = _repo(tmp_path)
    sid, root = repo.new_session(title="t")
    main = branch_ref(sid, "main")
    lo = next(operations.walk(repo))
    assert lo.op.parents == () and lo.op.changes == (
        (main, None, root), (HEAD, None, f"ref: {main}"))
    eid = ps.append(repo, "UserPromptSubmitted", "user", {"text": "hi"})
    lo2 = next(operations.walk(repo))
    assert lo2.op.parents == (lo.id,) and lo2.op.changes == ((main, root, eid),)
    assert repo.refs.reflog(main)[-1].new == eid and repo.refs.reflog(HEAD)[-1].new == eid
    assert not (tmp_path / ".ctx" / "journal").exists()


def test_a_transaction_that_moves_nothing_records_nothing(tmp_path):
    repo = _repo(tmp_path)
    repo.new_session(title="t")
    head = operations.op_head(repo)
    with repo.transaction(message="nothing"):
        pass
    assert operations.op_head(repo) == head


KILLER = r"""
import os, signal, sys
from ctxstore.repo import Repository
from ctxstore.refs import FileRefs
repo = Repository.open(sys.argv[1])
kill_at, count = int(sys.argv[2]), [0]
real = FileRefs.write_ref
def write_ref(self, name, value, fsync):
    if count[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    count[0] += 1
    return real(self, name, value, fsync)
FileRefs.write_ref = write_ref
real_journal = FileRefs.write_journal
def write_journal(self, data, fsync=True):
    if kill_at == -1:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_journal(self, data, fsync)
FileRefs.write_journal = write_journal
sid = sys.argv[3]
with repo.transaction(message="five refs") as tx:
    tip = repo.refs.read(f"refs/sessions/{sid}/main")
    for i in range(5):
        tx.create_ref(f"refs/sessions/{sid}/b{i}", tip)
    tx.set_head(ref=f"refs/sessions/{sid}/b0")
print("done")
"""


@pytest.mark.parametrize("kill_at", [-1, 0, 1, 2, 3, 4, 5])
def test_kill_9_during_apply_leaves_all_moves_or_none(tmp_path, kill_at):
    repo = _repo(tmp_path)
    sid, root = repo.new_session(title="t")
    before = _all_refs(repo)
    repo.close()
    proc = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path / ".ctx"), str(kill_at), sid],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    repo = Repository.open(tmp_path)  # rolls an interrupted journal forward
    after = _all_refs(repo)
    if kill_at == -1:  # killed before the commit point: nothing moved
        assert after == before
        return
    assert all(after.get(f"refs/sessions/{sid}/b{i}") == root for i in range(5))
    assert after[HEAD] == f"ref: refs/sessions/{sid}/b0"
    lo = next(operations.walk(repo))
    assert len(lo.op.changes) == 6 and operations.op_head(repo) == lo.id
    for i in range(5):  # exactly one reflog line per moved ref, even when replayed
        assert len(repo.refs.reflog(f"refs/sessions/{sid}/b{i}")) == 1
    assert not (tmp_path / ".ctx" / "journal").exists()


# ---------------------------------------------------------------------------------------------
# races: appends rebase, everything else fails whole
# ---------------------------------------------------------------------------------------------

def test_racing_appends_rebase_onto_the_new_tip(tmp_path):
    repo = _repo(tmp_path)
    sid, root = repo.new_session(title="t")
    main = branch_ref(sid, "main")
    tx = repo.transaction(main, message="slow")
    a = tx.append("UserPromptSubmitted", "user", {"text": "first writer"})
    b = ps.append(repo, "UserPromptSubmitted", "user", {"text": "second writer"})
    tx.commit()
    tip = repo.refs.read(main)
    ev = repo.graph.event(tip)
    assert tip != a and ev.parents == (b,) and ev.payload["text"] == "first writer"
    assert ev.generation == 3


def test_a_reset_that_lost_the_race_writes_nothing(tmp_path):
    repo = _repo(tmp_path)
    sid, root = repo.new_session(title="t")
    main = branch_ref(sid, "main")
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "a"})
    tx = repo.transaction(message="reset")
    tx.set_ref(main, root)
    tx.create_ref(branch_ref(sid, "other"), root)
    moved = ps.append(repo, "UserPromptSubmitted", "user", {"text": "b"})
    before, head = _all_refs(repo), operations.op_head(repo)
    with pytest.raises(RefConflict, match="expected"):
        tx.commit()
    assert _all_refs(repo) == before and operations.op_head(repo) == head
    assert repo.refs.read(main) == moved


def test_gc_lock_is_released_between_transactions(tmp_path):
    repo = _repo(tmp_path)
    repo.new_session(title="t")
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "a"})
    assert not repo.objects.gc_lock.held  # a live agent does not keep gc out
    with repo.transaction() as tx:
        tx.append("UserPromptSubmitted", "user", {"text": "b"})
        assert repo.objects.gc_lock.held
    assert not repo.objects.gc_lock.held


# ---------------------------------------------------------------------------------------------
# undo and restore
# ---------------------------------------------------------------------------------------------

def test_undo_reverts_the_newest_operation_and_undo_again_redoes(tmp_path):
    repo = _repo(tmp_path)
    sid, _ = repo.new_session(title="t")
    for t in "abc":
        ps.append(repo, "UserPromptSubmitted", "user", {"text": t})
    before = _all_refs(repo)
    pb.fork(repo, "side", "HEAD~2")
    after_fork = _all_refs(repo)
    pb.reset(repo, "HEAD~0")  # no move: same tip, no operation
    operations.undo(repo)
    assert _all_refs(repo) == before
    operations.undo(repo)
    assert _all_refs(repo) == after_fork


def test_op_restore_puts_every_ref_back_as_after_that_operation(tmp_path):
    repo = _repo(tmp_path)
    sid, _ = repo.new_session(title="t")
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "a"})
    target = operations.op_head(repo)
    snapshot = _all_refs(repo)
    pb.fork(repo, "x")
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "b"})
    pb.checkout(repo, "main")
    pb.delete_branch(repo, "x")
    repo.new_session(title="another")
    op, diff = operations.restore(repo, target)
    assert _all_refs(repo) == snapshot and op is not None and diff
    operations.undo(repo)  # the restore is an operation too
    assert branch_ref(sid, "x") not in _all_refs(repo) and len(repo.session_ids()) == 2


def test_undo_of_a_ref_moved_outside_the_log_is_a_conflict(tmp_path):
    repo = _repo(tmp_path)
    sid, root = repo.new_session(title="t")
    eid = ps.append(repo, "UserPromptSubmitted", "user", {"text": "a"})
    main = branch_ref(sid, "main")
    with repo.transaction() as tx:
        other = tx.event("UserPromptSubmitted", "user", {"text": "b"}, (root,))
    repo.objects.flush()
    repo.refs.set_if_equals(main, eid, other)  # a writer bypassing the transaction
    head = operations.op_head(repo)
    with pytest.raises(RefConflict):
        operations.undo(repo)
    assert operations.op_head(repo) == head and repo.refs.read(main) == other


def test_undo_of_an_import_removes_its_sessions(tmp_path):
    from ctxstore.importers.porcelain import import_paths

    from .corpus import require_corpus

    corpus = require_corpus()
    repo = _repo(tmp_path)
    before = _all_refs(repo)
    import_paths(repo, [corpus / "claude-code" / "ccl_worktrees-agent-team_subagents-dir_v2.1.114"])
    assert len(repo.session_ids()) > 1
    operations.undo(repo)
    assert _all_refs(repo) == before and repo.session_ids() == []


def test_cli_op_log_undo_and_restore(tmp_path):
    from tests.clitools import Ctx

    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "a"}')
    log = ctx.json("op", "log")
    assert [o["command"] for o in log["operations"]] == [
        "ctx append UserPromptSubmitted --payload '{\"text\": \"a\"}'", "ctx new --title t"]
    assert log["removed_by_gc"] is None
    shown = ctx.json("op", "show", "@")
    assert shown["id"] == log["head"] and shown["changes"][0]["ref"].endswith("/main")
    out = ctx("undo").stdout
    assert out.startswith("Undid operation ") and "append UserPromptSubmitted" in out
    assert len(ctx.json("log")) == 1
    ctx("undo")
    assert len(ctx.json("log")) == 2
    res = ctx.json("op", "restore", log["operations"][1]["id"][:8])
    assert res["operation"] and len(ctx.json("log")) == 1
    assert "no operation" in ctx.fails(5, "op", "show", "ffff")
    assert "4 hex digits" in ctx.fails(5, "op", "restore", "zz")


def test_undo_of_reflog_expire_puts_the_entries_back(tmp_path):
    from ctxstore.maintenance import gc as pm

    repo = _repo(tmp_path)
    sid, _ = repo.new_session(title="t")
    ps.append(repo, "UserPromptSubmitted", "user", {"text": "a"})
    main = branch_ref(sid, "main")
    before = repo.refs.reflog(main)
    res = pm.reflog_expire(repo, expire="now", expire_unreachable="now")
    assert res.expired >= len(before) and repo.refs.reflog(main) == []
    operations.undo(repo)
    assert repo.refs.reflog(main) == before
    operations.undo(repo)  # redo: expired again
    assert repo.refs.reflog(main) == []


def test_generations_of_events_past_the_cache_are_read_back_from_the_store(tmp_path,
                                                                          monkeypatch):
    """A long transaction (an import) keeps only its newest events' generations at hand; an
    older one is read back from the store, buffered writes included."""
    from ctxstore.repo import transaction

    monkeypatch.setattr(transaction, "GENERATION_CACHE", 8)
    repo = Repository.init(tmp_path)
    repo.new_session(title="long")
    with repo.transaction(message="long") as tx:
        ids = [tx.append("x.test.Note", "agent", {"i": i}) for i in range(40)]
        assert len(tx._gen) <= 8
        assert [tx.generation(e) for e in ids] == list(range(2, 42))
        tx.append("x.test.Note", "agent", {"i": 40}, extra_parents=(ids[0],))
    assert repo.graph.generation(repo.refs.read(repo.head_branch())) == 42


def test_put_new_tells_whether_the_store_lacked_the_object(tmp_path):
    repo = Repository.init(tmp_path)
    oid, body = codec.encode_object("value", {"x": 1})
    with repo.transaction(message="t"):
        assert repo.objects.put_new(oid, "value", body) is True
        assert repo.objects.put_new(oid, "value", body) is False
    repo.close()
    again = Repository.open(tmp_path / ".ctx")
    assert again.objects.put_new(oid, "value", body) is False
    assert again.objects.get(oid) == {"x": 1}
