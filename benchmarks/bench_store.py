"""Object store benchmark: ctxstore's PackStore beside JSONL, SQLite and git on the same events.

    .venv/bin/python -m benchmarks.bench_store [--quick]

Rows: durable put throughput (batch and always), the baselines, the same on corpus-shaped events
(benchmarks/corpus_events.py) with the ratios, then on a large store (1M objects, 100k with
--quick) random get, open time, bytes on disk vs the raw JSONL, and fsck.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time

from ctxstore.store.fsck import verify
from ctxstore.store.packstore import PackStore

from . import baselines

TARGETS = {"put batch": "≥ 50k/s", "random get": "≥ 100k/s", "open": "< 50 ms",
           "bytes vs JSONL": "≤ 0.5x", "fsck": "≥ 150k/s"}


def _fresh(root: str, name: str) -> str:
    path = os.path.join(root, name)
    os.makedirs(path)
    return path


def put_events(events: list[dict], path: str, durability: str) -> dict:
    start = time.perf_counter()
    with PackStore(path, durability=durability) as store:
        put = store.put
        for ev in events:
            put("event", ev)
        store.flush()
    seconds = time.perf_counter() - start
    return baselines._row(f"ctxstore put ({durability})", len(events), seconds,
                          baselines.dir_size(path))


def build_store(path: str, n: int, chunk: int = 100_000) -> tuple[list[str], int]:
    """A store of `n` events; returns (ids, raw JSONL bytes of the same events)."""
    ids: list[str] = []
    jsonl_bytes = 0
    with PackStore(path) as store:
        for base in range(0, n, chunk):
            events = baselines.make_events(min(chunk, n - base), seed=base + 7)
            jsonl_bytes += sum(map(len, baselines.jsonl_lines(events)))
            ids.extend(store.put("event", ev) for ev in events)
    return ids, jsonl_bytes


def random_gets(path: str, ids: list[str], count: int) -> dict:
    sample = random.Random(3).choices(ids, k=count)
    with PackStore(path, create=False) as store:
        get_raw = store.get_raw
        start = time.perf_counter()
        for obj_id in sample:
            get_raw(obj_id)
        seconds = time.perf_counter() - start
    return baselines._row("random get", count, seconds, 0)


def open_time(path: str, ids: list[str]) -> dict:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        store = PackStore(path, create=False)
        best = min(best, time.perf_counter() - start)
        store.get_raw(ids[0])
        store.close()
    return {"name": "open", "events": len(ids), "seconds": best, "per_sec": 0, "bytes": 0}


def fsck(path: str) -> dict:
    with PackStore(path, create=False) as store:
        count = [0]
        start = time.perf_counter()
        problems = list(verify(store, progress=lambda n: count.__setitem__(0, n)))
        seconds = time.perf_counter() - start
    if problems:
        raise SystemExit(f"fsck found {len(problems)} problems: {problems[0]}")
    return baselines._row("fsck", count[0], seconds, 0)


def corpus_rows(root: str, n: int, n_slow: int) -> list[dict]:
    """Issue 19: puts of corpus-shaped events (real Claude Code text) against JSONL with a flush
    per event and SQLite WAL with a transaction per event, in this run."""
    from .corpus_events import corpus_events

    events = corpus_events(n)
    put = put_events(events, _fresh(root, "corpus-put"), "batch")
    put["name"] = f"ctxstore put, corpus events ({n})"
    jsonl = baselines.jsonl(events, _fresh(root, "corpus-jsonl"))
    jsonl["name"] = "JSONL flush/event, corpus events"
    sqlite = baselines.sqlite_wal(events[:n_slow], _fresh(root, "corpus-sqlite"))
    sqlite["name"] = "SQLite WAL txn/event, corpus events"
    raw = sum(map(len, baselines.jsonl_lines(events)))
    put["bytes_vs_jsonl"] = put["bytes"] / raw
    put["target"] = (f"{put['per_sec'] / jsonl['per_sec']:.2f}x JSONL, "
                     f"{put['per_sec'] / sqlite['per_sec']:.1f}x SQLite (same run)")
    return [put, jsonl, sqlite]


def run(quick: bool = False) -> list[dict]:
    n_put = 20_000 if quick else 100_000
    n_slow = 1000 if quick else 3000
    n_big = 100_000 if quick else 1_000_000
    events = baselines.make_events(n_put)
    root = tempfile.mkdtemp(prefix="ctxbench-", dir=os.environ.get("CTX_BENCH_DIR"))
    rows = []
    try:
        rows.append(put_events(events, _fresh(root, "batch"), "batch") | {"target": TARGETS["put batch"]})
        rows.append(put_events(events[:n_slow], _fresh(root, "always"), "always"))
        jsonl_raw = sum(map(len, baselines.jsonl_lines(events)))
        rows.append(baselines.jsonl(events, _fresh(root, "jsonl")))
        rows.append(baselines.jsonl(events[:n_slow], _fresh(root, "jsonl-fsync"), fsync=True))
        rows.append(baselines.sqlite_wal(events[:n_slow], _fresh(root, "sqlite1"), batch=1))
        rows.append(baselines.sqlite_wal(events, _fresh(root, "sqlite100"), batch=100))
        rows.append(baselines.pygit2_commits(events[:n_slow], _fresh(root, "git")))
        rows[0]["bytes_vs_jsonl"] = rows[0]["bytes"] / jsonl_raw

        rows += corpus_rows(root, 10_000 if quick else 30_000, n_slow)

        big = _fresh(root, "big")
        start = time.perf_counter()
        ids, big_jsonl = build_store(big, n_big)
        rows.append(baselines._row(f"build {n_big} store", n_big, time.perf_counter() - start,
                                   baselines.dir_size(big)))
        rows.append(random_gets(big, ids, 200_000) | {"target": TARGETS["random get"]})
        rows.append(open_time(big, ids) | {"target": TARGETS["open"]})
        size = baselines.dir_size(big)
        rows.append({"name": "bytes on disk", "events": n_big, "seconds": 0, "per_sec": 0,
                     "bytes": size, "bytes_vs_jsonl": size / big_jsonl,
                     "target": TARGETS["bytes vs JSONL"]})
        rows.append(fsck(big) | {"target": TARGETS["fsck"]})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def format_table(rows: list[dict]) -> str:
    lines = ["| measurement | n | events/s | time | bytes | vs JSONL | target |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        per = f"{r['per_sec']:,.0f}" if r["per_sec"] else ""
        secs = f"{r['seconds'] * 1000:.1f} ms" if r["seconds"] < 1 else f"{r['seconds']:.2f} s"
        ratio = f"{r['bytes_vs_jsonl']:.2f}x" if "bytes_vs_jsonl" in r else ""
        nbytes = f"{r['bytes']:,}" if r["bytes"] else ""
        lines.append(f"| {r['name']} | {r['events']:,} | {per} | {secs} | {nbytes} | {ratio} "
                     f"| {r.get('target', '')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (100k-object store)")
    args = parser.parse_args(argv)
    print(format_table(run(quick=args.quick)))


if __name__ == "__main__":
    main()
