"""The Claude Code hook as Claude Code runs it: whole `ctx hook claude-code` processes.

    .venv/bin/python -m benchmarks.bench_hooks          # 1k vs 100k lines (the first import
                                                        #   of 100k lines takes minutes)
    .venv/bin/python -m benchmarks.bench_hooks --quick  # 1k vs 10k lines

Per transcript size (synthetic Claude Code lines, benchmarks.bench_live_capture.synthetic),
medians of CALLS calls, side by side with `ctx --version` measured in the same run:
- nothing new: the hook fired with the transcript unchanged (most firings: Claude Code fires
  on every tool call and the transcript lags) — the fast path, a stat and a state file;
- nothing new, full path: the same call with --json, which skips the fast path (what every
  call with nothing new cost before it);
- 5 new lines: the in-process work (run_hook) and the whole process.
Targets (issue 33): nothing new <= 1.5x `ctx --version`; new lines cost the lines only (the
largest transcript's work within 1.2x of the 1k one).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .bench_live_capture import synthetic
from .table import run_and_print

CALLS = 15
CTX = [sys.executable, "-m", "ctxstore.cli"]


def _process_ms(cmd: list[str], stdin: str, cwd: Path, env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, text=True, check=True, cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL)
    return 1000 * (time.perf_counter() - t)


def _grow(transcript: Path, n: int, start: int) -> None:
    with open(transcript, "a", encoding="utf-8") as fh:
        for e in synthetic(n, start=start):
            fh.write(json.dumps(e) + "\n")


def _case(lines: int, tmp: Path, version_ms: float) -> dict:
    from ctxstore.integrations.claude_code.hook import run_hook
    from ctxstore.repo import Repository

    tmp.mkdir(parents=True)
    Repository.init(tmp).close()
    transcript = tmp / "bench-session.jsonl"
    _grow(transcript, lines, 0)
    hook = json.dumps({"session_id": "bench-session", "transcript_path": str(transcript),
                       "cwd": str(tmp), "hook_event_name": "PostToolUse", "tool_name": "Read"})
    env = {**os.environ, "CTX_DIR": str(tmp / ".ctx")}
    t = time.perf_counter()
    subprocess.run([*CTX, "hook", "claude-code"], input=hook, text=True, check=True, cwd=tmp,
                   env=env)  # the first call imports it all and writes the state file
    first = time.perf_counter() - t
    idle = [_process_ms([*CTX, "hook", "claude-code"], hook, tmp, env) for _ in range(CALLS)]
    full = [_process_ms([*CTX, "hook", "claude-code", "--json"], hook, tmp, env)
            for _ in range(CALLS)]
    work, whole = [], []
    at = lines
    for i in range(2 * CALLS):
        _grow(transcript, 5, at)
        at += 5
        if i % 2 == 0:
            t = time.perf_counter()
            res = run_hook(hook, str(tmp / ".ctx"))
            work.append(1000 * (time.perf_counter() - t))
            assert res["captured"][0]["lines"] == 5, res
        else:
            whole.append(_process_ms([*CTX, "hook", "claude-code"], hook, tmp, env))
    idle_ms = statistics.median(idle)
    return {"transcript lines": lines, "first call (imports all) s": first,
            "ctx --version ms": version_ms,
            "nothing new ms": idle_ms, "nothing new vs --version": idle_ms / version_ms,
            "nothing new, full path ms": statistics.median(full),
            "5 new lines: work ms": statistics.median(work),
            "5 new lines: process ms": statistics.median(whole)}


def run(quick: bool = False) -> list[dict]:
    large = 10_000 if quick else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        version = statistics.median(_process_ms([*CTX, "--version"], "", tmp, dict(os.environ))
                                    for _ in range(CALLS))
        rows = [_case(1000, tmp / "small", version), _case(large, tmp / "large", version)]
        base = rows[0]["5 new lines: work ms"]
        for r in rows:
            r["work vs 1k lines"] = r["5 new lines: work ms"] / base
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    run_and_print(run, "Claude Code hook: whole processes, `ctx --version` in the same run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
