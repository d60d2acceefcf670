"""CtxstoreSaver with `DeltaChannel` graphs (langgraph >= 1.2): the state and every checkpoint of
the history are what SqliteSaver gives for the same run, forks and copies rebuild their delta
channels, the saver's own get_delta_channel_history answers exactly as the base class's
generic walk does, and prune(keep_latest) keeps what a delta channel is rebuilt from."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph")
delta_mod = pytest.importorskip("langgraph.channels.delta")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import BaseCheckpointSaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import _messages_delta_reducer  # noqa: E402

from ctxstore.integrations.langgraph import CtxstoreSaver  # noqa: E402
from ctxstore.repo import Repository  # noqa: E402

DeltaChannel = delta_mod.DeltaChannel
SNAPSHOT_EVERY = 7


class State(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer,
                                           snapshot_frequency=SNAPSHOT_EVERY)]
    step: int


def graph_for(saver, steps: int):
    def agent(state: State) -> dict:
        i = state["step"]
        return {"messages": [AIMessage(content=f"reply {i}", id=f"m{i}")], "step": i + 1}

    b = StateGraph(State)
    b.add_node("agent", agent)
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: END if s["step"] >= steps else "agent")
    return b.compile(checkpointer=saver)


def cfg(tid: str) -> dict:
    return {"configurable": {"thread_id": tid}, "recursion_limit": 500}


def texts(values: dict) -> list[str]:
    return [m.content for m in values.get("messages", [])]


def run_both(tmp_path, steps: int, tid: str = "t"):
    ours = CtxstoreSaver(tmp_path / "ctx")
    theirs = SqliteSaver(sqlite3.connect(str(tmp_path / "lg.db"), check_same_thread=False))
    for saver in (ours, theirs):
        graph_for(saver, steps).invoke(
            {"messages": [HumanMessage(content="go", id="u")], "step": 0}, cfg(tid))
    return ours, theirs


def test_state_and_every_checkpoint_match_sqlitesaver(tmp_path):
    ours, theirs = run_both(tmp_path, 40)
    g_ours, g_theirs = graph_for(ours, 40), graph_for(theirs, 40)
    assert texts(g_ours.get_state(cfg("t")).values) == \
        texts(g_theirs.get_state(cfg("t")).values) == ["go"] + [f"reply {i}" for i in range(40)]
    h_ours = [texts(s.values) for s in g_ours.get_state_history(cfg("t"))]
    h_theirs = [texts(s.values) for s in g_theirs.get_state_history(cfg("t"))]
    assert h_ours == h_theirs and len(h_ours) == 42
    # the delta channel really is a delta: most checkpoints store no value for it
    th = ours._ts.thread("t")
    br = ours._ts.branch(th, "")
    with_value = 0
    for cid in br.checkpoints:
        tup = ours.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "",
                                               "checkpoint_id": cid}})
        with_value += "messages" in tup.checkpoint["channel_values"]
    assert 0 < with_value < len(br.checkpoints) // 3
    ours.close()


def test_own_delta_history_equals_the_generic_walk(tmp_path):
    ours, _ = run_both(tmp_path, 25)
    tuples = list(ours.list(cfg("t")))
    assert len(tuples) == 27
    for tup in tuples[::3]:
        fast = ours.get_delta_channel_history(config=tup.config, channels=["messages", "step"])
        slow = BaseCheckpointSaver.get_delta_channel_history(ours, config=tup.config,
                                                             channels=["messages", "step"])
        assert fast == slow
        assert asyncio.run(ours.aget_delta_channel_history(
            config=tup.config, channels=["messages"])) == {"messages": slow["messages"]}
    assert ours.get_delta_channel_history(config=cfg("t"), channels=[]) == {}
    missing = ours.get_delta_channel_history(config=cfg("nope"), channels=["messages"])
    assert missing == {"messages": {"writes": []}}
    ours.close()


def test_fork_from_an_old_checkpoint_rebuilds_like_sqlitesaver(tmp_path):
    ours, theirs = run_both(tmp_path, 20)
    results = []
    for saver in (ours, theirs):
        g = graph_for(saver, 20)
        old = [s for s in g.get_state_history(cfg("t")) if s.values.get("step") == 9][0]
        forked = g.update_state(old.config, {"messages": [HumanMessage(content="edit", id="e")]})
        results.append([texts(g.get_state(forked).values),
                        [texts(s.values) for s in g.get_state_history(cfg("t"))][:3]])
    assert results[0] == results[1]
    assert results[0][0] == ["go"] + [f"reply {i}" for i in range(9)] + ["edit"]
    ours.close()


def test_copy_thread_carries_the_delta_chain(tmp_path):
    ours, _ = run_both(tmp_path, 30)
    ours.copy_thread("t", "t-copy")
    g = graph_for(ours, 30)
    assert texts(g.get_state(cfg("t-copy")).values) == texts(g.get_state(cfg("t")).values)
    ours.close()


def test_prune_keep_latest_keeps_what_the_delta_channel_needs():
    saver = CtxstoreSaver(Repository.memory())
    g = graph_for(saver, 30)
    g.invoke({"messages": [HumanMessage(content="go", id="u")], "step": 0}, cfg("t"))
    want = texts(g.get_state(cfg("t")).values)
    before = len(list(saver.list(cfg("t"))))
    saver.prune(["t"], strategy="keep_latest")
    kept = len(list(saver.list(cfg("t"))))
    assert texts(g.get_state(cfg("t")).values) == want  # not silently empty
    assert 1 < kept <= SNAPSHOT_EVERY + 2 < before  # back to the nearest snapshot, no further
    g2 = graph_for(saver, 33)  # and the pruned thread runs on
    g2.invoke({"messages": [HumanMessage(content="more", id="u2")], "step": 30}, cfg("t"))
    assert texts(g2.get_state(cfg("t")).values) == \
        want + ["more", "reply 30", "reply 31", "reply 32"]
    saver.close()
