"""The shared repository transaction against the code before it, in the same run (issue 13).

    git worktree add --detach /tmp/ctx-before <commit before the transaction>
    .venv/bin/python -m benchmarks.bench_transaction --before /tmp/ctx-before [--quick]

Each workload runs in a child process whose PYTHONPATH puts one source tree first, so "before"
and "after" execute the same workload code against their own ctxstore: durable `append` (one
transaction per event, default durability), `ctx append --batch` end to end, a Claude Code
import, and a LangGraph graph (puts and reads, benchmarks/bench_langgraph.py). Then, on the
new tree only: `ctx undo` right after importing ~100k events, beside `ctx reset` of one branch
of the same store (target: undo <= 2x reset), both end to end through the CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxstore.repo import Repository

from .bench_import import generate_claude_code
from .table import print_rows

HERE = Path(__file__).resolve().parents[1]

#: `ctx` from the tree first on PYTHONPATH: the package `ctxstore.cli` lives in `cli/`, which an
#: editable install maps to the installed tree whatever PYTHONPATH says, so map it by hand.
_CLI = r"""
import importlib.util, os, sys
tree = os.environ["PYTHONPATH"].split(os.pathsep)[0]
spec = importlib.util.spec_from_file_location(
    "ctxstore.cli", os.path.join(tree, "cli", "__init__.py"),
    submodule_search_locations=[os.path.join(tree, "cli")])
mod = importlib.util.module_from_spec(spec)
sys.modules["ctxstore.cli"] = mod
spec.loader.exec_module(mod)
from ctxstore.cli.main import main
sys.argv = ["ctx", *sys.argv[1:]]
main()
"""

_CHILD = r"""
import json, os, subprocess, sys, time
_CLI = sys.argv[4]
mode, store, arg = sys.argv[1], sys.argv[2], sys.argv[3]
from ctxstore.repo import Repository
out = {}
if mode == "append":
    from ctxstore.porcelain import sessions as ps
    repo = Repository.init(store)
    repo.new_session(title="bench")
    n = int(arg)
    t = time.perf_counter()
    for i in range(n):
        ps.append(repo, "MessageAdded", "agent", {"role": "custom", "text": f"event {i}"})
    out = {"n": n, "seconds": time.perf_counter() - t}
elif mode == "batch":
    Repository.init(store).new_session(title="bench")
    cli = [sys.executable, "-c", _CLI, "--store", store]
    t = time.perf_counter()
    subprocess.run(cli + ["append", "--batch", arg], check=True, capture_output=True)
    out = {"n": sum(1 for _ in open(arg)), "seconds": time.perf_counter() - t}
elif mode == "import":
    from ctxstore.importers.porcelain import import_paths
    repo = Repository.init(store)
    t = time.perf_counter()
    rep = import_paths(repo, [arg])
    out = {"n": rep.events, "seconds": time.perf_counter() - t}
elif mode == "langgraph":
    from benchmarks import bench_langgraph as bl
    row = bl.measure("ctxstore", int(arg), bl.open_ctxstore, store)
    out = {"n": int(arg), "seconds": row["total_s"]}
print(json.dumps(out))
"""


def _child(tree: Path, mode: str, arg: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory() as store:
        proc = subprocess.run([sys.executable, "-c", _CHILD, mode, store, arg, _CLI], env=env,
                              cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} in {tree} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(tree: Path, mode: str, arg: str, repeat: int) -> dict:
    runs = [_child(tree, mode, arg) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"])


def compare(before: Path, quick: bool) -> list[dict]:
    rows = []
    repeat = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "batch.jsonl"
        n_batch = 20_000 if quick else 100_000
        batch.write_text("".join(json.dumps({"type": "MessageAdded", "payload": {
            "role": "custom", "text": f"event {i}"}}) + "\n" for i in range(n_batch)))
        transcript = Path(tmp) / "import.jsonl"
        generate_claude_code(transcript, 5_000_000 if quick else 20_000_000)
        work = [("durable append (1 event/transaction)", "append", "200" if quick else "1000"),
                ("ctx append --batch, end to end", "batch", str(batch)),
                ("import claude-code", "import", str(transcript)),
                ("LangGraph run + reads", "langgraph", "200" if quick else "600")]
        for name, mode, arg in work:
            b = _best(before, mode, arg, repeat)
            a = _best(HERE, mode, arg, repeat)
            rows.append({"workload": name, "n": a["n"],
                         "before/s": round(b["n"] / b["seconds"]),
                         "after/s": round(a["n"] / a["seconds"]),
                         "after/before": round(b["seconds"] / a["seconds"], 2)})
    return rows


def _cli(store: str, *args: str) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ctxstore.cli", "--store", store, *args],
                          capture_output=True, text=True, cwd=HERE)
    if proc.returncode != 0:
        raise SystemExit(f"ctx {' '.join(args)} failed: {proc.stderr}")
    return time.perf_counter() - t, proc.stdout


def undo_vs_reset(quick: bool) -> list[dict]:
    """`ctx undo` of a ~100k-event import vs `ctx reset` of one branch, same store size."""
    target = 20_000_000 if quick else 180_000_000  # ~100k events
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "big.jsonl"
        generate_claude_code(transcript, target)
        rows = []
        for what in ("reset", "undo"):
            store = str(Path(tmp) / what)
            Repository.init(store).close()
            _, out = _cli(store, "import", str(transcript), "--json")
            events = json.loads(out)["events"]
            # the same commands before the timed one on both stores (same caches warmed)
            sid = json.loads(_cli(store, "sessions", "--json")[1])[0]["id"]
            if what == "reset":
                _cli(store, "checkout", f"refs/sessions/{sid}/main")
                seconds, _ = _cli(store, "reset", "HEAD~1")
            else:
                _cli(store, "op", "log", "-n", "1")
                seconds, _ = _cli(store, "undo")
            rows.append({"command": f"ctx {what}", "events in store": events,
                         "seconds": round(seconds, 3)})
    rows.append({"command": "undo / reset", "seconds": round(rows[1]["seconds"] /
                                                              rows[0]["seconds"], 2),
                 "events in store": rows[1]["events in store"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True,
                    help="a checkout of the code before the change (git worktree add)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one repeat")
    ap.add_argument("--undo-only", action="store_true", help="only undo vs reset")
    args = ap.parse_args(argv)
    if not args.undo_only:
        print_rows(compare(args.before.resolve(), args.quick),
                   f"before ({args.before}) and after, same run")
    print_rows(undo_vs_reset(args.quick), "ctx undo after a big import vs ctx reset (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
