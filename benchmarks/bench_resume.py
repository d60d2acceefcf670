"""Conversion cost of `ctx resume` / `ctx export --format HARNESS`, per 1,000 events.

For each session (the largest corpus session of Claude Code, Codex, pi and Gemini CLI, and a
generated Claude Code transcript of ~10 MB, 25 MB without --quick, imported first), best of 3
in this process on an in-memory repository:

- read: `read_transcript` (events -> neutral entries, messages and artifacts looked up)
- each target's `write` to memory (entries -> that harness's records, tool names mapped)
- baseline, same run: ctxstore's own neutral JSONL export of the same session
  (`importers.neutral.export`), the cheapest existing full walk that writes every event

    python -m benchmarks.bench_resume [--quick]     # --help: this text

Rows give ms per 1k events for read, for read + write per target, and the baseline, and the
ratio of read + write to the baseline. The corpus is `$CTXSTORE_CORPUS`, else
`../shared/corpus/sessions` beside the repository root.
"""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path

from benchmarks.bench_import import generate_claude_code
from benchmarks.table import run_and_print
from ctxstore.convert import TARGETS, read_transcript, target
from ctxstore.errors import InvalidInput
from ctxstore.importers import import_paths
from ctxstore.importers.neutral import export as neutral_export
from ctxstore.repo import Repository
from tests.corpus import corpus_root

REPEAT = 3


def _best(fn) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _largest(paths: list[Path]) -> tuple[Repository, str, int]:
    repo = Repository.memory()
    report = import_paths(repo, paths)
    tops = [s for s in report.sessions if repo.session(s.session).kind != "subagent"]
    best = max(tops, key=lambda s: s.events)
    return repo, best.session, best.events


def _targets() -> list[str]:
    out = []
    for name in TARGETS:
        try:
            target(name)
        except InvalidInput:
            continue  # a writer not in this build
        out.append(name)
    return out


def _row(label: str, repo: Repository, sid: str, events: int, names: list[str]) -> dict:
    per_k = 1000.0 / max(events, 1)
    tips = list(repo.branches(sid).values())
    base = _best(lambda: neutral_export(repo, sid, tips, io.StringIO()))
    read = _best(lambda: read_transcript(repo, sid))
    t = read_transcript(repo, sid)
    row = {"session": label, "events": events, "read ms/1k": read * 1000 * per_k}
    for name in names:
        module = target(name)
        write = _best(lambda m=module: m.write(t, io.BytesIO()))
        row[f"{name} ms/1k"] = (read + write) * 1000 * per_k
        row[f"{name} / baseline"] = (read + write) / base
    row["baseline: neutral export ms/1k"] = base * 1000 * per_k
    return row


def run(quick: bool) -> list[dict]:
    root = corpus_root()
    names = _targets()
    rows = []
    for harness in ("claude-code", "codex", "pi", "gemini"):
        repo, sid, events = _largest([root / harness])
        rows.append(_row(f"corpus {harness}", repo, sid, events, names))
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "generated.jsonl"
        size = generate_claude_code(big, (10 if quick else 25) * 1024 * 1024)
        repo, sid, events = _largest([big])
        rows.append(_row(f"generated Claude Code {size / 1e6:.0f} MB", repo, sid, events, names))
    return rows


def main() -> None:
    run_and_print(run, "Conversion cost per 1k events")


if __name__ == "__main__":
    main()
