"""Issue 14's benchmark: whole `ctx` processes, as a user runs them.

    .venv/bin/python -m benchmarks.bench_cli                  # full: 100k events, 9 runs each
    .venv/bin/python -m benchmarks.bench_cli --quick          # 20k events, 3 runs each
    .venv/bin/python -m benchmarks.bench_cli --before DIR     # also measure the checkout in DIR

One table, every row measured in this run:

- start-up: `ctx --version`, `status`, `sessions`, `log -n 50`, `show HEAD`, `state` on a
  1k-event session, against the baseline `python -c "import click, blake3, zstandard,
  msgpack"` (the interpreter plus the libraries any ctx command needs). Target: <= 1.6x.
- store size: `log -n 50`, `status`, `show HEAD` on a 100k-event session (one active pack,
  under the 32 MiB seal size) against the same on a 1k-event session, wall time and peak RSS.
  Target: <= 1.2x in both.

Each figure is the median of several runs of a fresh process, after one warm-up run, with
bytecode cached (PYTHONDONTWRITEBYTECODE is removed from the children's environment and the
sources are compiled first). `cpu ms` (user + sys of the child) is printed beside wall time:
on a loaded machine it is the steadier of the two.

`--before DIR` measures another checkout (e.g. `git worktree add /tmp/h14a-before e91a150`)
with this venv's interpreter and libraries, against the same stores: the stores are written by
this checkout; an older reader that does not know partial indexes scans the whole active pack,
as it always did.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .table import run_and_print

BASELINE = "import click, blake3, zstandard, msgpack"
STARTUP = [["--version"], ["status"], ["sessions"], ["log", "-n", "50"], ["show", "HEAD"],
           ["state"]]
SIZE = [["log", "-n", "50"], ["status"], ["show", "HEAD"]]
HERE = Path(__file__).resolve().parent.parent


def _events(n: int):
    for i in range(n):
        kind = ("UserPromptSubmitted", "ToolCallRequested", "ToolCallFinished")[i % 3]
        payload = ({"text": f"step {i}: run the tests"} if kind == "UserPromptSubmitted" else
                   {"tool_call_id": f"call_{i // 3}", "name": "bash",
                    "args": {"command": f"pytest -x tests/test_{i % 40}.py"}}
                   if kind == "ToolCallRequested" else
                   {"tool_call_id": f"call_{i // 3}", "preview": f"ok {i} " * 20})
        yield json.dumps({"type": kind, "actor": "user" if i % 3 == 0 else "tool",
                          "payload": payload})


def _session(root: Path, n: int) -> None:
    from ctxstore.porcelain import sessions as ps
    from ctxstore.repo import Repository

    with Repository.init(root) as repo:
        repo.new_session(f"bench {n}", nonce=f"bench-cli-{n}")
        ps.append_batch(repo, _events(n - 1))


def _env(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "CTX_DIR")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def _prepare_tree(tree: Path) -> None:
    """Make another checkout importable as `ctxstore` with its own `ctxstore.cli`: the
    installed (editable) package maps ctxstore.cli to this checkout's cli/ directory."""
    link = tree / "ctxstore" / "cli"
    if not link.exists():
        link.symlink_to(tree / "cli", target_is_directory=True)


def _compile(tree: Path) -> None:
    for sub in ("ctxstore", "cli"):
        compileall.compile_dir(str(tree / sub), quiet=1)


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, cpu s, peak RSS KiB) of one process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err.strip()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _measure(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    _once(argv, env)  # warm-up: bytecode written, files in the page cache
    samples = [_once(argv, env) for _ in range(runs)]
    return {"wall": statistics.median(s[0] for s in samples),
            "cpu": statistics.median(s[1] for s in samples),
            "rss": statistics.median(s[2] for s in samples)}


def _ctx(store: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from ctxstore.cli.main import main; "
            "sys.argv[0] = 'ctx'; main()", "--store", str(store)]


def run(quick: bool = False, before: Path | None = None) -> list[dict]:
    small, large = 1_000, (20_000 if quick else 100_000)
    runs = 3 if quick else 9
    trees: list[tuple[str, Path | None]] = [("after", None)]
    if before is not None:
        _prepare_tree(before)
        _compile(before)
        trees.insert(0, ("before", before))
    _compile(HERE)
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-cli-"))
    rows: list[dict] = []
    try:
        _session(tmp / "small", small)
        _session(tmp / "large", large)
        base = _measure([sys.executable, "-c", BASELINE], _env(None), runs)
        rows.append({"benchmark": "start-up", "command": f'python -c "{BASELINE}"',
                     "code": "baseline", "wall ms": base["wall"] * 1e3,
                     "cpu ms": base["cpu"] * 1e3, "peak RSS MiB": base["rss"] / 1024})
        for label, tree in trees:
            env = _env(tree)
            for args in STARTUP:
                m = _measure(_ctx(tmp / "small") + args, env, runs)
                ratio = m["wall"] / base["wall"]
                rows.append({"benchmark": "start-up", "command": "ctx " + " ".join(args),
                             "code": label, "wall ms": m["wall"] * 1e3, "cpu ms": m["cpu"] * 1e3,
                             "peak RSS MiB": m["rss"] / 1024, "x baseline": ratio,
                             "cpu x baseline": m["cpu"] / base["cpu"], "target": "<= 1.6x",
                             "ok": ratio <= 1.6})
        for label, tree in trees:
            env = _env(tree)
            for args in SIZE:
                a = _measure(_ctx(tmp / "small") + args, env, runs)
                b = _measure(_ctx(tmp / "large") + args, env, runs)
                wall, rss = b["wall"] / a["wall"], b["rss"] / a["rss"]
                rows.append({"benchmark": f"{small // 1000}k vs {large // 1000}k events",
                             "command": "ctx " + " ".join(args), "code": label,
                             "wall ms": f"{a['wall'] * 1e3:.0f} / {b['wall'] * 1e3:.0f}",
                             "cpu ms": f"{a['cpu'] * 1e3:.0f} / {b['cpu'] * 1e3:.0f}",
                             "peak RSS MiB": f"{a['rss'] / 1024:.1f} / {b['rss'] / 1024:.1f}",
                             "wall ratio": wall, "RSS ratio": rss, "target": "<= 1.2x",
                             "ok": wall <= 1.2 and rss <= 1.2})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    before = None
    if "--before" in sys.argv:
        before = Path(sys.argv[sys.argv.index("--before") + 1]).resolve()
    run_and_print(lambda quick: run(quick, before), "ctx start-up and store size")


if __name__ == "__main__":
    main()
