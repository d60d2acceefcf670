"""Where an appended event's time goes: µs per event and stage of `ctx append --batch`.

    .venv/bin/python -m benchmarks.profile_append [--n 20000] [--json]
    cd /other/checkout && PYTHONPATH=. /this/.venv/bin/python -m benchmarks.profile_append
        # another tree: run it from there (`-m` puts the current directory first on sys.path,
        # before PYTHONPATH, so run from this checkout it would profile this tree's code)

Each stage runs alone over the same corpus-shaped events (benchmarks/corpus_events.py), with the
functions the batch path calls: parse and check the lines (`_parse_batch`), canonical msgpack +
blake3 id (`codec.encode_object`), zstd with the store's dictionary (`Compressor.compress_many`
over batches of `bodyqueue.BATCH` bodies, as the store's queue does; on the writer's thread
here, on a worker thread in the batch), record framing (`codec.encode_record`), the write into
the active pack (`PackWriter.append`). The presence check is no stage any more: the bulk path
(`BranchAppend.extend`) looks up only the first event of a batch. "whole batch" is
`append_batch` in one process (no start-up), with its CPU time (all threads) beside it; "rest"
is what the stages do not account for (transaction, field maps, session marks, partial-index
syncs, garbage collection). Run on another checkout (PYTHONPATH first) to get its figures
beside these.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from ctxstore import codec
from ctxstore.porcelain import sessions as ps
from ctxstore.repo import Repository
from ctxstore.store.bodyqueue import BATCH

from .corpus_events import corpus_lines


def _per_event(fn, items) -> float:
    start = time.perf_counter()
    for x in items:
        fn(x)
    return (time.perf_counter() - start) / len(items) * 1e6


def profile(n: int) -> dict[str, float]:
    lines = [line.encode() + b"\n" for line in corpus_lines(n)]
    tmp = tempfile.mkdtemp(prefix="ctx-profile-")
    try:
        repo = Repository.init(os.path.join(tmp, "a"))
        repo.new_session(title="profile")
        out: dict[str, float] = {}
        start = time.perf_counter()
        items = ps._parse_batch(lines, repo)
        out["parse + check line"] = (time.perf_counter() - start) / n * 1e6
        tip = "0" * 64
        fields = [{"type": o["type"], "actor": o.get("actor", "agent"),
                   "payload": o.get("payload") or {}, "parents": [tip], "generation": i + 2,
                   "ts": o.get("ts"), "causality": o.get("causality") or {}}
                  for i, o in enumerate(items)]
        out["canonical msgpack + id"] = _per_event(lambda f: codec.encode_object("event", f), fields)
        encoded = [codec.encode_object("event", f) for f in fields]
        store = repo.objects
        store.put("blob", b"start the writer")
        # the store's dictionary, trained as a store trains it (on its first small bodies)
        dictionary = codec.train_dictionary([b for _, b in encoded[:1000]], **codec.STORE_DICT_PARAMS)
        comp = codec.Compressor(store.level, dictionary)
        bodies = [b for _, b in encoded]
        chunks = [bodies[k:k + BATCH] for k in range(0, n, BATCH)]
        out["zstd (dictionary)"] = _per_event(comp.compress_many, chunks) * len(chunks) / n
        compressed = [(i, comp.compress(b), len(b)) for i, b in encoded]
        out["record framing"] = _per_event(
            lambda c: codec.encode_record(c[0], "event", c[1][0], c[1][1], c[1][2], c[2]),
            compressed)
        records = [(i, codec.encode_record(i, "event", p, c, d, raw)) for i, (p, c, d), raw
                   in compressed]
        writer = store._writer
        begin = getattr(store, "begin_transaction", None)  # buffered writes, where they exist
        if begin is not None:
            begin()
        out["write to pack"] = _per_event(lambda r: writer.append(r[0], r[1]), records)
        store.end_transaction()
        repo.close()
        repo = Repository.init(os.path.join(tmp, "b"))
        repo.new_session(title="profile")
        start, cpu = time.perf_counter(), time.process_time()
        ps.append_batch(repo, lines)
        out["whole batch (in process)"] = (time.perf_counter() - start) / n * 1e6
        out["whole batch, CPU (all threads)"] = (time.process_time() - cpu) / n * 1e6
        repo.close()
        stages = sum(v for k, v in out.items() if not k.startswith("whole"))
        out["rest (transaction, fields, marks, syncs)"] = out["whole batch (in process)"] - stages
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="events (default 20000)")
    ap.add_argument("--json", action="store_true", help="one JSON object of µs per stage")
    args = ap.parse_args(argv)
    out = profile(args.n)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"µs per event, {args.n} corpus-shaped events ({sys.prefix})")
    for k, v in out.items():
        print(f"  {k:42s} {v:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
