"""The live path with and without the write-ahead journal, beside SQLite and JSONL, in one run.

    .venv/bin/python -m benchmarks.bench_live            # 300 SessionStore appends, 1,000 items, ...
    .venv/bin/python -m benchmarks.bench_live --quick    # a third of each

Every ctxstore row runs twice, "pack path" (the journal off, today's default) and "journal"
(`CTXSTORE_JOURNAL=1`, docs/format.md "The write-ahead journal"), interleaved with its
baseline, all durable when the call returns:
- system calls per transaction (one event appended per transaction, counted by wrapping
  os.fsync / os.fdatasync / os.replace / os.rename in this process);
- Claude Agent SDK SessionStore: appends of 10 entries, then a load, beside the SQLite store of
  benchmarks/bench_live_capture.py (WAL, synchronous=FULL, one transaction per append);
  targets: append <= 2x, load <= 2x;
- OpenAI Agents SDK session: `add_items` of one item, beside the SDK's SQLiteSession; <= 2x;
- ContextManager: one durable append_event per call beside SQLite WAL with a transaction per
  event (benchmarks/baselines.py); target <= 1.5x;
- `ctx append --batch FILE` as a process (corpus-shaped events) beside JSONL with a flush per
  event and SQLite WAL txn/event; targets >= 0.4x JSONL, >= 7x SQLite.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import baselines
from .table import run_and_print

MODES = (("pack path", "0"), ("journal", "1"))


def _journal(flag: str) -> None:
    os.environ["CTXSTORE_JOURNAL"] = flag


def syscall_rows(n: int = 200) -> list[dict]:
    from ctxstore import Repository

    rows = []
    for mode, flag in MODES:
        _journal(flag)
        counts: collections.Counter = collections.Counter()
        saved = {name: getattr(os, name) for name in ("fsync", "fdatasync", "replace", "rename")}

        def counting(name, real, counts=counts):
            def call(*args, **kw):
                counts[name] += 1
                return real(*args, **kw)
            return call

        tmp = tempfile.mkdtemp(prefix="bench-live-sys-")
        try:
            repo = Repository.init(tmp)
            repo.new_session("bench")
            for name, real in saved.items():
                setattr(os, name, counting(name, real))
            for i in range(n):
                with repo.transaction(message="append") as tx:
                    tx.append("UserPromptSubmitted", "user", {"text": f"hello {i}"})
            repo.close()
        finally:
            for name, real in saved.items():
                setattr(os, name, real)
            shutil.rmtree(tmp, ignore_errors=True)
        rows.append({"bench": "syscalls per transaction", "case": f"ctxstore, {mode}",
                     "transactions": n, "fsync": counts["fsync"] / n,
                     "fdatasync": counts["fdatasync"] / n,
                     "renames": (counts["replace"] + counts["rename"]) / n})
    return rows


def session_store_rows(n_entries: int) -> list[dict]:
    from ctxstore.integrations.claude_agent_sdk import CtxstoreSessionStore

    from .bench_live_capture import SqliteSessionStore, _store_rows, synthetic

    entries = synthetic(n_entries)
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-ss-"))
    try:
        lite = SqliteSessionStore(str(tmp / "baseline.sqlite"))
        base = _store_rows("sqlite", lite, entries)
        lite.close()
        rows = [{"bench": "SessionStore (10 entries/append)", "case": "SQLite WAL FULL, txn/append",
                 "append ms": base["append ms/call"], "load ms": base["load ms"]}]
        for mode, flag in MODES:
            _journal(flag)
            store = CtxstoreSessionStore(tmp / f"ctx-{flag}")
            row = _store_rows(mode, store, entries)
            store.close()
            a = row["append ms/call"] / base["append ms/call"]
            ld = row["load ms"] / base["load ms"]
            rows.append({"bench": "SessionStore (10 entries/append)", "case": f"ctxstore, {mode}",
                         "append ms": row["append ms/call"], "load ms": row["load ms"],
                         "vs SQLite": f"append {a:.2f}x, load {ld:.2f}x",
                         "target": "<= 2x, <= 2x", "ok": a <= 2 and ld <= 2})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def openai_rows(n_items: int) -> list[dict]:
    from .bench_openai_agents import conversation, measure, open_ctxstore, open_sqlite

    items = conversation(n_items)
    tmp = tempfile.mkdtemp(prefix="bench-live-oa-")
    try:
        base = asyncio.run(measure("SQLiteSession", open_sqlite, os.path.join(tmp, "sqlite"), items))
        rows = [{"bench": "OpenAI Agents add_items (1 item)", "case": "SQLiteSession",
                 "append ms": base["add_mean_ms"], "load ms": base["load_all_s"] * 1000}]
        for mode, flag in MODES:
            _journal(flag)
            ours = asyncio.run(measure(mode, open_ctxstore, os.path.join(tmp, f"ctx-{flag}"), items))
            a = ours["add_mean_ms"] / base["add_mean_ms"]
            rows.append({"bench": "OpenAI Agents add_items (1 item)", "case": f"ctxstore, {mode}",
                         "append ms": ours["add_mean_ms"], "load ms": ours["load_all_s"] * 1000,
                         "vs SQLite": f"add {a:.2f}x", "target": "<= 2x", "ok": a <= 2})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def context_manager_rows(n: int) -> list[dict]:
    from ctxstore import ContextManager, Repository

    events = baselines.make_events(n)
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-cm-"))
    try:
        (tmp / "s").mkdir()
        lite = baselines.sqlite_wal(events, str(tmp / "s"))
        base_ms = 1000 / lite["per_sec"]
        rows = [{"bench": "ContextManager durable append (1 event)",
                 "case": "SQLite WAL FULL, txn/event", "append ms": base_ms}]
        for mode, flag in MODES:
            _journal(flag)
            repo = Repository.init(tmp / f"cm-{flag}")
            cm = ContextManager.start(repo, title="bench")
            t = time.perf_counter()
            for ev in events:
                cm.append_event(ev["type"], ev["actor"], ev["payload"], ev.get("causality"))
            ms = (time.perf_counter() - t) * 1000 / n
            repo.close()
            rows.append({"bench": "ContextManager durable append (1 event)",
                         "case": f"ctxstore, {mode}", "append ms": ms,
                         "vs SQLite": f"{ms / base_ms:.2f}x", "target": "<= 1.5x",
                         "ok": ms / base_ms <= 1.5})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def append_batch_rows(n: int) -> list[dict]:
    from ctxstore import Repository

    from .corpus_events import corpus_lines

    lines = corpus_lines(n)
    events = [json.loads(line) for line in lines]
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-batch-"))
    try:
        (tmp / "j").mkdir()
        (tmp / "s").mkdir()
        jsonl = baselines.jsonl(events, str(tmp / "j"))["per_sec"]
        sqlite = baselines.sqlite_wal(events[:min(n, 1000)], str(tmp / "s"))["per_sec"]
        rows = [{"bench": f"ctx append --batch ({n} corpus events)", "case": "JSONL flush/event",
                 "events/s": jsonl},
                {"bench": f"ctx append --batch ({n} corpus events)", "case": "SQLite WAL txn/event",
                 "events/s": sqlite}]
        batch = tmp / "batch.jsonl"
        batch.write_text("\n".join(lines) + "\n")
        ctx = [sys.executable, "-m", "ctxstore.cli"]
        for mode, flag in MODES:
            root = tmp / f"e2e-{flag}"
            Repository.init(root).close()
            env = dict(os.environ, CTX_DIR=str(root / ".ctx"), CTXSTORE_JOURNAL=flag)
            subprocess.run([*ctx, "new", "--title", "batch"], env=env, check=True,
                           capture_output=True)
            t = time.perf_counter()
            subprocess.run([*ctx, "append", "--batch", str(batch)], env=env, check=True,
                           capture_output=True)
            eps = n / (time.perf_counter() - t)
            rows.append({"bench": f"ctx append --batch ({n} corpus events)",
                         "case": f"ctxstore process, {mode}", "events/s": eps,
                         "vs SQLite": f"{eps / jsonl:.2f}x JSONL, {eps / sqlite:.1f}x SQLite",
                         "target": ">= 0.4x, >= 7x",
                         "ok": eps / jsonl >= 0.4 and eps / sqlite >= 7})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(quick: bool = False) -> list[dict]:
    scale = 3 if quick else 1
    saved = os.environ.get("CTXSTORE_JOURNAL")
    try:
        rows = syscall_rows()
        rows += session_store_rows(3000 // scale)
        rows += openai_rows(1000 // scale)
        rows += context_manager_rows(1000 // scale)
        rows += append_batch_rows(30_000 // scale)
    finally:
        if saved is None:
            os.environ.pop("CTXSTORE_JOURNAL", None)
        else:
            os.environ["CTXSTORE_JOURNAL"] = saved
    return rows



def main() -> int:
    run_and_print(run, "The live path: pack path vs write-ahead journal vs SQLite/JSONL")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
