"""What the write path needs of a repository, so that transaction.py never imports
repository.py (which opens transactions: the import goes one way, issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..refs import RefStore
    from ..store import ObjectStore
    from ..store.journal import JournalFile
    from .eventcache import EventCache
    from .graph import EventGraph


class RepoLike(Protocol):
    path: Path | None
    objects: ObjectStore
    refs: RefStore
    config: dict[str, Any]
    graph: EventGraph
    session_marks: EventCache
    command: str | None
    journal: JournalFile | None
    journal_commits: bool
    _open_transactions: int

    def head_branch(self) -> str: ...
