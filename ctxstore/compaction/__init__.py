"""Compaction with provenance, checked before it counts; merging a branch's conclusions back.

    from ctxstore.compaction import compact, merge_branch, CommandSummarizer
    result = compact(cm, keep_recent_tokens=2000)            # raises CompactionRejected on a failed check
    preview = compact(cm, dry_run=True)                      # what would be cut, each check's verdict
    merge_branch(cm, "approach-b")                           # BranchMerged with a checked summary

The names below load on first use (PEP 562), so importing `ctxstore.compaction.live` — which
every state projection does — does not import the engine, the checks and the summarizers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyattrs import lazy_attributes

_LAZY = {
    "RangeFacts": ".checks", "Verdict": ".checks", "run_checks": ".checks",
    "DEFAULT_KEEP_RECENT_TOKENS": ".engine", "CompactionResult": ".engine", "compact": ".engine",
    "merge_branch": ".engine",
    "REQUIRED_FIELDS": ".summarizers", "CallableSummarizer": ".summarizers",
    "CommandSummarizer": ".summarizers", "StructuredSummarizer": ".summarizers",
    "Summarizer": ".summarizers",
    "CompactionTarget": ".target", "TokenCounter": ".target",
    "event_text": ".text",
}

if TYPE_CHECKING:  # pragma: no cover
    from .checks import RangeFacts, Verdict, run_checks
    from .engine import DEFAULT_KEEP_RECENT_TOKENS, CompactionResult, compact, merge_branch
    from .summarizers import (
        REQUIRED_FIELDS,
        CallableSummarizer,
        CommandSummarizer,
        StructuredSummarizer,
        Summarizer,
    )
    from .target import CompactionTarget, TokenCounter
    from .text import event_text


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)


__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS", "REQUIRED_FIELDS", "CallableSummarizer", "CommandSummarizer",
    "CompactionResult", "CompactionTarget", "RangeFacts", "StructuredSummarizer", "Summarizer",
    "TokenCounter", "Verdict", "compact", "event_text", "merge_branch", "run_checks",
]
