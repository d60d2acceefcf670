"""The Claude Code hook as Claude Code runs it: whole `ctx hook claude-code` processes.

    .venv/bin/python -m benchmarks.bench_hooks          # 1k vs 100k lines (the first import
                                                        #   of 100k lines takes minutes)
    .venv/bin/python -m benchmarks.bench_hooks --quick  # 1k vs 10k lines

Per transcript size (synthetic Claude Code lines, benchmarks.bench_live_capture.synthetic),
medians of CALLS rounds, side by side with `ctx --version` measured in the same rounds (each
round runs every figure of both sizes back to back, so the machine's load moves them
together):
- nothing new: the hook fired with the transcript unchanged (most firings: Claude Code fires
  on every tool call and the transcript lags) — the fast path, a stat and a state file;
- nothing new, full path: the same call with --json, which skips the fast path (what every
  call with nothing new cost before it);
- 5 new lines: the in-process work (run_hook, WORK_PER_ROUND per round) and the whole
  process.
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
WORK_PER_ROUND = 3  # in-process captures per round: the work figure's noise is the machine's
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


class _Case:
    """One store and transcript of `lines` lines, imported by a first hook call."""

    def __init__(self, lines: int, tmp: Path) -> None:
        from ctxstore.repo import Repository

        tmp.mkdir(parents=True)
        Repository.init(tmp).close()
        self.lines, self.tmp, self.at = lines, tmp, lines
        self.transcript = tmp / "bench-session.jsonl"
        _grow(self.transcript, lines, 0)
        self.hook = json.dumps({"session_id": "bench-session", "cwd": str(tmp),
                                "transcript_path": str(self.transcript),
                                "hook_event_name": "PostToolUse", "tool_name": "Read"})
        self.env = {**os.environ, "CTX_DIR": str(tmp / ".ctx")}
        t = time.perf_counter()  # the first call imports it all and writes the state file
        self.process([])
        self.first = time.perf_counter() - t
        self.ms: dict[str, list[float]] = {k: [] for k in ("version", "idle", "full", "work",
                                                           "whole")}

    def process(self, extra: list[str]) -> float:
        return _process_ms([*CTX, "hook", "claude-code", *extra], self.hook, self.tmp, self.env)

    def one_round(self) -> None:
        """Each figure once, back to back, so a change of the machine's load between
        rounds moves them together (the ratios are taken within the run)."""
        from ctxstore.integrations.claude_code.hook import run_hook

        self.ms["version"].append(_process_ms([*CTX, "--version"], "", self.tmp, self.env))
        self.ms["idle"].append(self.process([]))
        self.ms["full"].append(self.process(["--json"]))
        for _ in range(WORK_PER_ROUND):
            _grow(self.transcript, 5, self.at)
            self.at += 5
            t = time.perf_counter()
            res = run_hook(self.hook, str(self.tmp / ".ctx"))
            self.ms["work"].append(1000 * (time.perf_counter() - t))
            assert res["captured"][0]["lines"] == 5, res
        _grow(self.transcript, 5, self.at)
        self.at += 5
        self.ms["whole"].append(self.process([]))

    def row(self) -> dict:
        m = {k: statistics.median(v) for k, v in self.ms.items()}
        return {"transcript lines": self.lines, "first call (imports all) s": self.first,
                "ctx --version ms": m["version"], "nothing new ms": m["idle"],
                "nothing new vs --version": m["idle"] / m["version"],
                "nothing new, full path ms": m["full"], "5 new lines: work ms": m["work"],
                "5 new lines: process ms": m["whole"]}


def run(quick: bool = False) -> list[dict]:
    large = 10_000 if quick else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        cases = [_Case(1000, tmp / "small"), _Case(large, tmp / "large")]
        for _ in range(CALLS):  # the sizes alternate too: both see the same load
            for c in cases:
                c.one_round()
        rows = [c.row() for c in cases]
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
