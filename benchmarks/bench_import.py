"""Import benchmark: the session corpus and a generated large Claude Code transcript.

Each measurement runs `import_paths` in a fresh subprocess against an on-disk repository (the
pack store; the memory store when the pack store is not built), so peak RSS
(`ru_maxrss`) is that import's alone. Reported per row: events/s, MB/s, peak RSS and its rise
over the interpreter baseline, and store bytes / raw bytes.

The generated file repeats the genuine 2.0.42 transcript with fresh uuids, tool ids and
message ids and a per-copy prefix on every text, so content addressing cannot dedupe copies.

    python -m benchmarks.bench_import [--quick]     # --help: this text

The corpus (and the seed transcript the generator repeats) is `$CTXSTORE_CORPUS`, else
`../shared/corpus/sessions` beside the repository root; set the variable when running from a
copy placed elsewhere.

Issue 19's rows: lines/s of the large file against its parse floor (read + json.loads, same
run), peak RSS of the large import over that of a file a quarter its size, and the corpus store
after `repack` against its raw bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.corpus import corpus_root

CORPUS = corpus_root()  # $CTXSTORE_CORPUS or ../shared/corpus/sessions beside the repo
SEED = CORPUS / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl"
_ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "id", "tool_use_id", "leafUuid",
            "sourceToolAssistantUUID", "messageId", "requestId")

_CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
from ctxstore.repo import Repository
from ctxstore.importers import import_paths
paths, store = sys.argv[1:-1], Path(sys.argv[-1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    import ctxstore.store.packstore  # noqa: F401
    repo, kind = Repository.init(store), "pack"
except Exception:
    repo, kind = Repository.memory(), "memory"
t = time.perf_counter()
report = import_paths(repo, paths)
dt = time.perf_counter() - t
repo.close()
if kind == "pack":
    size = sum(f.stat().st_size for f in (store / ".ctx").rglob("*") if f.is_file())
else:
    import zstandard
    c = zstandard.ZstdCompressor(level=3)
    size = sum(len(c.compress(repo.objects.get_raw(i)[1])) for i in repo.objects)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"seconds": dt, "events": report.events, "sessions": len(report.sessions),
       "warnings": len(report.warnings), "store_bytes": size, "store": kind,
       "peak_kb": peak, "base_kb": base}
if kind == "pack" and os.environ.get("CTX_BENCH_REPACK"):
    from ctxstore.maintenance.repack import repack
    repo = Repository.open(store / ".ctx")
    t = time.perf_counter()
    repack(repo)
    out["repack_seconds"] = time.perf_counter() - t
    repo.close()
    out["repacked_bytes"] = sum(f.stat().st_size for f in (store / ".ctx").rglob("*") if f.is_file())
print(json.dumps(out))
"""

_FLOOR = r"""
import json, sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        if line.strip():
            json.loads(line)
            n += 1
print(json.dumps({"lines": n, "seconds": time.perf_counter() - t}))
"""


def _rename(value, k: int):
    """A copy of a record with ids suffixed by `-k` and texts prefixed by `rk `."""
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if key in _ID_KEYS and isinstance(v, str):
                out[key] = f"{v}-{k}"
            elif key in ("text", "thinking", "content", "stdout") and isinstance(v, str):
                out[key] = f"r{k} {v}"
            else:
                out[key] = _rename(v, k)
        return out
    if isinstance(value, list):
        return [_rename(v, k) for v in value]
    return value


def generate_claude_code(path: Path, target_bytes: int) -> int:
    """Write a Claude Code transcript of about `target_bytes`; returns its size."""
    seed = [json.loads(x) for x in SEED.read_text(encoding="utf-8").splitlines() if x.strip()]
    written, k, last = 0, 0, None
    with open(path, "w", encoding="utf-8") as fh:
        while written < target_bytes:
            for rec in seed:
                rec = _rename(rec, k)
                rec["sessionId"] = "bench-session"
                if rec.get("parentUuid") is None and "uuid" in rec and last is not None:
                    rec["parentUuid"] = last
                if "uuid" in rec:
                    last = rec["uuid"]
                line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
                fh.write(line)
                written += len(line.encode("utf-8"))
            k += 1
    return path.stat().st_size


