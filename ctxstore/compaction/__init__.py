"""Compaction with provenance, checked before it counts; merging a branch's conclusions back.

    from ctxstore.compaction import compact, merge_branch, CommandSummarizer
    result = compact(cm, keep_recent_tokens=2000)            # raises CompactionRejected on a failed check
    preview = compact(cm, dry_run=True)                      # what would be cut, each check's verdict
    merge_branch(cm, "approach-b")                           # BranchMerged with a checked summary
"""

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

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS", "REQUIRED_FIELDS", "CallableSummarizer", "CommandSummarizer",
    "CompactionResult", "CompactionTarget", "RangeFacts", "StructuredSummarizer", "Summarizer", "TokenCounter", "Verdict",
    "compact", "event_text", "merge_branch", "run_checks",
]
