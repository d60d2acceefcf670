"""Import benchmark: the session corpus and a generated large Claude Code transcript.

Each measurement runs `import_paths` in a fresh subprocess against an on-disk repository (the
pack store; the memory store when the pack store is not built), so peak RSS
(`ru_maxrss`) is that import's alone. Reported per row: events/s, MB/s, peak RSS and its rise
over the interpreter baseline, and store bytes / raw bytes.

The generated file repeats the genuine 2.0.42 transcript with fresh uuids, tool ids and
message ids and a per-copy prefix on every text, so content addressing cannot dedupe copies.

    python -m benchmarks.bench_import [--quick]
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
    size = sum(len(c.compress(repo.store.get_raw(i)[1])) for i in repo.store)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": dt, "events": report.events, "sessions": len(report.sessions),
                  "warnings": len(report.warnings), "store_bytes": size, "store": kind,
                  "peak_kb": peak, "base_kb": base}))
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


def _measure(name: str, paths: list[Path], raw_bytes: int) -> dict:
    with tempfile.TemporaryDirectory() as store:
        proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, paths), store],
                              capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parents[1])
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"name": name, "raw_mb": round(raw_bytes / 1e6, 1), "events": r["events"],
            "sessions": r["sessions"], "warnings": r["warnings"],
            "seconds": round(r["seconds"], 2),
            "events_per_s": round(r["events"] / r["seconds"]),
            "mb_per_s": round(raw_bytes / 1e6 / r["seconds"], 1),
            "peak_rss_mb": round(r["peak_kb"] / 1024, 1),
            "rss_rise_mb": round((r["peak_kb"] - r["base_kb"]) / 1024, 1),
            "store": r["store"], "store_bytes": r["store_bytes"],
            "store_vs_raw": round(r["store_bytes"] / raw_bytes, 3)}


def run(quick: bool) -> list[dict]:
    rows = []
    if CORPUS.is_dir():
        raw = sum(f.stat().st_size for f in CORPUS.rglob("*.jsonl"))
        rows.append(_measure("corpus (19 files)", [CORPUS], raw))
    else:
        rows.append({"file": "corpus", "note": f"corpus not found at {CORPUS}: set CTXSTORE_CORPUS"})
    sizes = [10_000_000] if quick else [10_000_000, 100_000_000]
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"bench-{size // 1_000_000}mb.jsonl"
            raw = generate_claude_code(path, size)
            rows.append(_measure(f"generated claude-code {raw // 1_000_000} MB", [path], raw))
            os.unlink(path)
    return rows


def main() -> None:
    from .table import run_and_print

    run_and_print(run, "import")


if __name__ == "__main__":
    main()
