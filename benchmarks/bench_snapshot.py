"""Issue 15's snapshot benchmark: `ctx snapshot` of a 10k-file tree the first time and after
one file changed (target: the second <= 10% of the first), and restore.

Run: `.venv/bin/python -m benchmarks.bench_snapshot [--quick]` (--quick: 2k files).
Baselines measured in the same run on the same tree: real `git add -A && git write-tree`
into a fresh repository (first time, after one change), and `git read-tree` +
`git checkout-index -a` for a full checkout. Also measured: the one-change snapshot without
the stat cache (libgit2 re-reads every file), which is what reusing stat data saves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ctxstore.manager import ContextManager
from ctxstore.repo import Repository

from .table import run_and_print


def _tree(root: Path, files: int) -> int:
    """FILES files of 0.2-4 KiB in 100 files per directory, two levels deep; returns bytes."""
    total = 0
    for i in range(files):
        d = root / f"pkg{i // 1000}" / f"mod{(i // 100) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        body = (f"# file {i}\n" + f"def f_{i}(x):\n    return x * {i}\n" * (5 + i % 100)).encode()
        (d / f"f{i}.py").write_bytes(body)
        total += len(body)
    (root / ".gitignore").write_text("*.pyc\n__pycache__/\n")
    return total


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env=env).stdout


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(quick: bool = False) -> list[dict]:
    n = 2_000 if quick else 10_000
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-snap-"))
    rows: list[dict] = []
    try:
        root = tmp / "project"
        root.mkdir()
        raw = _tree(root, n)
        changed = root / "pkg0" / "mod3" / "f342.py"
        repo = Repository.init(root)
        cm = ContextManager.start(repo, title="bench")
        first = _timed(lambda: cm.snapshot_workspace())
        store_after_first = _dir_bytes(root / ".ctx" / "objects")
        git_after_first = _dir_bytes(root / ".ctx" / "workspace.git")
        unchanged = _timed(lambda: cm.snapshot_workspace())
        changed.write_text("changed\n")
        second = _timed(lambda: cm.snapshot_workspace())
        changed.write_text("changed again\n")
        (root / ".ctx" / "workspace.git" / "index").unlink()
        no_cache = _timed(lambda: cm.snapshot_workspace())
        snaps = [eid for eid, ev in repo.graph.first_parents(cm.tip)
                 if ev.type == "WorkspaceSnapshot"]
        restore_one = _timed(lambda: cm.restore_workspace(snaps[-1], force=True))
        dest = tmp / "restored"
        dest.mkdir()
        restore_all = _timed(lambda: cm.restore_workspace(snaps[-1], root=str(dest)))
        restored = sum(1 for p in dest.rglob("*") if p.is_file())
        repo.close()

        # baselines: real git on a copy of the same tree
        base = tmp / "gitbase"
        shutil.copytree(root, base, ignore=shutil.ignore_patterns(".ctx"))
        _git(base, "init", "-q")
        g_first = _timed(lambda: (_git(base, "add", "-A"), _git(base, "write-tree")))
        (base / changed.relative_to(root)).write_text("changed\n")
        g_second = _timed(lambda: (_git(base, "add", "-A"), _git(base, "write-tree")))
        tree = _git(base, "write-tree").strip()
        out = tmp / "git-checkout"
        env = dict(os.environ, GIT_INDEX_FILE=str(tmp / "bench-index"))
        g_checkout = _timed(lambda: (_git(base, "read-tree", tree, env=env),
                                     _git(base, "checkout-index", "-a", f"--prefix={out}/",
                                          env=env)))

        ratio = second / first
        rows += [
            {"operation": f"first snapshot, {n:,} files ({raw / 2**20:.1f} MiB)",
             "ctx s": first, "git s": g_first, "ctx/git": first / g_first},
            {"operation": "snapshot after one file changed", "ctx s": second, "git s": g_second,
             "ctx/git": second / g_second, "second/first": ratio, "target": "<= 0.10",
             "ok": ratio <= 0.10},
            {"operation": "snapshot, nothing changed", "ctx s": unchanged},
            {"operation": "one file changed, stat cache deleted (every file re-read)",
             "ctx s": no_cache, "second/first": no_cache / first},
            {"operation": "restore: 1 file back (snapshots before and after included)",
             "ctx s": restore_one},
            {"operation": f"restore: all {restored:,} files into an empty directory",
             "ctx s": restore_all, "git s": g_checkout, "ctx/git": restore_all / g_checkout},
            {"operation": "bytes after the first snapshot: object store / workspace.git / raw",
             "bytes": f"{store_after_first:,} / {git_after_first:,} / {raw:,}"},
        ]
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    run_and_print(run)


if __name__ == "__main__":
    main()
