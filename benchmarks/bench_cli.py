"""Issue 14's benchmark: whole `ctx` processes, as a user runs them.

    .venv/bin/python -m benchmarks.bench_cli                  # full: 100k events, 9 runs each
    .venv/bin/python -m benchmarks.bench_cli --quick          # 20k events, 3 runs each
    .venv/bin/python -m benchmarks.bench_cli --before DIR     # also measure the checkout in DIR
    .venv/bin/python -m benchmarks.bench_cli --instructions   # also count instructions (valgrind)

One table, every row measured in this run:

- start-up: `ctx --version`, `status`, `sessions`, `log -n 50`, `show HEAD`, `state` on a
  1k-event session, against the baseline `python -c "import click, blake3, zstandard,
  msgpack"` (the interpreter plus the libraries any ctx command needs). Target: <= 1.6x.
- store size: `log -n 50`, `status`, `show HEAD` on a 100k-event session (one active pack,
  under the 32 MiB seal size) against the same on a 1k-event session, wall time and peak RSS.
  Target: <= 1.2x in both.

Each figure is the median of several runs of a fresh process, after one warm-up run, with
bytecode cached (PYTHONDONTWRITEBYTECODE is removed from the children's environment and the
sources are compiled first). Each command alternates with what it is compared with (the
baseline, or the 1k-event run), so that load from other processes weighs on both alike.
`cpu ms` (user + sys of the child) is printed beside wall time: on a loaded machine it is the
steadier of the two. Peak RSS is the child's ru_maxrss; the children are forked by a small
helper process, since ru_maxrss counts the memory of the process forked from.

`--instructions` adds `instr x baseline` to the start-up rows: instructions executed by the
whole process, counted once under valgrind's callgrind, over the baseline's. Unlike wall and cpu
time it does not move with the load other processes put on the machine, so it is the figure to
compare across runs on a shared machine.

`--before DIR` measures another checkout (e.g. `git worktree add /tmp/h14a-before e91a150`)
with this venv's interpreter and libraries, on stores that checkout writes itself (an older
reader cannot read every object newer code writes, e.g. operation objects).
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


def _session_with(tree: Path | None, root: Path, n: int) -> None:
    """The session written by the code in `tree` (None: this checkout): an older checkout may
    not read what newer code writes (e.g. operation objects), so each reads its own stores."""
    if tree is None:
        _session(root, n)
        return
    events = root.parent / f"events-{n}.jsonl"
    events.write_text("\n".join(_events(n - 1)) + "\n")
    code = ("import sys; from pathlib import Path; from ctxstore.porcelain import sessions as ps;"
            " from ctxstore.repo import Repository\n"
            "with Repository.init(Path(sys.argv[1])) as repo:\n"
            "    repo.new_session('bench', nonce='bench-cli-' + sys.argv[3])\n"
            "    ps.append_batch(repo, open(sys.argv[2]).read().splitlines())\n")
    subprocess.run([sys.executable, "-c", code, str(root), str(events), str(n)], env=_env(tree),
                   cwd=str(root.parent), check=True)


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


#: Runs the measured processes. Peak RSS (ru_maxrss) of a process includes the memory of the
#: process it was forked from, up to its exec: children of this benchmark (which holds the
#: stores it built) would all report its size. A small interpreter started first forks them.
SPAWNER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    argv, env, cwd = json.loads(line)
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    print(json.dumps([wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                      os.waitstatus_to_exitcode(status), err.decode(errors="replace")]),
          flush=True)
"""


