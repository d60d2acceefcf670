"""CtxstoreSaver beyond the conformance suite: real graphs, sharing, threads as sessions,
reachability after deletes, concurrent writers, packs, and the value chunking."""

from __future__ import annotations

import random
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from ctxstore.integrations.langgraph import CtxstoreSaver  # noqa: E402
from ctxstore.integrations.langgraph import values as values_mod  # noqa: E402
from ctxstore.integrations.langgraph.threads import (  # noqa: E402
    CHECKPOINT,
    branch_ns,
    ns_branch,
    thread_id_of,
    thread_ref,
)
from ctxstore.objects import links  # noqa: E402
from ctxstore.porcelain import history  # noqa: E402
from ctxstore.repo import Repository  # noqa: E402
from ctxstore.store import MemoryStore  # noqa: E402


class State(TypedDict):
    messages: Annotated[list, add_messages]
    doc: str
    step: int


def counting_graph(saver, steps: int):
    def agent(state: State) -> dict:
        i = state["step"]
        return {"messages": [AIMessage(f"message {i} " + "lorem ipsum " * 20, id=f"m{i}")],
                "step": i + 1}

    b = StateGraph(State)
    b.add_node("agent", agent)
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: END if s["step"] >= steps else "agent")
    return b.compile(checkpointer=saver)


def approval_graph(saver):
    def plan(state: State) -> dict:
        return {"messages": [AIMessage("plan: do it")]}

    def approve(state: State) -> dict:
        return {"messages": [HumanMessage(f"answer: {interrupt('ok?')}")]}

    b = StateGraph(State)
    b.add_node("plan", plan)
    b.add_node("approve", approve)
    b.add_edge(START, "plan")
    b.add_edge("plan", "approve")
    b.add_edge("approve", END)
    return b.compile(checkpointer=saver)


def cfg(tid: str) -> dict:
    return {"configurable": {"thread_id": tid}, "recursion_limit": 500}


def all_reachable(repo: Repository) -> set[str]:
    return links.reachable(repo.objects, [t for _, t in repo.refs.iter_refs("refs/")])


@pytest.fixture(params=["batch", "always"])
def saver(request, tmp_path):
    s = CtxstoreSaver(tmp_path / "store", durability=request.param)
    yield s
    s.close()


# -- real graphs --------------------------------------------------------------------------------
def test_interrupt_resume_copy_and_reopen(saver, tmp_path):
    graph = approval_graph(saver)
    graph.invoke({"messages": [HumanMessage("hi")], "doc": "", "step": 0}, cfg("a"))
    assert graph.get_state(cfg("a")).next == ("approve",)
    saver.copy_thread("a", "b")
    graph.invoke(Command(resume="yes"), cfg("a"))
    graph.invoke(Command(resume="no"), cfg("b"))
    assert graph.get_state(cfg("a")).values["messages"][-1].content == "answer: yes"
    assert graph.get_state(cfg("b")).values["messages"][-1].content == "answer: no"
    hist_a = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(cfg("a"))]
    hist_b = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(cfg("b"))]
    assert hist_a[-3:] == hist_b[-3:] and hist_a[0] != hist_b[0]  # shared past, own future
    saver.close()
    again = CtxstoreSaver(tmp_path / "store")
    try:
        graph2 = approval_graph(again)
        assert graph2.get_state(cfg("b")).values["messages"][-1].content == "answer: no"
        assert [s.config["configurable"]["checkpoint_id"]
                for s in graph2.get_state_history(cfg("a"))] == hist_a
    finally:
        again.close()


def test_update_state_forks_the_checkpoint_tree(saver):
    graph = counting_graph(saver, 5)
    graph.invoke({"messages": [], "doc": "d", "step": 0}, cfg("t"))
    history_before = list(graph.get_state_history(cfg("t")))
    old = history_before[3]  # an old checkpoint
    forked = graph.update_state(old.config, {"doc": "edited"})
    tup = saver.get_tuple(forked)
    assert tup.parent_config["configurable"]["checkpoint_id"] == old.config["configurable"][
        "checkpoint_id"]
    assert tup.checkpoint["channel_values"]["doc"] == "edited"
    latest = graph.get_state(cfg("t"))
    assert latest.config["configurable"]["checkpoint_id"] == forked["configurable"]["checkpoint_id"]
    assert len(list(graph.get_state_history(cfg("t")))) == len(history_before) + 1
    # the tree is in the DAG: the fork's event has the old checkpoint's event as a parent
    th = saver._ts.thread("t")
    br = saver._ts.branch(th, "")
    fork_ev = saver.repo.graph.event(br.checkpoints[forked["configurable"]["checkpoint_id"]])
    assert br.checkpoints[old.config["configurable"]["checkpoint_id"]] in fork_ev.parents


