"""LangGraph checkpointers side by side: CtxstoreSaver beside SqliteSaver in one run.

    .venv/bin/python -m benchmarks.bench_langgraph [--quick] [--long-steps N]

A real StateGraph whose message list grows by one message per step runs for hundreds of steps
on one thread; then `get_state` and `get_state_history` (every checkpoint, with its values).
It runs twice: with the message list in a default channel (`add_messages`: every checkpoint
holds the whole list) and in a `DeltaChannel` (langgraph >= 1.2: checkpoints hold only each
step's new messages, plus a snapshot every 100 updates). Rows: the time of the run plus both
reads, and bytes on disk after closing. Targets: time <= 1x SqliteSaver's, disk <= 0.2x.

Then the per-integration figures of issue 16, on the DeltaChannel graph only (with a default
channel 10,000 steps would store ~50 million messages in SqliteSaver): a run of 10,000 steps,
each durable when the step ends (`durability="sync"`; CtxstoreSaver(durability="always"),
SqliteSaver commits per put), time per step (one put and one put_writes), then a fresh saver
on the same file loads the thread (`get_state`). CtxstoreSaver's default durability ("batch":
a group commit every 50 ms) runs the same steps as a third row: not durable per step.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages

from ctxstore.integrations.langgraph import CtxstoreSaver

from .baselines import dir_size

TIME_TARGET = 1.0
DISK_TARGET = 0.2
_WORDS = ("the plan checks each file, runs the tests, reads the failing trace, patches the "
          "parser and retries; tokens budget context window tool call result summary").split()


class State(TypedDict):
    messages: Annotated[list, add_messages]
    step: int


class DeltaState(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]
    step: int


def build_graph(steps: int, checkpointer, delta: bool = False):
    """A node that appends one assistant message per step until `steps` messages were added."""
    def agent(state) -> dict:  # no annotation: the builder's schema (State or DeltaState) rules
        i = state["step"]
        rnd = random.Random(i)
        text = f"step {i}: " + " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(30, 60)))
        return {"messages": [AIMessage(content=text, id=f"m{i}")], "step": i + 1}

    def route(state) -> str:
        return END if state["step"] >= steps else "agent"

    builder = StateGraph(DeltaState if delta else State)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    return builder.compile(checkpointer=checkpointer)


def measure(name: str, steps: int, open_saver: Callable, path: str, delta: bool = False,
            durability: str | None = None) -> dict:
    saver, close = open_saver(path)
    graph = build_graph(steps, saver, delta)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    gc.collect()
    t0 = time.perf_counter()
    kw = {"durability": durability} if durability else {}
    graph.invoke({"messages": [HumanMessage(content="go", id="m-user")], "step": 0}, config, **kw)
    t1 = time.perf_counter()
    state = graph.get_state(config)
    t2 = time.perf_counter()
    history = list(graph.get_state_history(config))
    t3 = time.perf_counter()
    close()
    assert len(state.values["messages"]) == steps + 1, len(state.values["messages"])
    assert len(history) == steps + 2, len(history)
    return {"name": name, "channel": "DeltaChannel" if delta else "default", "steps": steps,
            "run_s": t1 - t0, "get_state_ms": (t2 - t1) * 1000,
            "history_s": t3 - t2, "total_s": t3 - t0, "bytes": dir_size(path)}


def measure_long(name: str, steps: int, open_saver: Callable, path: str) -> dict:
    """A durable DeltaChannel run of `steps` steps, then a fresh saver loads the thread."""
    saver, close = open_saver(path)
    graph = build_graph(steps, saver, delta=True)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    gc.collect()
    t0 = time.perf_counter()
    graph.invoke({"messages": [HumanMessage(content="go", id="m-user")], "step": 0}, config,
                 durability="sync")
    run_s = time.perf_counter() - t0
    close()
    gc.collect()
    saver, close = open_saver(path)
    graph = build_graph(steps, saver, delta=True)
    t0 = time.perf_counter()
    state = graph.get_state(config)
    load_s = time.perf_counter() - t0
    close()
    assert len(state.values["messages"]) == steps + 1, len(state.values["messages"])
    return {"name": name, "channel": "DeltaChannel", "steps": steps, "run_s": run_s,
            "ms_per_step": run_s / steps * 1000, "load_s": load_s, "bytes": dir_size(path)}


def open_sqlite(path: str):
    os.makedirs(path, exist_ok=True)
    conn = sqlite3.connect(os.path.join(path, "checkpoints.sqlite"), check_same_thread=False)
    saver = SqliteSaver(conn)
    return saver, conn.close


def open_ctxstore(path: str):
    saver = CtxstoreSaver(path)
    return saver, saver.close


def open_ctxstore_durable(path: str):
    saver = CtxstoreSaver(path, durability="always")
    return saver, saver.close


def _ratios(base: dict, ours: dict) -> None:
    time_ratio = ours["total_s"] / base["total_s"]
    disk_ratio = ours["bytes"] / base["bytes"]
    base.update({"time_vs_sqlite": 1.0, "disk_vs_sqlite": 1.0})
    ours.update({"time_vs_sqlite": time_ratio, "disk_vs_sqlite": disk_ratio,
                 "target": f"time <= {TIME_TARGET}x, disk <= {DISK_TARGET}x",
                 "ok": time_ratio <= TIME_TARGET and disk_ratio <= DISK_TARGET})


def run(quick: bool = False, long_steps: int | None = None) -> list[dict]:
    steps = 200 if quick else 500
    repeats = 1 if quick else 3
    long_steps = long_steps or (1000 if quick else 10_000)
    root = tempfile.mkdtemp(prefix="bench-langgraph-")
    rows: list[dict] = []
    try:
        savers = [("SqliteSaver", open_sqlite), ("CtxstoreSaver", open_ctxstore)]
        for delta in (False, True):
            best: dict[str, dict] = {}
            for r in range(repeats):
                for name, opener in savers if r % 2 == 0 else savers[::-1]:  # alternate
                    row = measure(name, steps, opener,
                                  os.path.join(root, f"{name}-{delta}-{r}"), delta)
                    if name not in best or row["total_s"] < best[name]["total_s"]:
                        best[name] = row
            _ratios(best["SqliteSaver"], best["CtxstoreSaver"])
            rows += [best["SqliteSaver"], best["CtxstoreSaver"]]
        long = [measure_long(name, long_steps, opener, os.path.join(root, f"long-{i}"))
                for i, (name, opener) in enumerate((
                    ("SqliteSaver", open_sqlite),
                    ("CtxstoreSaver always", open_ctxstore_durable),
                    ("CtxstoreSaver batch (not durable per step)", open_ctxstore)))]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = long[0]
    for row in long:
        row.update({"step_vs_sqlite": row["ms_per_step"] / base["ms_per_step"],
                    "load_vs_sqlite": row["load_s"] / base["load_s"],
                    "disk_vs_sqlite": row["bytes"] / base["bytes"]})
    return rows + long


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="200 steps, one repeat; the durable run 1,000 steps")
    ap.add_argument("--long-steps", type=int, default=None,
                    help="steps of the durable DeltaChannel run (default 10,000)")
    args = ap.parse_args(argv)
    from .table import print_rows

    rows = run(quick=args.quick, long_steps=args.long_steps)
    print_rows(rows[:4], "langgraph checkpointers: run + get_state + get_state_history")
    print_rows(rows[4:], "langgraph checkpointers: durable DeltaChannel steps, then a fresh load")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
