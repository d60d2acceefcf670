"""One corpus transcript imported alone into a fresh temporary store, bound to its main session.

Shared by the benchmarks that measure real sessions (bench_context's budget fill,
bench_compaction's carried files): each transcript is judged on its own store, as a user who
imports it with `ctx init; ctx import FILE` would see it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ctxstore import ContextManager, Repository
from ctxstore.importers import import_paths
from tests.corpus import corpus_root


def corpus_files() -> list[Path]:
    """Every transcript of the corpus (subagent files included), sorted by path."""
    root = corpus_root()
    return sorted(root.rglob("*.jsonl")) if root.is_dir() else []


def longest(n: int) -> list[Path]:
    """The `n` transcripts whose main session has the most events (subagent files and inline
    subagents do not count: a big file can hold a short main session)."""
    sizes = []
    for f in corpus_files():
        if "subagents" in f.parts:
            continue
        with imported(f) as cm:
            sizes.append((-cm.repo.graph.event(cm.tip).generation, f.name, f))
    return [f for *_, f in sorted(sizes)[:n]]


@contextmanager
def imported(path: Path) -> Iterator[ContextManager]:
    """A ContextManager on the main branch of the file's main session, in a throwaway store."""
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-corpus-"))
    store = Repository.init(tmp)
    try:
        report = import_paths(store, [str(path)])
        sessions = [s for s in report.sessions if s.kind != "subagent"] or report.sessions
        main = max(sessions, key=lambda s: s.events)
        yield ContextManager(store, main.session, "main")
    finally:
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