def test_subgraph_namespaces_are_branches():
    class Sub(TypedDict):
        messages: Annotated[list, add_messages]

    def inner(state: Sub) -> dict:
        return {"messages": [AIMessage("from the subgraph")]}

    sb = StateGraph(Sub)
    sb.add_node("inner", inner)
    sb.add_edge(START, "inner")
    sb.add_edge("inner", END)
    sub = sb.compile(checkpointer=True)  # its own checkpoint namespace
    pb = StateGraph(Sub)
    pb.add_node("child", sub)
    pb.add_edge(START, "child")
    pb.add_edge("child", END)
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = pb.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("go")]}, cfg("s"))
    branches = repo.branches(saver.session_of("s"))
    namespaces = {branch_ns(b) for b in branches}
    assert "" in namespaces and any(ns.startswith("child") for ns in namespaces if ns)
    for ns in namespaces:
        assert list(saver.list({"configurable": {"thread_id": "s", "checkpoint_ns": ns}}))
    saver.copy_thread("s", "s2")
    assert set(repo.branches(saver.session_of("s2"))) == set(branches)


# -- content addressing -------------------------------------------------------------------------
def test_unchanged_values_are_stored_once():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = counting_graph(saver, 30)
    big = "a large unchanged document " * 2000
    graph.invoke({"messages": [], "doc": big, "step": 0}, cfg("x"))
    store = repo.objects
    value_bytes = sum(len(store.get(i)["data"]) for i in store if store.type_of(i) == "value")
    assert value_bytes < 3 * len(big)  # the channel value and the input write; not 30 copies
    before = len(store)
    saver.copy_thread("x", "y")
    # session, its root, the copy marker, and one operation per transaction (publishing the
    # pending checkpoints, creating the thread, copying): O(1)
    assert len(store) - before <= 6
    assert saver.get_tuple(cfg("y")).checkpoint["channel_values"]["doc"] == big


def test_growing_message_list_shares_chunks():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = counting_graph(saver, 200)
    graph.invoke({"messages": [], "doc": "", "step": 0}, cfg("g"))
    store: MemoryStore = repo.objects
    blob_bytes = sum(len(store.get_raw(i)[1]) for i in store if store.type_of(i) == "blob")
    hist = list(graph.get_state_history(cfg("g")))
    serde = JsonPlusSerializer()
    every_list = sum(len(serde.dumps_typed(s.values.get("messages", []))[1]) for s in hist)
    assert blob_bytes < 0.2 * every_list  # the list is not stored whole at every step
    assert [len(s.values.get("messages", [])) for s in hist[:3]] == [200, 199, 198]


@pytest.mark.parametrize("seed", range(6))
def test_value_chunking_roundtrips(seed):
    rnd = random.Random(seed)
    serde = JsonPlusSerializer()
    vs = values_mod.ValueStore(MemoryStore())
    items: list = []
    for _ in range(60):
        op = rnd.random()
        if op < 0.6 or not items:
            items = items + [rnd.choice([
                AIMessage("x" * rnd.randint(0, 3000), id=str(rnd.random())),
                {"k": rnd.random(), "s": "y" * rnd.randint(0, 500)},
                "z" * rnd.randint(0, 300_000 if rnd.random() < 0.05 else 200),
                rnd.randint(-5, 5)])]
        elif op < 0.8:
            del items[rnd.randrange(len(items))]
        else:
            items = items[: rnd.randrange(len(items) + 1)]
        ref = vs.put(serde, items, key=("t", "", "messages"))
        assert vs.get(serde, ref) == items
        fresh = values_mod.ValueStore(vs.objects).put(serde, items)
        assert fresh == ref  # the tail cache never changes the chunking


def test_remove_messages_keeps_working():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = counting_graph(saver, 40)
    graph.invoke({"messages": [], "doc": "", "step": 0}, cfg("r"))
    msgs = graph.get_state(cfg("r")).values["messages"]
    graph.update_state(cfg("r"), {"messages": [RemoveMessage(id=m.id) for m in msgs[:10]]})
    after = graph.get_state(cfg("r")).values["messages"]
    assert [m.id for m in after] == [m.id for m in msgs[10:]]


