"""Agents SDK sessions side by side: CtxstoreSession beside the SDK's SQLiteSession in one run.

    .venv/bin/python -m benchmarks.bench_openai_agents [--quick] [--items N]

Both stores are files on the same disk. N `add_items` calls of one item each (a conversation
of user messages, function calls, their outputs and assistant messages, 100-600 characters
of text each), every call durable when it returns (SQLiteSession: a WAL commit with the
sqlite3 default synchronous=FULL; ctxstore: its transaction, journal fsynced). Then a fresh
session object on the same store loads all N items, then again (what the Runner does at every
turn without a limit: the same session object loads the whole history), then the newest 50. Rows: time per add_items call (mean, p50, p99), load
times, bytes on disk. Targets: add <= 1x SQLiteSession's mean, full load <= 2x.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import tempfile
import time

from agents import SQLiteSession

from ctxstore.integrations.openai_agents import CtxstoreSession

from .baselines import dir_size

ADD_TARGET = 1.0
LOAD_TARGET = 2.0
_WORDS = ("the plan checks each file, runs the tests, reads the failing trace, patches the "
          "parser and retries; tokens budget context window tool call result summary").split()


def _text(rnd: random.Random, lo: int = 100, hi: int = 600) -> str:
    out: list[str] = []
    goal = rnd.randint(lo, hi)
    while sum(len(w) + 1 for w in out) < goal:
        out.append(rnd.choice(_WORDS))
    return " ".join(out)


def conversation(n: int, seed: int = 7) -> list[dict]:
    """n items: user, function_call, function_call_output, assistant, repeated."""
    rnd = random.Random(seed)
    items: list[dict] = []
    for i in range(n):
        turn, kind = divmod(i, 4)
        if kind == 0:
            items.append({"role": "user", "content": _text(rnd)})
        elif kind == 1:
            items.append({"type": "function_call", "call_id": f"call_{turn}", "name": "grep",
                          "arguments": json.dumps({"pattern": _text(rnd, 10, 40)}),
                          "id": f"fc_{turn}", "status": "completed"})
        elif kind == 2:
            items.append({"type": "function_call_output", "call_id": f"call_{turn}",
                          "output": _text(rnd, 200, 1500)})
        else:
            items.append({"type": "message", "role": "assistant", "id": f"msg_{turn}",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": _text(rnd),
                                       "annotations": []}]})
    return items


def open_sqlite(path: str, sid: str):
    os.makedirs(path, exist_ok=True)
    return SQLiteSession(sid, os.path.join(path, "sessions.db"))


def open_ctxstore(path: str, sid: str):
    return CtxstoreSession(sid, path)


async def measure(name: str, opener, path: str, items: list[dict]) -> dict:
    session = opener(path, "bench")
    gc.collect()
    per_call: list[float] = []
    t0 = time.perf_counter()
    for item in items:
        t = time.perf_counter()
        await session.add_items([item])
        per_call.append(time.perf_counter() - t)
    add_s = time.perf_counter() - t0
    session.close()
    gc.collect()
    fresh = opener(path, "bench")
    t = time.perf_counter()
    loaded = await fresh.get_items()
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    again = await fresh.get_items()
    again_s = time.perf_counter() - t
    t = time.perf_counter()
    newest = await fresh.get_items(limit=50)
    newest_ms = (time.perf_counter() - t) * 1000
    fresh.close()
    assert loaded == items == again, f"{name}: items did not round-trip"
    assert newest == items[-50:]
    per_call.sort()
    return {"name": name, "items": len(items), "add_total_s": add_s,
            "add_mean_ms": statistics.fmean(per_call) * 1000,
            "add_p50_ms": per_call[len(per_call) // 2] * 1000,
            "add_p99_ms": per_call[min(len(per_call) - 1, int(len(per_call) * 0.99))] * 1000,
            "load_all_s": load_s, "load_again_s": again_s, "load_50_ms": newest_ms,
            "bytes": dir_size(path)}


def run(quick: bool = False, n: int | None = None) -> list[dict]:
    n = n or (1000 if quick else 10_000)
    items = conversation(n)
    root = tempfile.mkdtemp(prefix="bench-openai-agents-")
    rows: dict[str, dict] = {}
    try:
        for name, opener in (("SQLiteSession", open_sqlite), ("CtxstoreSession", open_ctxstore)):
            rows[name] = asyncio.run(measure(name, opener, os.path.join(root, name), items))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base, ours = rows["SQLiteSession"], rows["CtxstoreSession"]
    add_ratio = ours["add_mean_ms"] / base["add_mean_ms"]
    load_ratio = ours["load_all_s"] / base["load_all_s"]
    base.update({"add_vs_sqlite": 1.0, "load_vs_sqlite": 1.0, "disk_vs_sqlite": 1.0})
    ours.update({"add_vs_sqlite": add_ratio, "load_vs_sqlite": load_ratio,
                 "disk_vs_sqlite": ours["bytes"] / base["bytes"],
                 "target": f"add <= {ADD_TARGET}x, load <= {LOAD_TARGET}x",
                 "ok": add_ratio <= ADD_TARGET and load_ratio <= LOAD_TARGET})
    return [base, ours]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,000 items instead of 10,000")
    ap.add_argument("--items", type=int, default=None, help="number of items (overrides --quick)")
    args = ap.parse_args(argv)
    from .table import print_rows

    print_rows(run(quick=args.quick, n=args.items), "OpenAI Agents SDK sessions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
