"""Issue 8's benchmark: portable packs, chunked artifacts and gc.

    .venv/bin/python -m benchmarks.bench_transfer [--quick]

Rows: pack and unpack throughput on a 100k-event store (20k with --quick), the pack's size
beside the same sessions as raw JSONL; dedup of 20 versions of a log growing from 2 to 12 MB and
of a 1 MB file with small edits, chunked vs whole objects; gc of 1M objects (100k with --quick)
half unreachable, its time and peak memory (measured in a fresh process).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxstore import chunking
from ctxstore.objects import Message
from ctxstore.porcelain import transfer
from ctxstore.repo import Repository
from ctxstore.store.repack import store_bytes

from .baselines import TOOLS, WORDS


def _text(rnd: random.Random, lo: int, hi: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(lo, hi)))


def build_store(root: Path, n: int, seed: int = 1) -> tuple[Repository, int]:
    """A session of `n` events in the harness's shape (prompt, tool call, tool result with its
    message, model response with its message); returns (repo, raw JSONL bytes of the same)."""
    rnd = random.Random(seed)
    repo = Repository.init(root, durability="never")
    repo.new_session(title="bench", nonce=f"bench{n}", ts="2026-03-01T00:00:00.000Z")
    jsonl = 0
    store = repo.objects
    with repo.transaction(message="bench") as tx:
        for i in range(n - 1):
            kind = ("UserPromptSubmitted", "ToolCallRequested", "ToolCallFinished",
                    "ModelResponseReceived")[i % 4]
            call = f"toolu_{i // 4:08d}"
            text = _text(rnd, 40, 120)
            ts = f"2026-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
            causality: dict = {}
            if kind == "UserPromptSubmitted":
                msg = {"role": "user", "blocks": [{"type": "text", "text": text}]}
                payload = {"text": text[:200]}
            elif kind == "ToolCallRequested":
                msg = None
                payload = {"tool_call_id": call, "name": rnd.choice(TOOLS),
                           "args": {"cmd": _text(rnd, 3, 10)}}
                causality = {"tool_call_id": call}
            elif kind == "ToolCallFinished":
                msg = {"role": "tool", "blocks": [{"type": "tool_result", "tool_call_id": call,
                                                   "text": text}]}
                payload = {"tool_call_id": call, "preview": text[:200], "size": len(text),
                           "truncated": False}
                causality = {"tool_call_id": call}
            else:
                msg = {"role": "assistant", "blocks": [{"type": "text", "text": text}]}
                payload = {"text": text[:200], "model": "claude-sonnet-4",
                           "usage": {"input_tokens": rnd.randint(1000, 90000),
                                     "output_tokens": rnd.randint(10, 4000)}}
            if msg is not None:
                causality["message_id"] = store.put_object(Message.from_dict(msg))
                jsonl += len(json.dumps(msg, separators=(",", ":"))) + 1
            ev = {"type": kind, "actor": "agent", "payload": payload, "causality": causality,
                  "ts": ts, "parent": tx.tip}
            jsonl += len(json.dumps(ev, separators=(",", ":"))) + 1
            tx.append(kind, "agent", payload, causality, ts)
    repo.objects.flush()
    return repo, jsonl


def bench_pack(tmp: Path, n: int) -> list[dict]:
    repo, jsonl = build_store(tmp / "src", n)
    out = str(tmp / "all.ctxpack")
    t = time.perf_counter()
    summary = transfer.pack(repo, out, all_refs=True)
    t_pack = time.perf_counter() - t
    dst = Repository.init(tmp / "dst", durability="batch")
    t = time.perf_counter()
    result = transfer.unpack(dst, out)
    t_unpack = time.perf_counter() - t
    t = time.perf_counter()
    transfer.verify(out)
    t_verify = time.perf_counter() - t
    again = str(tmp / "again.ctxpack")
    transfer.pack(repo, again, all_refs=True)
    same = Path(out).read_bytes() == Path(again).read_bytes()
    repo.close()
    dst.close()
    mb = summary.raw_bytes / 1e6
    rows = []
    for op, secs in (("pack", t_pack), ("unpack (verify + import)", t_unpack),
                     ("pack --verify", t_verify)):
        rows.append({"benchmark": "transfer", "case": f"{op}, {n} events", "objects":
                     summary.objects, "seconds": secs, "MB/s (raw)": mb / secs,
                     "objects/s": summary.objects / secs})
    rows.append({"benchmark": "transfer", "case": f"pack size vs raw JSONL, {n} events",
                 "pack MB": summary.bytes / 1e6, "JSONL MB": jsonl / 1e6,
                 "ratio": summary.bytes / jsonl, "deterministic": same,
                 "new objects on unpack": result.new_objects})
    return rows


def _versions_log(rnd: random.Random) -> list[bytes]:
    lines, out, size = [], [], 0
    targets = [int((2 + 10 * i / 19) * 1e6) for i in range(20)]
    for target in targets:
        while size < target:
            line = (f"2026-03-01T00:00:{len(lines) % 60:02d} "
                    f"{_text(rnd, 5, 15)}\n").encode()
            lines.append(line)
            size += len(line)
        out.append(b"".join(lines))
    return out


def _versions_edited(rnd: random.Random, size: int = 1_000_000) -> list[bytes]:
    data = bytearray(_text(rnd, size // 5, size // 5).encode()[:size])
    out = [bytes(data)]
    for _ in range(19):
        for _ in range(3):
            pos = rnd.randrange(len(data) - 20)
            data[pos:pos + 12] = rnd.randbytes(6).hex().encode()
        out.append(bytes(data))
    return out


def _dedup(tmp: Path, name: str, versions: list[bytes], params: chunking.ChunkParams) -> dict:
    chunked = Repository.init(tmp / f"{name}-chunked", durability="never")
    whole = Repository.init(tmp / f"{name}-whole", durability="never")
    t = time.perf_counter()
    ids = [chunking.put_large(chunked.objects, v, params) for v in versions]
    t_chunk = time.perf_counter() - t
    for v in versions:
        whole.objects.put_blob(v)
    for r in (chunked, whole):
        r.objects.flush()
    ok = all(chunking.read_content(chunked.objects, i) == v for i, v in zip(ids, versions, strict=True))
    raw = sum(len(v) for v in versions)
    uniq = sum(len(b) for _, b in (chunked.objects.get_raw(i) for i in chunked.objects
                                   if chunked.objects.type_of(i) == "blob"))
    row = {"benchmark": "chunking", "case": name, "versions": len(versions),
           "raw MB": raw / 1e6, "unique chunk MB": uniq / 1e6,
           "dedup ratio": raw / uniq if uniq else 0.0,
           "on disk chunked MB": store_bytes(chunked.objects.packs_dir) / 1e6,
           "on disk whole MB": store_bytes(whole.objects.packs_dir) / 1e6,
           "chunk MB/s": raw / 1e6 / t_chunk, "reads back": ok}
    chunked.close()
    whole.close()
    return row


def bench_chunking(tmp: Path) -> list[dict]:
    rnd = random.Random(3)
    default = chunking.ChunkParams()
    small = chunking.ChunkParams(threshold=512 << 10, min=16 << 10, avg=64 << 10, max=256 << 10)
    return [_dedup(tmp, "log growing 2 -> 12 MB (default params)", _versions_log(rnd), default),
            _dedup(tmp, "1 MB file, small edits (threshold 512K, avg 64K)",
                   _versions_edited(rnd), small)]


_GC_CHILD = """
import json, sys, time
from ctxstore.maintenance import gc as pm
from ctxstore.repo import Repository
repo = Repository.open(sys.argv[1])
t = time.perf_counter()
res = pm.gc(repo, prune="now")
secs = time.perf_counter() - t
repo.close()
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
print(json.dumps({"seconds": secs, "peak_rss_mb": int(hwm.split()[1]) / 1024,
                  "res": res.to_dict()}))
