"""What ctxstore is measured against: the same agent events written by other means.

Each baseline takes a list of events and a fresh directory and returns a row:
`{"name", "events", "seconds", "per_sec", "bytes"}`. Reused by the DAG benchmark, so the
functions stay free of printing and of ctxstore internals.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time

TOOLS = ["bash", "read_file", "edit_file", "grep", "run_tests", "web_fetch"]
WORDS = ("the test suite failed because fixture config path module import error resolved "
         "retry patch applied diff line function returns value expected actual assert file "
         "ctxstore pack index record writer reader sync durable commit branch session").split()


def make_events(n: int, seed: int = 1) -> list[dict]:
    """~1 KB agent events (tool calls and results, prompts, responses), parent-linked by hash."""
    rnd = random.Random(seed)
    out, parent = [], None
    for i in range(n):
        kind = rnd.choice(["ToolCallRequested", "ToolCallFinished", "ModelResponseReceived",
                           "UserPromptSubmitted", "FileRead"])
        call = f"toolu_{rnd.getrandbits(64):016x}"
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(60, 140)))
        payload = {"tool_call_id": call, "name": rnd.choice(TOOLS), "preview": text,
                   "size": rnd.randint(10, 100_000), "truncated": rnd.random() < 0.2}
        if kind == "ModelResponseReceived":
            payload = {"text": text, "model": "claude-sonnet-4",
                       "usage": {"input_tokens": rnd.randint(1000, 90000),
                                 "output_tokens": rnd.randint(10, 4000)}}
        ev = {"type": kind, "actor": "tool", "payload": payload,
              "parents": [parent] if parent else [], "generation": i + 1,
              "ts": f"2026-03-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:"
                    f"{i % 60:02d}.{rnd.randint(0, 999):03d}Z",
              "causality": {"tool_call_id": call, "message_id": f"{rnd.getrandbits(256):064x}"}}
        parent = f"{rnd.getrandbits(256):064x}"
        out.append(ev)
    return out


def _row(name: str, n: int, seconds: float, nbytes: int) -> dict:
    return {"name": name, "events": n, "seconds": seconds, "per_sec": n / seconds if seconds else 0,
            "bytes": nbytes}


def dir_size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def jsonl_lines(events: list[dict]) -> list[bytes]:
    return [(json.dumps(e, separators=(",", ":")) + "\n").encode() for e in events]


def jsonl(events: list[dict], directory: str, fsync: bool = False) -> dict:
    """Append one JSON line per event, flushed (and optionally fsync'd) after each."""
    path = os.path.join(directory, "events.jsonl")
    start = time.perf_counter()
    with open(path, "ab") as f:
        for e in events:
            f.write((json.dumps(e, separators=(",", ":")) + "\n").encode())
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    return _row("JSONL fsync/event" if fsync else "JSONL flush/event", len(events),
                time.perf_counter() - start, os.path.getsize(path))


def sqlite_wal(events: list[dict], directory: str, batch: int = 1) -> dict:
    """SQLite in WAL mode (synchronous=FULL), one transaction per `batch` events."""
    path = os.path.join(directory, "events.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS ev (id INTEGER PRIMARY KEY, body TEXT)")
    start = time.perf_counter()
    for i in range(0, len(events), batch):
        db.execute("BEGIN")
        db.executemany("INSERT INTO ev (body) VALUES (?)",
                       [(json.dumps(e, separators=(",", ":")),) for e in events[i:i + batch]])
        db.execute("COMMIT")
    seconds = time.perf_counter() - start
    db.close()
    return _row(f"SQLite WAL txn/{batch} event{'s' if batch > 1 else ''}", len(events), seconds,
                dir_size(directory))


def pygit2_commits(events: list[dict], directory: str) -> dict:
    """A git commit per event: blob (the JSON) + tree + commit, via libgit2 (loose objects)."""
    import pygit2

    repo = pygit2.init_repository(os.path.join(directory, "git"), bare=True)
    sig = pygit2.Signature("bench", "bench@example.com", 0, 0)
    parents: list = []
    start = time.perf_counter()
    for i, e in enumerate(events):
        blob = repo.create_blob(json.dumps(e, separators=(",", ":")).encode())
        tb = repo.TreeBuilder()
        tb.insert("event.json", blob, pygit2.GIT_FILEMODE_BLOB)
        commit = repo.create_commit(None, sig, sig, f"event {i}", tb.write(), parents)
        parents = [commit]
    repo.references.create("refs/heads/main", parents[0], force=True)
    return _row("pygit2 blob+tree+commit/event", len(events), time.perf_counter() - start,
                dir_size(directory))
