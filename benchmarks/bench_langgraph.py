"""LangGraph checkpointers side by side: CtxstoreSaver beside SqliteSaver in one run.

    .venv/bin/python -m benchmarks.bench_langgraph [--quick]

A real StateGraph whose message list grows by one message per step runs for hundreds of steps
on one thread; then `get_state` and `get_state_history` (every checkpoint, with its values).
Rows: the time of the run plus both reads, and bytes on disk after closing. Targets: time
<= 1x SqliteSaver's, disk <= 0.2x SqliteSaver's.
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
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from ctxstore.integrations.langgraph import CtxstoreSaver

from .baselines import dir_size

TIME_TARGET = 1.0
DISK_TARGET = 0.2
_WORDS = ("the plan checks each file, runs the tests, reads the failing trace, patches the "
          "parser and retries; tokens budget context window tool call result summary").split()


class State(TypedDict):
    messages: Annotated[list, add_messages]
    step: int


def build_graph(steps: int, checkpointer):
    """A node that appends one assistant message per step until `steps` messages were added."""
    def agent(state: State) -> dict:
        i = state["step"]
        rnd = random.Random(i)
        text = f"step {i}: " + " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(30, 60)))
        return {"messages": [AIMessage(content=text, id=f"m{i}")], "step": i + 1}

    def route(state: State) -> str:
        return END if state["step"] >= steps else "agent"

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    return builder.compile(checkpointer=checkpointer)


def measure(name: str, steps: int, open_saver: Callable, path: str) -> dict:
    saver, close = open_saver(path)
    graph = build_graph(steps, saver)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    gc.collect()
    t0 = time.perf_counter()
    graph.invoke({"messages": [HumanMessage(content="go", id="m-user")], "step": 0}, config)
    t1 = time.perf_counter()
    state = graph.get_state(config)
    t2 = time.perf_counter()
    history = list(graph.get_state_history(config))
    t3 = time.perf_counter()
    close()
    assert len(state.values["messages"]) == steps + 1, len(state.values["messages"])
    assert len(history) == steps + 2, len(history)
    return {"name": name, "steps": steps, "run_s": t1 - t0, "get_state_ms": (t2 - t1) * 1000,
            "history_s": t3 - t2, "total_s": t3 - t0, "bytes": dir_size(path)}


def open_sqlite(path: str):
    os.makedirs(path, exist_ok=True)
    conn = sqlite3.connect(os.path.join(path, "checkpoints.sqlite"), check_same_thread=False)
    saver = SqliteSaver(conn)
    return saver, conn.close


def open_ctxstore(path: str):
    saver = CtxstoreSaver(path)
    return saver, saver.close


def run(quick: bool = False) -> list[dict]:
    steps = 200 if quick else 500
    repeats = 1 if quick else 3
    root = tempfile.mkdtemp(prefix="bench-langgraph-")
    best: dict[str, dict] = {}
    try:
        savers = [("SqliteSaver", open_sqlite), ("CtxstoreSaver", open_ctxstore)]
        for r in range(repeats):
            for name, opener in savers if r % 2 == 0 else savers[::-1]:  # alternate who goes first
                row = measure(name, steps, opener, os.path.join(root, f"{name}-{r}"))
                if name not in best or row["total_s"] < best[name]["total_s"]:
                    best[name] = row
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base, ours = best["SqliteSaver"], best["CtxstoreSaver"]
    time_ratio = ours["total_s"] / base["total_s"]
    disk_ratio = ours["bytes"] / base["bytes"]
    base.update({"time_vs_sqlite": 1.0, "disk_vs_sqlite": 1.0})
    ours.update({"time_vs_sqlite": time_ratio, "disk_vs_sqlite": disk_ratio,
                 "target": f"time <= {TIME_TARGET}x, disk <= {DISK_TARGET}x",
                 "ok": time_ratio <= TIME_TARGET and disk_ratio <= DISK_TARGET})
    return [base, ours]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 steps, one repeat")
    args = ap.parse_args(argv)
    from .table import print_rows

    print_rows(run(quick=args.quick), "langgraph checkpointers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
