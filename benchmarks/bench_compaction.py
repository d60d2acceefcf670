"""Issue 5's measurement: compaction on the real transcripts of ../shared/corpus/sessions.

Each imported session (main and subagent) is compacted with the structured summarizer, keeping
2000 recent tokens; the table reports tokens before/after and which checks pass or fail.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ctxstore import ContextManager, Store
from ctxstore.compaction import compact
from ctxstore.errors import CompactionRejected
from ctxstore.importers import import_paths

from .table import run_and_print

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "sessions"


def run(quick: bool = False) -> list[dict]:
    if not CORPUS.exists():
        return [{"benchmark": "compaction", "note": f"corpus not found at {CORPUS}"}]
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-compact-"))
    rows: list[dict] = []
    try:
        store = Store.init(tmp)
        report = import_paths(store, [str(CORPUS)])
        for st in report.sessions:
            for branch in sorted(st.branches)[:1 if quick else None]:
                cm = ContextManager(store, st.session, branch)
                row = {"benchmark": "compaction", "file": Path(st.file).name[:44],
                       "kind": st.kind, "branch": branch, "events": st.events}
                try:
                    res = compact(cm, keep_recent_tokens=2000, dry_run=True)
                except CompactionRejected as exc:
                    rows.append({**row, "result": str(exc)[:60]})
                    continue
                if res.summarized == 0:  # a dry run reports instead of raising
                    rows.append({**row, "checks": "nothing to compact (under 2000 tokens)"})
                    continue
                failed = [c.rule for c in res.failed]
                rows.append({**row, "summarized": res.summarized, "tokens before": res.tokens_before,
                             "tokens after": res.tokens_after,
                             "ratio": res.tokens_after / max(res.tokens_before, 1),
                             "checks": "all pass" if not failed else "FAIL: " + ", ".join(failed)})
        store.close()
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    run_and_print(run)


if __name__ == "__main__":
    main()