class Spawner:
    def __init__(self, cwd: Path) -> None:
        self.cwd = str(cwd)  # not a checkout: `python -c` puts the cwd first on sys.path
        self.proc = subprocess.Popen([sys.executable, "-c", SPAWNER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def once(self, argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
        """(wall s, cpu s, peak RSS KiB) of one process."""
        self.proc.stdin.write(json.dumps([argv, env, self.cwd]) + "\n")
        self.proc.stdin.flush()
        wall, cpu, rss, code, err = json.loads(self.proc.stdout.readline())
        if code != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {code}: {err.strip()}")
        return wall, cpu, rss

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _stats(samples: list[tuple[float, float, int]]) -> dict[str, float]:
    return {"wall": statistics.median(s[0] for s in samples),
            "cpu": statistics.median(s[1] for s in samples),
            "rss": statistics.median(s[2] for s in samples)}


def _pair(spawner: Spawner, a: tuple[list[str], dict], b: tuple[list[str], dict],
          runs: int) -> tuple[list, list]:
    """Samples of two commands, run alternately (after one warm-up each: bytecode written,
    files in the page cache), so that load from other processes weighs on both alike."""
    spawner.once(*a)
    spawner.once(*b)
    sa, sb = [], []
    for _ in range(runs):
        sa.append(spawner.once(*a))
        sb.append(spawner.once(*b))
    return sa, sb


def _instructions(argv: list[str], env: dict[str, str], cwd: Path) -> int | None:
    """Instructions one run of ARGV executes (callgrind), or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    res = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         env=env, cwd=str(cwd), capture_output=True, text=True, check=True)
    found = [line for line in res.stderr.splitlines() if "Collected :" in line]
    return int(found[-1].rsplit(":", 1)[1]) if found else None


def _ctx(store: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from ctxstore.cli.main import main; "
            "sys.argv[0] = 'ctx'; main()", "--store", str(store)]


def run(quick: bool = False, before: Path | None = None, instructions: bool = False) -> list[dict]:
    small, large = 1_000, (20_000 if quick else 100_000)
    runs = 3 if quick else 9
    trees: list[tuple[str, Path | None]] = [("after", None)]
    if before is not None:
        _prepare_tree(before)
        _compile(before)
        trees.insert(0, ("before", before))
    _compile(HERE)
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-cli-"))
    spawner = Spawner(tmp)
    rows: list[dict] = []
    try:
        for label, tree in trees:
            (tmp / label).mkdir()
            _session_with(tree, tmp / label / "small", small)
            _session_with(tree, tmp / label / "large", large)
        baseline = ([sys.executable, "-c", BASELINE], _env(None))
        base_instr = _instructions(*baseline, tmp) if instructions else None
        base_samples: list = []
        startup: list[dict] = []
        for label, tree in trees:
            env = _env(tree)
            for args in STARTUP:
                sb, sm = _pair(spawner, baseline, (_ctx(tmp / label / "small") + args, env),
                                runs)
                base_samples += sb
                b, m = _stats(sb), _stats(sm)
                ratio = m["wall"] / b["wall"]
                instr = (_instructions(_ctx(tmp / label / "small") + args, env, tmp)
                         if base_instr else None)
                startup.append({"benchmark": "start-up", "command": "ctx " + " ".join(args),
                                "code": label, "wall ms": m["wall"] * 1e3,
                                "cpu ms": m["cpu"] * 1e3, "peak RSS MiB": m["rss"] / 1024,
                                "x baseline": ratio, "cpu x baseline": m["cpu"] / b["cpu"],
                                **({"instr x baseline": instr / base_instr} if instr else {}),
                                "target": "<= 1.6x", "ok": ratio <= 1.6})
        base = _stats(base_samples)
        rows.append({"benchmark": "start-up", "command": f'python -c "{BASELINE}"',
                     "code": "baseline", "wall ms": base["wall"] * 1e3,
                     "cpu ms": base["cpu"] * 1e3, "peak RSS MiB": base["rss"] / 1024})
        rows += startup
        for label, tree in trees:
            env = _env(tree)
            for args in SIZE:
                sa, sb = _pair(spawner, (_ctx(tmp / label / "small") + args, env),
                               (_ctx(tmp / label / "large") + args, env), runs)
                a, b = _stats(sa), _stats(sb)
                wall, rss = b["wall"] / a["wall"], b["rss"] / a["rss"]
                rows.append({"benchmark": f"{small // 1000}k vs {large // 1000}k events",
                             "command": "ctx " + " ".join(args), "code": label,
                             "wall ms": f"{a['wall'] * 1e3:.0f} / {b['wall'] * 1e3:.0f}",
                             "cpu ms": f"{a['cpu'] * 1e3:.0f} / {b['cpu'] * 1e3:.0f}",
                             "peak RSS MiB": f"{a['rss'] / 1024:.1f} / {b['rss'] / 1024:.1f}",
                             "wall ratio": wall, "cpu ratio": b["cpu"] / a["cpu"],
                             "RSS ratio": rss, "target": "<= 1.2x",
                             "ok": wall <= 1.2 and rss <= 1.2})
        return rows
    finally:
        spawner.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    before = None
    if "--before" in sys.argv:
        before = Path(sys.argv[sys.argv.index("--before") + 1]).resolve()
    instructions = "--instructions" in sys.argv
    run_and_print(lambda quick: run(quick, before, instructions), "ctx start-up and store size")


if __name__ == "__main__":
    main()
