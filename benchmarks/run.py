"""Run every benchmark and print one table per area, baselines side by side.

    .venv/bin/python -m benchmarks.run            # full sizes (several minutes)
    .venv/bin/python -m benchmarks.run --quick    # smaller sizes, for a smoke run
    .venv/bin/python -m benchmarks.run dag store  # only some areas

Figures go into docs/benchmarks.md by hand, with the date and machine.
"""

from __future__ import annotations

import importlib
import platform
import sys
import time

from .table import print_rows

AREAS = {
    "store": "benchmarks.bench_store",
    "dag": "benchmarks.bench_dag",
    "context": "benchmarks.bench_context",
    "compaction": "benchmarks.bench_compaction",
    "import": "benchmarks.bench_import",
    "harnesses": "benchmarks.bench_harnesses",
    "transfer": "benchmarks.bench_transfer",
    "remote": "benchmarks.bench_remote",
    "langgraph": "benchmarks.bench_langgraph",
    "openai-agents": "benchmarks.bench_openai_agents",
    "live": "benchmarks.bench_live_capture",
    "hooks": "benchmarks.bench_hooks",
    "cli": "benchmarks.bench_cli",
    "retrieval": "benchmarks.bench_retrieval",
    "view": "benchmarks.bench_view",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    chosen = [a for a in argv if not a.startswith("-")] or list(AREAS)
    print(f"# ctxstore benchmarks ({'quick' if quick else 'full'}) — Python "
          f"{platform.python_version()}, {platform.machine()}, {time.strftime('%Y-%m-%d')}")
    for area in chosen:
        try:
            mod = importlib.import_module(AREAS[area])
        except KeyError:
            print(f"unknown area {area!r}; choose from {', '.join(AREAS)}")
            return 2
        except ImportError as exc:
            print(f"\n## {area}\n\nskipped: {exc}")
            continue
        t = time.perf_counter()
        rows = mod.run(quick=quick)
        print_rows(rows, f"{area} ({time.perf_counter() - t:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
