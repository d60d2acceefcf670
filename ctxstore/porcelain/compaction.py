"""compact and merge at the CLI's level: resolve the branch, pick the summarizer, run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BadRevision
from ..repo import Repository
from ..repo.revparse import resolve_event

if TYPE_CHECKING:  # the engine is imported by compact and merge only, not by `ctx log`
    from ..compaction import CompactionResult

LLM_PREFIX = "llm:"


def summarizer_for(spec: str | None):
    """`--summarizer` SPEC: none -> structured; `llm:MODEL` -> that model through the llm
    library (extra `[llm]`); anything else -> an external command."""
    from ..compaction import CommandSummarizer, StructuredSummarizer

    if not spec:
        return StructuredSummarizer()
    if spec.startswith(LLM_PREFIX):
        from ..compaction.llm_summarizer import LlmSummarizer

        return LlmSummarizer(spec[len(LLM_PREFIX):])
    return CommandSummarizer(spec)


def compact_branch(repo: Repository, rev: str | None = None, *, keep_recent_tokens: int | None = None,
                   summarizer_command: str | None = None, dry_run: bool = False,
                   fallback: bool = False) -> CompactionResult:
    from ..compaction import StructuredSummarizer, compact
    from .context import manager_at

    cm, eid = manager_at(repo, rev)
    if eid != cm.tip:
        raise BadRevision(f"{rev} is not a branch tip: compact a branch (e.g. `ctx compact main`)")
    return compact(cm, None, keep_recent_tokens=keep_recent_tokens,
                   summarizer=summarizer_for(summarizer_command), dry_run=dry_run,
                   fallback=StructuredSummarizer() if fallback else None)


def merge(repo: Repository, branch: str, *, summarizer_command: str | None = None,
          dry_run: bool = False, fallback: bool = False) -> CompactionResult:
    from ..compaction import StructuredSummarizer, merge_branch
    from .context import manager_at

    cur = repo.current()
    if cur.ref is None or cur.session is None:
        raise BadRevision("HEAD is detached: check out the branch to merge into")
    cm, _ = manager_at(repo, cur.branch)
    other = resolve_event(repo, branch)  # any revision `log` takes: origin/SESSION/main too
    repo.check_same_session(other, cur.session, branch)
    return merge_branch(cm, branch, summarizer=summarizer_for(summarizer_command), dry_run=dry_run,
                        fallback=StructuredSummarizer() if fallback else None, other_tip=other)


def compacted_events(repo: Repository, events) -> dict[str, str]:
    """{event id: compaction id} for events summarized by a compaction seen in `events`."""
    marks: dict[str, str] = {}
    for _eid, ev in events:
        if ev.type == "CompactionCompleted" and ev.causality.get("compaction_id"):
            cid = ev.causality["compaction_id"]
            from ..objects.compaction import Compaction

            rec = repo.objects.get(cid)
            if isinstance(rec, Compaction):
                for sid in rec.source_event_ids:
                    marks.setdefault(sid, cid)
    return marks
