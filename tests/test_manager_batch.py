"""ContextManager.batch(): many writes, one transaction (durable and visible at the end)."""

from __future__ import annotations

import pytest

from ctxstore import ContextManager
from ctxstore.repo import Repository


def test_batch_appends_in_order_with_one_ref_move(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="batch")
    before = cm.tip
    log_before = len(repo.refs.reflog(cm.ref))
    with cm.batch():
        a = cm.add_user_message("fix the test")
        assert cm.tip == a and repo.refs.read(cm.ref) == before  # not visible yet
        b = cm.record_tool_call("t1", "bash", {"cmd": "pytest"})
        c = cm.record_tool_result("t1", "1 passed")
    assert repo.refs.read(cm.ref) == c == cm.tip
    assert len(repo.refs.reflog(cm.ref)) == log_before + 1
    chain, cur = [], c
    while cur != before:
        chain.append(cur)
        cur = repo.graph.event(cur).parents[0]
    chain.reverse()
    assert chain[0] == a and b in chain and chain[-1] == c
    assert [repo.graph.event(e).type for e in chain] == [
        "UserPromptSubmitted", "ModelResponseReceived", "ToolCallRequested", "ToolCallFinished"]
    repo.close()


def test_an_exception_in_a_batch_appends_nothing(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="batch")
    before = cm.tip
    with pytest.raises(RuntimeError):
        with cm.batch():
            cm.append_event("MessageAdded", payload={"role": "custom", "text": "lost"})
            raise RuntimeError("agent crashed")
    assert cm.tip == before == repo.refs.read(cm.ref)
    cm.append_event("MessageAdded", payload={"role": "custom", "text": "after"})
    assert list(repo.graph.event(cm.tip).parents) == [before]
    repo.close()


def test_nested_batches_join_the_outer_one(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="batch")
    log_before = len(repo.refs.reflog(cm.ref))
    with cm.batch():
        cm.append_event("MessageAdded", payload={"role": "custom", "text": "1"})
        with cm.batch():
            cm.append_event("MessageAdded", payload={"role": "custom", "text": "2"})
        cm.append_event("MessageAdded", payload={"role": "custom", "text": "3"})
    assert len(repo.refs.reflog(cm.ref)) == log_before + 1
    assert repo.graph.event(cm.tip).generation == 4
    repo.close()
