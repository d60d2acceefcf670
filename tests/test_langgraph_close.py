"""Closing a batch-mode saver stops its commit thread at once (it used to hold the lock the
thread needed, so every close waited out the 5 s join timeout and left the thread running)."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from ctxstore.integrations.langgraph import CtxstoreSaver  # noqa: E402


def test_close_stops_the_commit_thread(tmp_path):
    saver = CtxstoreSaver(tmp_path, durability="batch", commit_interval=60)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = {"v": 1, "id": "1ef4f797-8335-6428-8001-8a1503f9b875", "ts": "2026-01-01T00:00:00+00:00",
                  "channel_values": {"x": 1}, "channel_versions": {"x": 1}, "versions_seen": {}}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {"x": 1})
    thread = saver._ts.commits._thread
    assert thread is not None and thread.is_alive()  # a commit is pending, 60 s away
    saver.close()
    assert not thread.is_alive()  # joined, not abandoned after a timeout
    reopened = CtxstoreSaver(tmp_path)
    assert reopened.get_tuple(config).checkpoint["channel_values"] == {"x": 1}  # close committed
    reopened.close()
