"""Issue 34's `ctx search` benchmark: a store holding the whole corpus replicated to >= 1M events.

    .venv/bin/python -m benchmarks.bench_search                      # 1M events (cached store)
    .venv/bin/python -m benchmarks.bench_search --events 200000      # a smaller store
    .venv/bin/python -m benchmarks.bench_search --dir DIR --max-minutes 30 --json

The store is built once and cached in DIR (default /tmp/ctxstore-bench-search, never in the
repository): replica k of the corpus (CTXSTORE_CORPUS, ../shared/corpus/sessions) is imported
with every session's nonce suffixed `#replica{k}`, so each replica is new sessions and new
events (the message, record and artifact objects are the same content, so the store keeps
them once: the store grows by the events). Building stops at --events or --max-minutes,
whichever comes first; the table says how many events it reached.

Rows, all measured in this run:

- `import + catch-up`: per replica, the import (in this process, as `ctx import` runs it) and
  then the index catch-up that the next `ctx search` does for it; the incremental indexing
  figure is catch-up CPU time over import CPU time (target <= 10%). The first replica (the
  corpus as new content) is shown on its own row, the replicas after it summed.
- `ctx search WORD` against `ctx --version`: 20 words, each a whole fresh process, alternated
  with `ctx --version` so load from other processes weighs on both alike; p50 and p95 of wall
  time and of child CPU time (target: search <= 2x --version).
- sizes: the index (`.ctx/cache/search/`) against the store (`.ctx` without `cache/`)
  (target <= 0.5x).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .table import print_rows

WORDS = ["parser", "commit", "README", "dashboard", "worktree", "merge", "Beads", "cargo",
         "notes", "AudioWorklet", "typescript", "gemini", "branch", "install", "config",
         "refactor", "compaction", "embedding", "pyright", "checkpoint"]
CTX = [sys.executable, "-m", "ctxstore.cli"]


def _corpus() -> Path:
    from tests.corpus import corpus_root

    root = corpus_root()
    if not root.is_dir():
        raise SystemExit(f"no corpus at {root} (set CTXSTORE_CORPUS)")
    return root


def _replica_nonces(k: int):
    """Import with every session's nonce suffixed, so replica k is new sessions."""
    from ctxstore.importers import common

    orig = common.SessionBuilder.__init__

    def init(self, ctx, **kw):
        kw["nonce"] = f"{kw['nonce']}#replica{k}"
        orig(self, ctx, **kw)

    common.SessionBuilder.__init__ = init
    return lambda: setattr(common.SessionBuilder, "__init__", orig)


def _count_events(repo) -> int:
    from ctxstore.search.index import connect, index_path

    con = connect(index_path(repo))
    try:
        return con.execute("SELECT count(*) FROM docs WHERE sid IS NOT NULL").fetchone()[0]
    finally:
        con.close()


def build(root: Path, target: int, max_minutes: float, log) -> list[dict]:
    """Import replicas into ROOT until TARGET events or MAX_MINUTES; each import followed by
    the index catch-up. Returns a row per replica; resumes a store built before."""
    from ctxstore.importers import import_paths
    from ctxstore.repo import Repository
    from ctxstore.search import catch_up

    state_file = root / "bench-state.json"
    rows = json.loads(state_file.read_text()) if state_file.exists() else []
    repo = Repository.init(root)
    corpus = _corpus()
    start = time.perf_counter()
    events = _count_events(repo) if rows else 0
    while events < target and time.perf_counter() - start < max_minutes * 60:
        k = len(rows)
        undo = _replica_nonces(k)
        try:
            w0, c0 = time.perf_counter(), time.process_time()
            import_paths(repo, [corpus])
            w1, c1 = time.perf_counter(), time.process_time()
        finally:
            undo()
        st = catch_up(repo)
        w2, c2 = time.perf_counter(), time.process_time()
        events += st.events_added
        rows.append({"replica": k, "events": st.events_added, "import_s": w1 - w0,
                     "import_cpu_s": c1 - c0, "index_s": w2 - w1, "index_cpu_s": c2 - c1})
        state_file.write_text(json.dumps(rows))
        log(f"replica {k}: {st.events_added} events (total {events}), import {c1 - c0:.1f}s "
            f"cpu, index {c2 - c1:.2f}s cpu")
    repo.close()
    return rows


