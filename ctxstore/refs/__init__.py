"""Refs: names for events, moved only by compare-and-swap, every move in a reflog."""

from .base import ZERO, Head, ReflogEntry, RefStore
from .files import FileRefs
from .memory import MemoryRefs
from .names import (
    DEFAULT_BRANCH,
    HEAD,
    SESSIONS_PREFIX,
    branch_ref,
    check_branch_name,
    check_ref_name,
    split_branch_ref,
)

__all__ = [
    "DEFAULT_BRANCH", "HEAD", "SESSIONS_PREFIX", "ZERO", "FileRefs", "Head", "MemoryRefs",
    "RefStore", "ReflogEntry", "branch_ref", "check_branch_name", "check_ref_name",
    "split_branch_ref",
]
