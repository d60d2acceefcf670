"""Retrieval (issue 17): the bm25s index over 100k memories and 100k artifacts, against SQLite
FTS5 on the same texts in the same run.

Setup (not timed): a store with N memories (90% in 100 project scopes, 5% global, 5% user) and
N artifacts (one ArtifactAdded event each, in 100 sessions of those projects), written through
the governed write path in batches of 1000 per transaction. Synthetic text: Zipf-distributed
words from a 6000-word vocabulary (memories 8-20 words, artifacts 3-6 lines of 8-16 words).

Measured:
- index build: `RetrievalIndex.open(rebuild=True)` end to end (walk refs, read every memory,
  event and artifact, tokenize, fit bm25s, save), and of that the fit alone; FTS5: inserting
  the same texts into an in-memory `fts5` table (the baseline's build).
- query latency p50/p99 over 200 queries of 3-4 words: bm25s scoped as the builder asks
  (memories of the session's visible scopes; a numpy mask before the top-10) and unscoped;
  FTS5 `MATCH 'a OR b OR c' ... ORDER BY rank LIMIT 10` with the same scope filter.
- context build (a 200-event session of project 0, budget 16k): retrieval off vs on (warm
  index), p50 of 15; and the first build after one new memory (the index catches up).

Run alone: `.venv/bin/python -m benchmarks.bench_retrieval [--quick]` (quick: 10k + 10k).
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from pathlib import Path

from ctxstore import ContextManager, Repository
from ctxstore.memory.governance import write
from ctxstore.memory.scopes import scope_keys
from ctxstore.objects.memory import Memory
from ctxstore.retrieval import RetrievalIndex
from ctxstore.retrieval.index import _Collector, current_tips
from ctxstore.retrieval.text import tokens

from .table import run_and_print

PROJECTS = 100
BATCH = 1000


def _vocab(rng: random.Random, n: int = 6000) -> tuple[list[str], list[float]]:
    syl = ["ka", "lo", "ri", "ten", "mu", "sa", "dor", "pi", "ne", "vax", "qu", "el", "tro", "zi",
           "bar", "fo", "gen", "ul", "mi", "cas"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(syl) for _ in range(rng.randint(2, 4))))
    return sorted(words), [1.0 / (i + 1) for i in range(n)]


def _text(rng, vocab, weights, lo, hi) -> str:
    return " ".join(rng.choices(vocab, weights, k=rng.randint(lo, hi)))


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _build_store(root: Path, n: int, rng: random.Random):
    vocab, weights = _vocab(rng)
    repo = Repository.init(root, durability="never")  # setup speed: the figures are reads
    sessions = []
    for p in range(PROJECTS):
        sid, _ = repo.new_session(title=f"p{p}", goal="bench", repo_root=f"/src/p{p}",
                                  checkout=False)
        sessions.append(sid)
    per = n // PROJECTS
    for p, sid in enumerate(sessions):
        ref = f"refs/sessions/{sid}/main"
        for start in range(0, per, BATCH):
            with repo.transaction(ref, message="bench artifacts") as tx:
                for i in range(start, min(per, start + BATCH)):
                    body = "\n".join(_text(rng, vocab, weights, 8, 16) for _ in range(rng.randint(3, 6)))
                    cm_art = _artifact(repo, body, f"logs/p{p}-{i}.log")
                    tx.append("ArtifactAdded", "tool", {"path": f"logs/p{p}-{i}.log",
                                                        "kind": "tool_output", "size": len(body)},
                              {"artifact_id": cm_art})
    source = repo.refs.read(f"refs/sessions/{sessions[0]}/main")
    for start in range(0, n, BATCH):
        with repo.transaction(message="bench memories") as tx:
            for i in range(start, min(n, start + BATCH)):
                r = rng.random()
                scope, key = (("global", "") if r < 0.05 else ("user", "bench") if r < 0.10
                              else ("project", f"/src/p{i % PROJECTS}"))
                mem = Memory(scope, key, "fact", _text(rng, vocab, weights, 8, 20), (source,),
                             confidence=0.9, created="2026-01-01T00:00:00.000Z",
                             updated="2026-01-01T00:00:00.000Z", update_policy="until-superseded")
                write(repo, mem, tx=tx)
    return repo, sessions, vocab, weights


def _artifact(repo, body: str, uri: str) -> str:
    from ctxstore.chunking import put_artifact_content
    from ctxstore.objects import Artifact

    content, size = put_artifact_content(repo, body.encode())
    return repo.objects.put_object(Artifact("tool_output", content, size, uri, "", "text/plain", ""))


def _fts5(rows, texts) -> tuple[sqlite3.Connection, float]:
    t = time.perf_counter()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, kind UNINDEXED, grp UNINDEXED)")
    db.executemany("INSERT INTO docs(rowid, body, kind, grp) VALUES (?, ?, ?, ?)",
                   ((i, t_, r.kind, r.group) for i, (r, t_) in enumerate(zip(rows, texts, strict=True))))
    db.commit()
    return db, time.perf_counter() - t


def run(quick: bool = False) -> list[dict]:
    n = 10_000 if quick else 100_000
    rng = random.Random(17)
    rows_out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        t = time.perf_counter()
        repo, sessions, vocab, weights = _build_store(Path(tmp), n, rng)
        setup = time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        idx = RetrievalIndex.open(repo, rebuild=True)
        build, build_cpu = time.perf_counter() - t, time.process_time() - c
        col = _Collector(repo, set(), None)
        col.run({}, current_tips(repo))
        t, c = time.perf_counter(), time.process_time()
        RetrievalIndex._fit(col.texts)
        fit, fit_cpu = time.perf_counter() - t, time.process_time() - c
        c = time.process_time()
        db, fts_build = _fts5(col.rows, col.texts)
        fts_cpu = time.process_time() - c
        keys = scope_keys(repo, sessions[0], user="bench")
        groups = [f"m:{s}\0{k}" for s, k in keys.visible().items()]
        queries = [" ".join(rng.sample(tokens(_text(rng, vocab, weights, 12, 20)), 3))
                   for _ in range(200)]
        lat = {"bm25s scoped": [], "bm25s unscoped": [], "fts5 scoped": []}
        sql = (f"SELECT rowid FROM docs WHERE docs MATCH ? AND kind = 'memory' AND grp IN "
               f"({','.join('?' * len(groups))}) ORDER BY rank LIMIT 10")
        for q in queries:
            t = time.perf_counter()
            idx.search(q, k=10, kinds=["memory"], groups=groups)
            lat["bm25s scoped"].append(time.perf_counter() - t)
            t = time.perf_counter()
            idx.search(q, k=10)
            lat["bm25s unscoped"].append(time.perf_counter() - t)
            match = " OR ".join(f'"{w}"' for w in tokens(q))
            t = time.perf_counter()
            db.execute(sql, (match, *groups)).fetchall()
            lat["fts5 scoped"].append(time.perf_counter() - t)
        rows_out.append({"what": f"store setup ({n:,} memories + {n:,} artifacts)",
                         "seconds": round(setup, 1), "rows indexed": len(idx.rows)})
        rows_out.append({"what": "index build, bm25s (read store + tokenize + fit + save)",
                         "seconds": round(build, 2), "cpu s": round(build_cpu, 2),
                         "rows indexed": len(idx.rows)})
        rows_out.append({"what": "  of which bm25s fit on the texts", "seconds": round(fit, 2),
                         "cpu s": round(fit_cpu, 2), "rows indexed": len(col.texts)})
        rows_out.append({"what": "baseline: SQLite FTS5 insert of the same texts",
                         "seconds": round(fts_build, 2), "cpu s": round(fts_cpu, 2),
                         "rows indexed": len(col.texts)})
        for name, xs in lat.items():
            rows_out.append({"what": f"query {name}, top 10", "p50 ms": round(_pct(xs, 50) * 1e3, 2),
                             "p99 ms": round(_pct(xs, 99) * 1e3, 2)})
        cm = ContextManager(repo, sessions[0], "main")
        for _i in range(100):
            cm.add_user_message(_text(rng, vocab, weights, 10, 30))
            cm.add_assistant_message(_text(rng, vocab, weights, 10, 30))
        cm.build_context(budget=16_000, retrieve=True)  # warm: the index catches up once
        for on in (False, True):
            xs = []
            for _ in range(15):
                t = time.perf_counter()
                cm.build_context(budget=16_000, retrieve=on, auto_compact=False)
                xs.append(time.perf_counter() - t)
            kept = sum(1 for s in cm.build_context(budget=16_000, retrieve=on, auto_compact=False).kept
                       if s.data.get("retrieved"))
            rows_out.append({"what": f"context build, retrieval {'on' if on else 'off'}",
                             "p50 ms": round(_pct(xs, 50) * 1e3, 1),
                             "p99 ms": round(_pct(xs, 99) * 1e3, 1), "retrieved kept": kept})
        cm.remember(_text(rng, vocab, weights, 8, 12), scope="project", sources=[cm.tip], ttl="30d")
        t = time.perf_counter()
        cm.build_context(budget=16_000, retrieve=True, auto_compact=False)
        rows_out.append({"what": "context build after 1 new memory (index catches up)",
                         "p50 ms": round((time.perf_counter() - t) * 1e3, 1)})
        repo.close()
    return rows_out


def main() -> None:
    run_and_print(run, "retrieval")


if __name__ == "__main__":
    main()