def _du(path: Path, skip: str | None = None) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        if skip and skip in dirnames:
            dirnames.remove(skip)
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames)
    return total


def _timed(argv: list[str], env: dict) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    code = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def queries(root: Path) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env["CTX_DIR"] = str(root / ".ctx")
    ctx = [str(Path(sys.executable).parent / "ctx")]
    _timed([*ctx, "--version"], env)  # warm-up: bytecode, page cache
    _timed([*ctx, "search", WORDS[0]], env)
    version: list[tuple[float, float]] = []
    search: list[tuple[float, float]] = []
    misses = []
    for word in WORDS:
        w, c, _ = _timed([*ctx, "--version"], env)
        version.append((w, c))
        w, c, code = _timed([*ctx, "search", word], env)
        search.append((w, c))
        if code != 0:
            misses.append(word)
    rows = []
    for name, xs in (("ctx --version", version), ("ctx search WORD", search)):
        rows.append({"command": name, "runs": len(xs),
                     "p50 ms": 1000 * statistics.median(x[0] for x in xs),
                     "p95 ms": 1000 * _pct([x[0] for x in xs], 0.95),
                     "p50 cpu ms": 1000 * statistics.median(x[1] for x in xs),
                     "p95 cpu ms": 1000 * _pct([x[1] for x in xs], 0.95)})
    v, s = rows
    rows.append({"command": "search / --version",
                 "p50 ms": s["p50 ms"] / v["p50 ms"], "p95 ms": s["p95 ms"] / v["p95 ms"],
                 "p50 cpu ms": s["p50 cpu ms"] / v["p50 cpu ms"],
                 "p95 cpu ms": s["p95 cpu ms"] / v["p95 cpu ms"],
                 "target": "<= 2", "words without a hit": ", ".join(misses) or "none"})
    return rows


def main() -> None:
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return

    def opt(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args else default

    root = Path(opt("--dir", "/tmp/ctxstore-bench-search"))
    target = int(opt("--events", "1000000"))
    max_minutes = float(opt("--max-minutes", "25"))
    as_json = "--json" in args
    if "--fresh" in args and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    reps = build(root, target, max_minutes, lambda m: print(m, file=sys.stderr, flush=True))
    events = sum(r["events"] for r in reps)
    first, rest = reps[0], reps[1:]

    def ratio(rs: list[dict]) -> dict:
        imp = sum(r["import_cpu_s"] for r in rs)
        idx = sum(r["index_cpu_s"] for r in rs)
        return {"replicas": len(rs), "events": sum(r["events"] for r in rs),
                "import cpu s": imp, "index cpu s": idx, "index / import": idx / imp if imp else 0,
                "import wall s": sum(r["import_s"] for r in rs),
                "index wall s": sum(r["index_s"] for r in rs), "target": "<= 0.10"}

    indexing = [{"rows": "first replica (new content)", **ratio([first])}]
    if rest:
        indexing.append({"rows": "later replicas (content already stored)", **ratio(rest)})
    store = _du(root / ".ctx", skip="cache")
    index = _du(root / ".ctx" / "cache" / "search")
    sizes = [{"events": events, "store MB": store / 1e6, "index MB": index / 1e6,
              "index / store": index / store, "target": "<= 0.5"}]
    timing = queries(root)
    if as_json:
        print(json.dumps({"indexing": indexing, "sizes": sizes, "queries": timing}, indent=1))
        return
    print_rows(indexing, "Incremental indexing: catch-up after each import")
    print_rows(sizes, "Index size")
    print_rows(timing, "ctx search WORD against ctx --version (whole processes)")


if __name__ == "__main__":
    main()
