"""Every writer builds the events the shared transaction builds for the same input: the same
ids (so the same parents, generation and fields) and the same session marks."""

from __future__ import annotations

import pytest

from ctxstore.manager import ContextManager
from ctxstore.porcelain import sessions as ps
from ctxstore.refs import branch_ref
from ctxstore.repo import Repository
from ctxstore.repo.eventcache import SESSION_MARK_EVERY

TS = "2026-01-01T00:00:00.000Z"
INPUT = ("UserPromptSubmitted", "user", {"text": "fix the test"}, {"k": "v"}, TS)


def _repo(path=None) -> tuple[Repository, str]:
    repo = Repository.init(path, durability="never") if path else Repository.memory()
    sid, _ = repo.new_session(title="c", ts=TS, nonce="contract")
    return repo, sid


def _by_transaction() -> str:
    repo, _ = _repo()
    with repo.transaction() as tx:
        return tx.append(*INPUT)


WRITERS = {
    "porcelain append": lambda repo: ps.append(repo, *INPUT),
    "append --batch": lambda repo: ps.append_batch(repo, [
        '{"type": "UserPromptSubmitted", "actor": "user", "payload": {"text": "fix the test"}, '
        '"causality": {"k": "v"}, "ts": "2026-01-01T00:00:00.000Z"}']).head,
    "ContextManager": lambda repo: ContextManager(repo).append_event(*INPUT),
    "make_event + append_event": lambda repo: _append_prepared(repo),
}


def _append_prepared(repo: Repository) -> str:
    with repo.transaction() as tx:
        ev = repo.make_event(INPUT[0], INPUT[1], INPUT[2], (tx.tip,), INPUT[3], INPUT[4])
        return tx.append_event(ev)


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_builds_the_transactions_event(writer):
    repo, _ = _repo()
    assert WRITERS[writer](repo) == _by_transaction()


def test_new_session_is_the_same_through_every_entry_point():
    a, sid_a = _repo()
    b = Repository.memory()
    with b.transaction() as tx:
        sid_b, _ = tx.new_session(title="c", ts=TS, nonce="contract")
    assert sid_a == sid_b and a.branches(sid_a) == b.branches(sid_b)


def test_langgraph_threads_are_sessions_built_by_the_transaction():
    pytest.importorskip("langgraph")
    import threading

    from ctxstore.integrations.langgraph.threads import thread_ref
    from ctxstore.integrations.langgraph.threadstore import ThreadStore

    repo = Repository.memory()
    ts = ThreadStore(repo, threading.RLock(), durability="always", commit_interval=1.0)
    th = ts.thread("t1", create=True)
    assert repo.refs.read(thread_ref("t1")) == th.root
    ev = repo.graph.event(th.root)
    assert ev.type == "SessionStarted" and ev.generation == 1 and ev.payload["session"] == th.session
    assert repo.branches(th.session) == {"main": th.root}


@pytest.mark.parametrize("writer", ["transaction", "append --batch"])
def test_session_marks_are_written_by_every_writer(tmp_path, writer):
    repo, sid = _repo(tmp_path)
    n = SESSION_MARK_EVERY + 2
    if writer == "transaction":
        with repo.transaction() as tx:
            for i in range(n):
                tx.append("MessageAdded", "agent", {"role": "custom", "text": str(i)})
    else:
        ps.append_batch(repo, ['{"type": "MessageAdded"}'] * n)
    tip = repo.refs.read(branch_ref(sid, "main"))
    marked = [eid for eid, ev in repo.graph.first_parents(tip)
              if ev.generation % SESSION_MARK_EVERY == 0]
    assert marked and all(repo.session_marks.get(e) == sid for e in marked)
