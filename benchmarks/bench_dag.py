"""Issue 3's benchmark: branch operations at 1k vs 100k events, diff on 1k vs 100k shared
history, and `ctx append --batch` end to end (a real `ctx` process).

Targets: fork/checkout/`log -n 50` at 100k within 1.5x of 1k; diff at 100k shared within 2x of
1k shared; `append --batch` >= 40k events/s end to end.

Issue 19's rows: on corpus-shaped events (benchmarks/corpus_events.py, real Claude Code text,
~740 B each), `ctx append --batch` as a process (start-up included) and `ContextManager.batch()`
in process, each against JSONL with a flush per event and SQLite WAL with a transaction per
event measured in the same run: targets >= 0.4x JSONL and >= 7x SQLite, durable at batch end.
"CPU µs/event" is the CPU time of the JSONL loop, of the `ctx` process (start-up included, all
threads) and of the ContextManager loop: on a shared machine wall-clock rates swing with the
load, CPU time much less.

    .venv/bin/python -m benchmarks.bench_dag [--quick] [--corpus-only]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxstore.porcelain import branches as pb
from ctxstore.porcelain import history as ph
from ctxstore.porcelain import sessions as ps
from ctxstore.repo import Repository

from .table import run_and_print


def _events(n: int, start: int = 0):
    for i in range(start, start + n):
        yield json.dumps({"type": "ToolCallFinished", "actor": "tool",
                          "payload": {"tool_call_id": f"call_{i}", "preview": f"ok {i} " * 20}})


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _session(root: Path, n: int) -> Repository:
    repo = Repository.init(root)
    repo.new_session("bench", nonce=f"bench{n}")
    ps.append_batch(repo, _events(n - 1))
    return repo


def _ops(repo: Repository) -> dict[str, float]:
    out: dict[str, float] = {}
    tip = repo.current().tip
    old = repo.graph.nth_ancestor(tip, repo.graph.generation(tip) // 2)
    k = [0]

    def fork_tip():
        k[0] += 1
        pb.fork(repo, f"f{k[0]}")
        pb.checkout(repo, "main")

    def fork_old():
        k[0] += 1
        pb.fork(repo, f"o{k[0]}", old)
        pb.checkout(repo, "main")

    out["fork at tip"] = _best(fork_tip)
    out["fork at old event"] = _best(fork_old)
    out["checkout"] = _best(lambda: pb.checkout(repo, "main"))
    out["log -n 50"] = _best(lambda: ph.log(repo, None, 50))
    # diff of two 100-event branches on top of the shared history
    pb.fork(repo, "side-a")
    ps.append_batch(repo, _events(100, 10**6))
    pb.checkout(repo, "main")
    pb.fork(repo, "side-b")
    ps.append_batch(repo, _events(100, 2 * 10**6))
    pb.checkout(repo, "main")
    repo.graph._cache.clear()
    out["diff 100 vs 100"] = _best(lambda: (repo.graph._cache.clear(), ph.diff(repo, "side-a", "side-b")))
    return out


def _append_batch_e2e(root: Path, n: int) -> float:
    """events/s of one `ctx append --batch FILE` process, start-up included."""
    Repository.init(root).close()
    env = dict(os.environ, CTX_DIR=str(root / ".ctx"))
    ctx = [sys.executable, "-m", "ctxstore.cli"]
    subprocess.run([*ctx, "new", "--title", "batch"], env=env, check=True, capture_output=True)
    batch = root / "batch.jsonl"
    batch.write_text("\n".join(_events(n)) + "\n")
    t = time.perf_counter()
    subprocess.run([*ctx, "append", "--batch", str(batch)], env=env, check=True, capture_output=True)
    return n / (time.perf_counter() - t)


def _ratio_rows(name: str, eps: float, jsonl: float, sqlite: float, cpu: float) -> list[dict]:
    return [{"benchmark": "dag", "operation": f"{name} vs JSONL flush/event", "events/s": eps,
             "ratio": eps / jsonl, "target": ">= 0.4x", "ok": eps / jsonl >= 0.4,
             "CPU µs/event": cpu},
            {"benchmark": "dag", "operation": f"{name} vs SQLite WAL txn/event", "events/s": eps,
             "ratio": eps / sqlite, "target": ">= 7x", "ok": eps / sqlite >= 7}]


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def corpus_rows(n: int = 30_000, n_sqlite: int = 1_000) -> list[dict]:
    """Issue 19: append end to end on corpus-shaped events, baselines in the same run."""
    from ctxstore import ContextManager

    from . import baselines
    from .corpus_events import corpus_lines

    lines = corpus_lines(n)
    events = [json.loads(line) for line in lines]
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-corpus-"))
    try:
        (tmp / "j").mkdir()
        (tmp / "s").mkdir()
        cpu = time.process_time()
        jsonl = baselines.jsonl(events, str(tmp / "j"))["per_sec"]
        jsonl_cpu = (time.process_time() - cpu) / n * 1e6
        sqlite = baselines.sqlite_wal(events[:n_sqlite], str(tmp / "s"))["per_sec"]
        rows = [{"benchmark": "dag", "operation": f"baseline: JSONL flush/event ({n} corpus events)",
                 "events/s": jsonl, "CPU µs/event": jsonl_cpu},
                {"benchmark": "dag", "operation": f"baseline: SQLite WAL txn/event ({n_sqlite})",
                 "events/s": sqlite}]
        root = tmp / "e2e"
        Repository.init(root).close()
        env = dict(os.environ, CTX_DIR=str(root / ".ctx"))
        ctx = [sys.executable, "-m", "ctxstore.cli"]
        subprocess.run([*ctx, "new", "--title", "batch"], env=env, check=True, capture_output=True)
        batch = root / "batch.jsonl"
        batch.write_text("\n".join(lines) + "\n")
        t, cpu = time.perf_counter(), _children_cpu()
        subprocess.run([*ctx, "append", "--batch", str(batch)], env=env, check=True,
                       capture_output=True)
        eps = n / (time.perf_counter() - t)
        rows += _ratio_rows(f"ctx append --batch ({n}, process)", eps, jsonl, sqlite,
                            (_children_cpu() - cpu) / n * 1e6)
        repo = Repository.init(tmp / "cm")
        cm = ContextManager.start(repo, title="bench")
        t, cpu = time.perf_counter(), time.process_time()
        with cm.batch():
            for ev in events:
                cm.append_event(ev["type"], ev["actor"], ev["payload"], ev["causality"], ev["ts"])
        eps = n / (time.perf_counter() - t)
        cpu = (time.process_time() - cpu) / n * 1e6
        repo.close()
        rows += _ratio_rows(f"ContextManager.batch() ({n})", eps, jsonl, sqlite, cpu)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(quick: bool = False) -> list[dict]:
    if "--corpus-only" in sys.argv:
        return corpus_rows()
    small, large = 1_000, (20_000 if quick else 100_000)
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-dag-"))
    try:
        t = time.perf_counter()
        r_small = _session(tmp / "small", small)
        r_large = _session(tmp / "large", large)
        build = time.perf_counter() - t
        a, b = _ops(r_small), _ops(r_large)
        r_small.close()
        r_large.close()
        rows = []
        for op in a:
            limit = 2.0 if op.startswith("diff") else 1.5
            ratio = b[op] / a[op] if a[op] else float("inf")
            rows.append({"benchmark": "dag", "operation": op, f"{small} events ms": a[op] * 1e3,
                         f"{large} events ms": b[op] * 1e3, "ratio": ratio,
                         "target": f"<= {limit}x", "ok": ratio <= limit})
        eps = _append_batch_e2e(tmp / "e2e", 20_000 if quick else 100_000)
        rows.append({"benchmark": "dag", "operation": "ctx append --batch (process, end to end)",
                     "events/s": eps, "target": ">= 40000/s", "ok": eps >= 40_000})
        rows.append({"benchmark": "dag", "operation": f"build {small}+{large} events via append_batch",
                     "events/s": (small + large) / build})
        return rows + corpus_rows()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    run_and_print(run)


if __name__ == "__main__":
    main()
