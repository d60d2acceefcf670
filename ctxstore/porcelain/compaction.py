"""compact and merge at the CLI's level: resolve the branch, pick the summarizer, run."""

from __future__ import annotations

from ..compaction import (
    CommandSummarizer,
    CompactionResult,
    StructuredSummarizer,
    compact,
    merge_branch,
)
from ..errors import BadRevision
from ..objects import Compaction
from ..repo import Repository
from .context import manager_at


def _summarizer(command: str | None):
    return CommandSummarizer(command) if command else StructuredSummarizer()


def compact_branch(repo: Repository, rev: str | None = None, *, keep_recent_tokens: int | None = None,
                   summarizer_command: str | None = None, dry_run: bool = False) -> CompactionResult:
    cm, eid = manager_at(repo, rev)
    if eid != cm.tip:
        raise BadRevision(f"{rev} is not a branch tip: compact a branch (e.g. `ctx compact main`)")
    return compact(cm, None, keep_recent_tokens=keep_recent_tokens,
                   summarizer=_summarizer(summarizer_command), dry_run=dry_run)


def merge(repo: Repository, branch: str, *, summarizer_command: str | None = None,
          dry_run: bool = False) -> CompactionResult:
    cur = repo.current()
    if cur.ref is None or cur.session is None:
        raise BadRevision("HEAD is detached: check out the branch to merge into")
    cm, _ = manager_at(repo, cur.branch)
    return merge_branch(cm, branch, summarizer=_summarizer(summarizer_command), dry_run=dry_run)


def compacted_events(repo: Repository, events) -> dict[str, str]:
    """{event id: compaction id} for events summarized by a compaction seen in `events`."""
    marks: dict[str, str] = {}
    for _eid, ev in events:
        if ev.type == "CompactionCompleted" and ev.causality.get("compaction_id"):
            cid = ev.causality["compaction_id"]
            rec = repo.store.get(cid)
            if isinstance(rec, Compaction):
                for sid in rec.source_event_ids:
                    marks.setdefault(sid, cid)
    return marks
