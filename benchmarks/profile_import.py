"""Where an imported Claude Code line's time goes: µs per line and stage of `ctx import`.

    .venv/bin/python -m benchmarks.profile_import [--mb 5] [--json]
    PYTHONPATH=/path/to/other/checkout python -m benchmarks.profile_import   # another tree

Imports a generated Claude Code transcript (benchmarks/bench_import.py's generator: the genuine
2.0.42 transcript repeated with fresh ids) into an on-disk store in this process, with timing
wrappers around the functions the import calls. Each stage's figure is its exclusive time (time
in the wrapped calls it makes is charged to them), so the rows add up to the whole import; the
wrappers themselves cost ~1 µs a call. Times are CPU time of the importing thread
(`time.thread_time`), so the figures hold on a loaded box; the background fdatasync thread is
not in them. Stages whose function a checkout lacks are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

#: (stage, module, attribute path): the functions timed, in the order the table shows them.
STAGES = [
    ("JSON parse", "ctxstore.jsonparse", "loads"),
    ("resume chain pre-pass (rest)", "ctxstore.importers.claude_code", "resume_chain"),
    ("message objects + mapping", "ctxstore.importers.claude_map", "map_record"),
    ("message store form", "ctxstore.importers.common", "SessionBuilder.message"),
    ("line reduction (records)", "ctxstore.importers.records", "keep_line"),
    ("canonical msgpack + id", "ctxstore.codec", "encode_object"),
    ("msgpack decode", "ctxstore.codec", "unpack_value"),
    ("canonical msgpack (check)", "ctxstore.codec", "pack_value"),
    ("event: presence check", "ctxstore.store.packstore", "PackStore.__contains__"),
    ("event: transaction", "ctxstore.repo.transaction", "Transaction.put_new_event"),
    ("event append (builder)", "ctxstore.importers.common", "SessionBuilder.append"),
    ("store: put (presence + glue)", "ctxstore.store.packstore", "PackStore.put_encoded"),
    ("store: zstd", "ctxstore.codec", "Compressor.compress"),
    ("store: framing", "ctxstore.codec", "encode_record"),
    ("store: pack write", "ctxstore.store.packwriter", "PackWriter.append"),
    ("store: dictionary training", "ctxstore.store.packstore", "PackStore._train"),
    ("tree placement (per line)", "ctxstore.importers.claude_code", "ClaudeFile._one"),
]


def _wrap(totals: dict[str, float], calls: dict[str, int], stack: list, stage: str, fn):
    perf = time.thread_time  # CPU time of this thread: the box is shared, wall time is noise

    def timed(*args, **kwargs):
        stack.append(0.0)
        start = perf()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = perf() - start
            inner = stack.pop()
            totals[stage] += spent - inner
            calls[stage] += 1
            if stack:
                stack[-1] += spent

    return timed


def _install(totals, calls, stack) -> list:
    import importlib

    undo = []
    for stage, module, attr in STAGES:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        owner, _, name = attr.rpartition(".")
        target = getattr(mod, owner) if owner else mod
        fn = target.__dict__.get(name) if owner else getattr(mod, name, None)
        if fn is None:
            continue
        totals.setdefault(stage, 0.0)
        calls.setdefault(stage, 0)
        setattr(target, name, _wrap(totals, calls, stack, stage, fn))
        undo.append((target, name, fn))
    return undo


def _rebind(undo) -> None:
    """Modules that did `from X import f` hold the unwrapped f: point them at the wrapper."""
    wrapped = {id(fn): getattr(target, name) for target, name, fn in undo}
    for mod in list(sys.modules.values()):
        if mod is None or not getattr(mod, "__name__", "").startswith("ctxstore"):
            continue
        for key, value in list(vars(mod).items()):
            if id(value) in wrapped and callable(value):
                setattr(mod, key, wrapped[id(value)])


def profile(mb: float) -> dict:
    from benchmarks.bench_import import generate_claude_code
    from ctxstore.importers import import_paths
    from ctxstore.repo import Repository

    tmp = tempfile.mkdtemp(prefix="ctx-profile-import-")
    path = Path(tmp) / "gen.jsonl"
    generate_claude_code(path, int(mb * 1_000_000))
    with open(path, "rb") as fh:
        lines = sum(1 for x in fh if x.strip())
    import ctxstore.importers.claude_code  # noqa: F401  (load what the wrappers patch)
    import ctxstore.importers.porcelain  # noqa: F401
    import ctxstore.store.packstore  # noqa: F401
    totals: dict[str, float] = {}
    calls: dict[str, int] = {}
    stack: list = []
    undo = _install(totals, calls, stack)
    _rebind(undo)
    repo = Repository.init(os.path.join(tmp, "store"))
    start = time.perf_counter()
    cpu = time.thread_time()
    import_paths(repo, [path])
    wall = time.perf_counter() - start
    cpu = time.thread_time() - cpu
    repo.close()
    rows = {stage: totals[stage] / lines * 1e6 for stage, _, _ in STAGES if stage in totals}
    rows["rest (reading lines, builders, glue)"] = cpu / lines * 1e6 - sum(rows.values())
    return {"lines": lines, "wall_s": wall, "cpu_s": cpu, "us_per_line": cpu / lines * 1e6,
            "stages": rows, "calls": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0, help="size of the generated file (MB)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = profile(args.mb)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['lines']} lines, {out['wall_s']:.2f} s wall, {out['cpu_s']:.2f} s cpu, "
          f"{out['us_per_line']:.0f} µs/line of main-thread CPU (wrapped)")
    for stage, us in out["stages"].items():
        print(f"  {stage:40s} {us:8.1f} µs/line")


if __name__ == "__main__":
    main()
