"""Live capture: the Claude Agent SDK SessionStore and the Claude Code hook.

    .venv/bin/python -m benchmarks.bench_live_capture          # 10k entries, 1k vs 100k lines
    .venv/bin/python -m benchmarks.bench_live_capture --quick  # 2k entries, 1k vs 10k lines

SessionStore: N synthetic Claude Code entries (prompt, assistant with a tool call, tool
result, ...) appended in batches of 10 (the SDK mirrors about every 100 ms), then the session
loaded back, side by side with
- the SDK's InMemorySessionStore (nothing durable: the floor),
- a plain SQLite store (one row per entry, WAL, synchronous=FULL, one transaction per
  append): the SDK ships no SQLite SessionStore, so this baseline is ours, written the way a
  user would write the obvious durable store.
Per call: mean, and the mean of the first and of the last 10% of calls (flat = O(batch)).

Hook: `ctx hook claude-code` on a transcript of 1k lines and of 100k lines, each call after 5
more lines were written; the in-process work per call (run_hook) and a whole `ctx hook`
process, medians; the target is the 100k figure within 1.2x of the 1k one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .table import run_and_print

BATCH = 10


def synthetic(n: int, session: str = "bench-session", start: int = 0) -> list[dict]:
    """Claude Code lines: a prompt, then assistant tool calls and their results, repeating."""
    out = []
    for i in range(start, start + n):
        parent = f"u{i - 1}" if i else None
        base = {"uuid": f"u{i}", "parentUuid": parent, "sessionId": session, "cwd": "/w",
                "timestamp": f"2026-11-01T10:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
                "isSidechain": False, "version": "2.1.0"}
        k = i % 4
        if k == 0:
            base.update(type="user", message={"role": "user", "content": f"step {i}: fix the test"})
        elif k in (1, 3):
            base.update(type="assistant", message={
                "role": "assistant", "id": f"msg{i}", "model": "claude-x",
                "content": [{"type": "text", "text": f"Running the tests ({i})."},
                            {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                             "input": {"command": f"pytest -k case{i}"}}],
                "usage": {"input_tokens": 100 + i, "output_tokens": 20}})
        else:
            base.update(type="user", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i - 1}",
                 "content": f"{i} passed in 0.{i % 10}s"}]})
        out.append(base)
    return out


class SqliteSessionStore:
    """The obvious durable baseline: entries as JSON rows, one transaction per append."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS e (k TEXT, seq INTEGER PRIMARY KEY, v TEXT)")
        self.db.execute("CREATE INDEX IF NOT EXISTS ek ON e (k, seq)")

    async def append(self, key: dict, entries: list) -> None:
        k = f"{key['project_key']}/{key['session_id']}/{key.get('subpath') or ''}"
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO e (k, v) VALUES (?, ?)",
                            [(k, json.dumps(x)) for x in entries])
        self.db.execute("COMMIT")

    async def load(self, key: dict) -> list | None:
        k = f"{key['project_key']}/{key['session_id']}/{key.get('subpath') or ''}"
        rows = self.db.execute("SELECT v FROM e WHERE k=? ORDER BY seq", (k,)).fetchall()
        return [json.loads(r[0]) for r in rows] or None

    def close(self) -> None:
        self.db.close()


def _store_rows(name: str, store, entries: list[dict]) -> dict:
    key = {"project_key": "proj", "session_id": "bench-session"}
    times = []

    async def go() -> None:
        for i in range(0, len(entries), BATCH):
            t = time.perf_counter()
            await store.append(key, entries[i:i + BATCH])
            times.append(time.perf_counter() - t)

    asyncio.run(go())
    t = time.perf_counter()
    loaded = asyncio.run(store.load(key))
    load_s = time.perf_counter() - t
    assert loaded == entries, name
    tenth = max(1, len(times) // 10)
    return {"store": name, "entries": len(entries), "calls": len(times),
            "append ms/call": 1000 * statistics.mean(times),
            "first 10% ms": 1000 * statistics.mean(times[:tenth]),
            "last 10% ms": 1000 * statistics.mean(times[-tenth:]),
            "entries/s": len(entries) / sum(times), "load ms": 1000 * load_s}


def session_store_rows(n: int) -> list[dict]:
    from claude_agent_sdk import InMemorySessionStore

    from ctxstore.integrations.claude_agent_sdk import CtxstoreSessionStore

    entries = synthetic(n)
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-"))
    try:
        rows = []
        ctx = CtxstoreSessionStore(tmp / "ctx")
        rows.append({**_store_rows("ctxstore (durable)", ctx, entries), "durable": True})
        ctx.close()
        lite = SqliteSessionStore(str(tmp / "baseline.sqlite"))
        rows.append({**_store_rows("sqlite baseline (ours; WAL, FULL)", lite, entries),
                     "durable": True})
        lite.close()
        rows.append({**_store_rows("SDK InMemorySessionStore", InMemorySessionStore(), entries),
                     "durable": False})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _hook_case(lines: int, calls: int, tmp: Path) -> dict:
    from ctxstore.integrations.claude_code.hook import run_hook
    from ctxstore.repo import Repository

    Repository.init(tmp).close()
    transcript = tmp / "bench-session.jsonl"
    with open(transcript, "w", encoding="utf-8") as fh:
        for e in synthetic(lines):
            fh.write(json.dumps(e) + "\n")
    hook = json.dumps({"session_id": "bench-session", "transcript_path": str(transcript),
                       "cwd": str(tmp), "hook_event_name": "PostToolUse", "tool_name": "Bash"})
    t = time.perf_counter()
    first = run_hook(hook)
    initial = time.perf_counter() - t
    assert "error" not in first, first
    in_process, whole = [], []
    at = lines
    cmd = [sys.executable, "-m", "ctxstore.cli", "hook", "claude-code"]
    for i in range(calls):
        with open(transcript, "a", encoding="utf-8") as fh:
            for e in synthetic(5, start=at):
                fh.write(json.dumps(e) + "\n")
        at += 5
        if i % 2 == 0:
            t = time.perf_counter()
            res = run_hook(hook)
            in_process.append(time.perf_counter() - t)
            assert res["captured"][0]["lines"] == 5, res
        else:
            t = time.perf_counter()
            subprocess.run(cmd, input=hook, text=True, check=True, cwd=tmp,
                           env={**os.environ, "CTX_DIR": str(tmp / ".ctx")})
            whole.append(time.perf_counter() - t)
    return {"transcript lines": lines, "first call (imports all) s": initial,
            "hook work ms/call (median)": 1000 * statistics.median(in_process),
            "whole ctx hook process ms (median)": 1000 * statistics.median(whole)}


def hook_rows(small: int, large: int, calls: int = 20) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    try:
        rows = [_hook_case(small, calls, tmp / "small"), _hook_case(large, calls, tmp / "large")]
        base = rows[0]["hook work ms/call (median)"]
        for r in rows:
            r[f"work vs {small} lines"] = r["hook work ms/call (median)"] / base
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(quick: bool = False) -> list[dict]:
    n = 2000 if quick else 10_000
    large = 10_000 if quick else 100_000
    return session_store_rows(n) + hook_rows(1000, large)


def main(argv: list[str] | None = None) -> int:
    run_and_print(run, "live capture: SessionStore and the Claude Code hook")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
