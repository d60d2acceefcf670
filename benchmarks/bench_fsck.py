"""fsck throughput on a large store, this checkout beside a baseline checkout, alternating.

    .venv/bin/python -m benchmarks.bench_fsck --store DIR [--n 1000000] [--baseline CHECKOUT]
                                              [--rounds 2] [--workers N]

`--store DIR` is built first if it does not exist (`bench_store.build_store`, the same ~1 KB
events as `bench_store`'s fsck row: 1M objects, ~373 MB, a few minutes). `--baseline` is a
directory holding another commit's `ctxstore/` package, e.g. made by
`git archive e974fb0 | tar -x -C /tmp/base`; each round verifies the store once with the
baseline and once with this checkout, in fresh processes, so both see the same load. The table
gives wall time, objects/s and the CPU spent per object by the process and its workers together
(the figure least bent by other work on the machine), and the target of issue 19.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TARGET = 150_000

_CHILD = r"""
import json, resource, sys, time
from ctxstore.store.fsck import verify
from ctxstore.store.packstore import PackStore
workers = json.loads(sys.argv[2])
with PackStore(sys.argv[1], create=False) as store:
    count = [0]
    start = time.perf_counter()
    problems = list(verify(store, progress=lambda n: count.__setitem__(0, n), workers=workers))
    seconds = time.perf_counter() - start
cpu = sum(getattr(resource.getrusage(who), field)
          for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for field in ("ru_utime", "ru_stime"))
print(json.dumps({"objects": count[0], "seconds": seconds, "cpu": cpu,
                  "problems": [str(p) for p in problems[:3]]}))
"""


def run_once(checkout: str, store: str, workers: int | None) -> dict:
    """One fsck of `store` in a fresh interpreter importing ctxstore from `checkout`."""
    env = dict(os.environ, PYTHONPATH=checkout)
    out = subprocess.run([sys.executable, "-c", _CHILD, store, json.dumps(workers)],
                         env=env, cwd=checkout, capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    if row["problems"]:
        raise SystemExit(f"fsck found problems with {checkout}: {row['problems']}")
    return row


def ensure_store(path: str, n: int) -> None:
    if os.path.exists(path):
        return
    from .bench_store import build_store

    print(f"building a {n:,}-object store in {path} ...", file=sys.stderr)
    build_store(path, n)


def format_table(rows: list[tuple[str, dict]]) -> str:
    lines = ["| run | code | objects | time | objects/s | CPU µs/object | target |",
             "|---:|---|---:|---:|---:|---:|---|"]
    for i, (name, r) in enumerate(rows):
        lines.append(f"| {i // 2 + 1} | {name} | {r['objects']:,} | {r['seconds']:.2f} s | "
                     f"{r['objects'] / r['seconds']:,.0f} | "
                     f"{r['cpu'] / r['objects'] * 1e6:.1f} | ≥ {TARGET:,}/s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True, help="store directory (built if missing)")
    parser.add_argument("--n", type=int, default=1_000_000, help="objects, when building")
    parser.add_argument("--baseline", help="a checkout of another commit to alternate with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=None,
                        help="verify(workers=N); default: verify's own choice")
    args = parser.parse_args(argv)
    ensure_store(args.store, args.n)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    codes = ([("baseline", os.path.abspath(args.baseline))] if args.baseline else []) + \
        [("this checkout", here)]
    rows = []
    for _ in range(args.rounds):
        for name, checkout in codes:
            rows.append((name, run_once(checkout, args.store, args.workers)))
    print(format_table(rows))


if __name__ == "__main__":
    main()