# -- threads as sessions ------------------------------------------------------------------------
def test_threads_are_sessions_and_log_works():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    counting_graph(saver, 3).invoke({"messages": [], "doc": "", "step": 0}, cfg("thread one"))
    saver.flush()  # publish the branch refs now rather than within commit_interval
    sid = saver.session_of("thread one")
    assert sid in repo.session_ids()
    assert dict(repo.session(sid).origin) == {"format": "langgraph", "thread_id": "thread one"}
    events = history.log(repo, f"{sid}/main")
    kinds = [ev.type for _, ev in events]
    assert kinds.count(CHECKPOINT) == 5 and kinds[-1] == "SessionStarted"
    # The newest checkpoint, not the newest event: LangGraph's default durability ("async")
    # saves from a thread pool, so a task's put_writes may land after later checkpoints (on a
    # loaded machine ~1 run in 10 ended with the writes of step 1). The saver files such late
    # writes under their own checkpoint; only their place in the log is late.
    newest = next(ev for _, ev in events if ev.type == CHECKPOINT)
    assert newest.payload["summary"].startswith("step 3")


@pytest.mark.parametrize("tid", ["plain", "with space", "a:b|c", "..", "hex-abc", "x.lock", "é"])
def test_thread_and_namespace_names_roundtrip(tid):
    assert thread_id_of(thread_ref(tid)) == tid
    assert branch_ns(ns_branch(tid)) == tid


# -- deleting makes data unreachable (what gc reclaims) -----------------------------------------
def test_delete_and_prune_leave_garbage_unreachable():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = counting_graph(saver, 20)
    graph.invoke({"messages": [], "doc": "only in t1", "step": 0}, cfg("t1"))
    th1 = saver._ts.thread("t1")
    t1_events = set(saver._ts.branch(th1, "").order)
    saver.copy_thread("t1", "t1-copy")
    saver.delete_thread("t1")
    live = all_reachable(repo)
    assert t1_events <= live  # still named by the copy
    assert not list(repo.refs.iter_refs(f"refs/sessions/{th1.session}/"))
    assert saver.get_tuple(cfg("t1")) is None
    saver.prune(["t1-copy"], strategy="keep_latest")
    live = all_reachable(repo)
    assert not (t1_events & live)
    tup = saver.get_tuple(cfg("t1-copy"))
    assert len(tup.checkpoint["channel_values"]["messages"]) == 20
    assert len(list(saver.list(cfg("t1-copy")))) == 1
    for obj_id in links.reachable(repo.objects, [saver._ts.branch(saver._ts.thread("t1-copy"), "").tip]):
        assert obj_id in live
    saver.prune(["t1-copy"], strategy="delete")
    assert all_reachable(repo) == set()


def test_delete_for_runs_removes_those_runs_only():
    repo = Repository.memory()
    saver = CtxstoreSaver(repo)
    graph = counting_graph(saver, 3)

    def run(run_id: str) -> None:
        graph.invoke({"messages": [], "doc": "", "step": 0},
                     {"configurable": {"thread_id": "t", "run_id": run_id}})

    run("run-1")
    run("run-2")
    by_run = {t.metadata.get("run_id") for t in saver.list(cfg("t"))}
    assert by_run == {"run-1", "run-2"}
    saver.delete_for_runs(["run-1"])
    left = list(saver.list(cfg("t")))
    assert left and {t.metadata["run_id"] for t in left} == {"run-2"}
    assert graph.get_state(cfg("t")).values["step"] == 3


# -- concurrency and durability -----------------------------------------------------------------
def test_two_savers_on_one_store_rebase(tmp_path):
    a = CtxstoreSaver(tmp_path / "s", commit_interval=10)
    b = CtxstoreSaver(tmp_path / "s", commit_interval=10)
    try:
        counting_graph(a, 3).invoke({"messages": [], "doc": "", "step": 0}, cfg("t"))
        a.flush()
        # b continues the thread from a's checkpoints; its commits wait (interval 10 s) ...
        counting_graph(b, 6).invoke({"messages": [], "doc": "", "step": 0}, cfg("t"))
        counting_graph(a, 3).invoke({"messages": [], "doc": "", "step": 0}, cfg("u"))
        ga = counting_graph(a, 9)
        ga.update_state(cfg("t"), {"doc": "from a"})  # ... so a does not see them, and
        a.flush()  # commits first: b's events are re-created on top of a's at b's commit
        b.flush()
    finally:
        a.close()
        b.close()
    c = CtxstoreSaver(tmp_path / "s")
    try:
        hist = list(c.list(cfg("t")))
        assert len(hist) == len({t.checkpoint["id"] for t in hist}) == 5 + 8 + 1  # n steps make n + 2 checkpoints
        assert {t.metadata["source"] for t in hist} >= {"input", "loop", "update"}
        assert c.get_tuple(cfg("u")) is not None
    finally:
        c.close()


def test_batch_commits_publish_by_themselves(tmp_path):
    a = CtxstoreSaver(tmp_path / "s", commit_interval=0.01)
    try:
        counting_graph(a, 2).invoke({"messages": [], "doc": "", "step": 0}, cfg("t"))
        import time

        def waiting() -> bool:
            with a._lock:  # a commit holds the lock until its refs have moved
                return bool(a._ts.commits.pending)

        deadline = time.monotonic() + 5
        while waiting() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not waiting()
        other = CtxstoreSaver(tmp_path / "s")
        try:
            assert other.get_tuple(cfg("t")).checkpoint["channel_values"]["step"] == 2
        finally:
            other.close()
    finally:
        a.close()