def _lines(paths: list[Path]) -> int:
    n = 0
    for path in paths:
        for f in ([path] if path.is_file() else sorted(path.rglob("*.jsonl"))):
            with open(f, "rb") as fh:
                n += sum(1 for line in fh if line.strip())
    return n


def _measure(name: str, paths: list[Path], raw_bytes: int, repack: bool = False) -> dict:
    env = dict(os.environ, **({"CTX_BENCH_REPACK": "1"} if repack else {}))
    with tempfile.TemporaryDirectory() as store:
        proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, paths), store],
                              capture_output=True, text=True, check=True, env=env,
                              cwd=Path(__file__).resolve().parents[1])
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = _lines(paths)
    extra = {}
    if "repacked_bytes" in r:
        extra = {"repacked_vs_raw": round(r["repacked_bytes"] / raw_bytes, 3),
                 "repack_s": round(r["repack_seconds"], 1)}
    return {"name": name, "raw_mb": round(raw_bytes / 1e6, 1), "lines": lines,
            "lines_per_s": round(lines / r["seconds"]), **extra, "events": r["events"],
            "sessions": r["sessions"], "warnings": r["warnings"],
            "seconds": round(r["seconds"], 2),
            "events_per_s": round(r["events"] / r["seconds"]),
            "mb_per_s": round(raw_bytes / 1e6 / r["seconds"], 1),
            "peak_rss_mb": round(r["peak_kb"] / 1024, 1),
            "rss_rise_mb": round((r["peak_kb"] - r["base_kb"]) / 1024, 1),
            "store": r["store"], "store_bytes": r["store_bytes"],
            "store_vs_raw": round(r["store_bytes"] / raw_bytes, 3)}


def _floor(path: Path) -> float:
    """Lines/s of reading the file and json.loads of each line: the parse floor."""
    proc = subprocess.run([sys.executable, "-c", _FLOOR, str(path)], capture_output=True,
                          text=True, check=True)
    r = json.loads(proc.stdout)
    return r["lines"] / r["seconds"]


def run(quick: bool) -> list[dict]:
    """Issue 19's targets, each measured in this run: the mixed corpus stores at <= 0.45x raw
    after `ctx repack`; the large file imports at >= 15k lines/s; its peak RSS is <= 1.3x that
    of a file a quarter its size."""
    rows = []
    if CORPUS.is_dir():
        raw = sum(f.stat().st_size for f in CORPUS.rglob("*.jsonl"))
        row = _measure("corpus (19 files)", [CORPUS], raw, repack=True)
        row["target"] = "repacked <= 0.45x"
        row["ok"] = row.get("repacked_vs_raw", 1) <= 0.45
        rows.append(row)
    else:
        rows.append({"file": "corpus", "note": f"corpus not found at {CORPUS}: set CTXSTORE_CORPUS"})
    small, large = (5_000_000, 20_000_000) if quick else (25_000_000, 100_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        measured = []
        for size in (small, large):
            path = Path(tmp) / f"bench-{size // 1_000_000}mb.jsonl"
            raw = generate_claude_code(path, size)
            row = _measure(f"generated claude-code {raw // 1_000_000} MB", [path], raw)
            if size == large:
                floor = _floor(path)
                row["parse_floor_lines_per_s"] = round(floor)
                row["target"] = ">= 15000 lines/s"
                row["ok"] = row["lines_per_s"] >= 15_000
            measured.append(row)
            rows.append(row)
            os.unlink(path)
        ratio = measured[1]["peak_rss_mb"] / measured[0]["peak_rss_mb"]
        rows.append({"name": f"peak RSS {large // 1_000_000} MB / {small // 1_000_000} MB import",
                     "ratio": round(ratio, 2), "target": "<= 1.3x", "ok": ratio <= 1.3})
    return rows


def main() -> None:
    from .table import run_and_print

    run_and_print(run, "import")


if __name__ == "__main__":
    main()