"""


def bench_gc(tmp: Path, n: int) -> list[dict]:
    """n objects: n/2 events on a branch, n/2 unreferenced blobs."""
    root = tmp / "gc"
    repo = Repository.init(root, durability="never")
    repo.new_session(title="gc", nonce="gc", ts="2026-03-01T00:00:00.000Z")
    half = n // 2
    with repo.transaction(message="bench") as tx:
        for i in range(half - 2):
            tx.append("MessageAdded", "agent", {"role": "custom", "text": f"event {i}"},
                      ts="2026-03-01T00:00:00.000Z")
    put = repo.objects.put
    for i in range(n - half):
        put("blob", b"garbage %d" % i)
    repo.objects.flush()
    repo.close()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", _GC_CHILD, str(root / ".ctx")], env=env,
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    res = out["res"]
    return [{"benchmark": "gc", "case": f"{n} objects, half unreachable", "seconds":
             out["seconds"], "objects/s": res["objects_before"] / out["seconds"],
             "removed": res["objects_removed"], "live": res["live"],
             "MB before": res["bytes_before"] / 1e6, "MB after": res["bytes_after"] / 1e6,
             "peak RSS MB": out["peak_rss_mb"]}]


def run(quick: bool = False) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-transfer-"))
    try:
        rows = bench_pack(tmp, 20_000 if quick else 100_000)
        rows += bench_chunking(tmp)
        rows += bench_gc(tmp, 100_000 if quick else 1_000_000)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    from .table import run_and_print

    run_and_print(run, "transfer")


if __name__ == "__main__":
    main()