def test_background_commit_failure_is_raised_by_the_next_call(tmp_path, monkeypatch):
    """The group-commit thread keeps what it met and the next call raises it (once); the
    events it could not publish stay pending and are published once the cause is gone."""
    import time

    from ctxstore.errors import IOFailure

    a = CtxstoreSaver(tmp_path / "s", commit_interval=0.01)
    store = a.repo.objects
    real_flush = store.flush

    def disk_full() -> None:
        raise OSError(28, "No space left on device")

    try:
        counting_graph(a, 2).invoke({"messages": [], "doc": "", "step": 0}, cfg("t"))
        a.flush()  # the thread exists and is published; its next checkpoints will not be
        monkeypatch.setattr(store, "flush", disk_full)
        with pytest.raises(IOFailure, match="No space left on device") as info:
            # the thread fails within ~10 ms: a later put of this run, or the next call, raises
            counting_graph(a, 4).invoke({"messages": [], "doc": "", "step": 2}, cfg("t"))
            deadline = time.monotonic() + 5
            while a._ts.commits.error is None and time.monotonic() < deadline:
                time.sleep(0.01)
            a.get_tuple(cfg("t"))
        assert isinstance(info.value.__cause__, OSError)
        assert a._ts.commits.pending  # nothing lost: still waiting to be published
        monkeypatch.setattr(store, "flush", real_flush)
        try:
            a.flush()
        except IOFailure:  # the thread retried and failed once more before the cause went away
            a.flush()
        assert not a._ts.commits.pending and a._ts.commits.error is None
        latest = a.get_tuple(cfg("t")).checkpoint["id"]
    finally:
        monkeypatch.setattr(store, "flush", real_flush)
        a.close()
    other = CtxstoreSaver(tmp_path / "s")
    try:
        assert other.get_tuple(cfg("t")).checkpoint["id"] == latest
    finally:
        other.close()


# -- packs ---------------------------------------------------------------------------------------
def test_pack_of_thread_sessions_unpacks_into_a_working_thread(tmp_path):
    from ctxstore.porcelain import transfer

    src = CtxstoreSaver(tmp_path / "src")
    approval = approval_graph(src)
    approval.invoke({"messages": [HumanMessage("hi")], "doc": "", "step": 0}, cfg("p"))
    src.copy_thread("p", "p2")
    sids = [src.session_of("p"), src.session_of("p2")]
    out = str(tmp_path / "threads.ctxpack")
    transfer.pack(src.repo, out, revs=sids)
    src.close()
    dst_repo = Repository.init(tmp_path / "dst")
    transfer.unpack(dst_repo, out)
    dst_repo.close()
    dst = CtxstoreSaver(tmp_path / "dst")
    try:
        graph = approval_graph(dst)
        for tid in ("p", "p2"):
            assert graph.get_state(cfg(tid)).next == ("approve",)
        graph.invoke(Command(resume="yes"), cfg("p2"))
        assert graph.get_state(cfg("p2")).values["messages"][-1].content == "answer: yes"
        assert dst.session_of("p2") == sids[1]
    finally:
        dst.close()


def test_gc_reclaims_a_deleted_thread_and_keeps_the_rest(tmp_path):
    maintenance = pytest.importorskip("ctxstore.maintenance.gc")
    saver = CtxstoreSaver(tmp_path / "s")
    try:
        graph = counting_graph(saver, 30)
        graph.invoke({"messages": [], "doc": "kept " * 2000, "step": 0}, cfg("keep"))
        graph.invoke({"messages": [], "doc": "gone " * 2000, "step": 0}, cfg("gone"))
        saver.copy_thread("keep", "keep-copy")
        saver.flush()
        repo = saver.repo
        before = all_reachable(repo)
        saver.delete_thread("gone")
        garbage = before - all_reachable(repo)
        assert len(garbage) > 30
        res = maintenance.gc(repo, prune="now", expire="now", expire_unreachable="now")
        assert res.objects_removed >= len(garbage) and not res.missing
        assert not any(obj_id in repo.objects for obj_id in garbage)
        for tid in ("keep", "keep-copy"):
            assert saver.get_tuple(cfg(tid)).checkpoint["channel_values"]["doc"] == "kept " * 2000
        graph.invoke({"messages": [], "doc": "again", "step": 25}, cfg("keep"))  # still writable
        assert graph.get_state(cfg("keep")).values["doc"] == "again"
    finally:
        saver.close()
