"""Compaction on the real transcripts (issues 5 and 12): what a summary carries.

Each corpus transcript is imported alone into a fresh store and its main session's main branch
is compacted (dry run, structured summarizer, 2000 recent tokens kept). Per transcript: tokens
before/after, the checks (pass / FAIL / n/a), and how many of the transcript's own modified
files, failed tool calls and newest plan steps the summary carries — the transcript's figures
come from the independent oracle (tests/oracles/transcripts.py), not from ctxstore, and count
the main line. A harness compaction already in the transcript bounds what a new compaction
sees (its range starts after it), so "in transcript" can exceed what any summary could carry;
the "in range" figures count what the replaced range itself holds, per the projected state.

Run alone: `.venv/bin/python -m benchmarks.bench_compaction [--quick]`.
"""

from __future__ import annotations

from ctxstore.compaction import CallableSummarizer, StructuredSummarizer, compact
from ctxstore.errors import CompactionRejected
from tests.oracles.transcripts import MAIN, analyze, files_covered

from .corpus_import import corpus_files, imported
from .table import run_and_print

KEEP = 2000


def _norm(s: str) -> str:
    return " ".join(str(s).split()).lower()


def _carried(out: dict, transcript) -> dict:
    listed = [f.get("path", "") for f in out["files"].get("modified", ())]
    expected = transcript.modified_files([MAIN])
    n_files, _ = files_covered(expected, listed)
    failed = [c.id for c in transcript.calls if c.lane == MAIN and c.status == "error"]
    ids = {str(e.get("tool_call_id", "")) for e in out["errors"]}
    steps = transcript.plan_steps() or []
    prog = out["progress"]
    text = _norm("\n".join(map(str, [*prog.get("done", ()), *prog.get("in_progress", ()),
                                     *out["next_steps"]])))
    return {"files carried": f"{n_files}/{len(expected)}",
            "errors carried": f"{sum(1 for c in failed if c in ids)}/{len(failed)}",
            "plan steps carried": f"{sum(1 for s in steps if _norm(s) in text)}/{len(steps)}"}


def run(quick: bool = False) -> list[dict]:
    files = [f for f in corpus_files() if not quick or "subagents" not in f.parts]
    if not files:
        return [{"benchmark": "compaction", "note": "corpus not found (tests/corpus.py)"}]
    rows: list[dict] = []
    for path in files:
        transcript = analyze(path)
        with imported(path) as cm:
            seen: dict = {}

            def capture(req, seen=seen):
                out = StructuredSummarizer()(req)
                seen["out"], seen["req"] = out, req
                return out

            row = {"benchmark": "compaction", "transcript": path.name[:40],
                   "events": cm.repo.graph.event(cm.tip).generation}
            try:
                res = compact(cm, keep_recent_tokens=KEEP, dry_run=True,
                              summarizer=CallableSummarizer(capture, "structured"))
            except CompactionRejected as exc:
                rows.append({**row, "checks": f"refused: {str(exc)[:60]}"})
                continue
            if res.noop:
                rows.append({**row, "checks": f"nothing to compact (under {KEEP} tokens)"})
                continue
            status = [c.status for c in res.checks]
            rs = seen["req"]["range_state"]
            rows.append({
                **row, "summarized": res.summarized, "tokens before": res.tokens_before,
                "tokens after": res.tokens_after,
                "checks": (f"{status.count('pass')} pass, {status.count('n/a')} n/a"
                           + (f", FAIL: {', '.join(c.rule for c in res.failed)}" if res.failed else "")),
                "files in range": len(rs["files"]["modified"]),
                "errors in range": len(rs["errors"]),
                **_carried(seen["out"], transcript)})
    return rows


def main() -> None:
    run_and_print(run)


if __name__ == "__main__":
    main()
