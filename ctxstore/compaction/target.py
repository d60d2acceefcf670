"""What compaction and merge need from the branch they work on, and nothing more.

ContextManager satisfies `CompactionTarget`; so can any other binding of one branch (a test
double, a runtime without a manager). Compaction reads through `repo` (graph, objects, refs),
projects state and reads messages through `projector`, counts with `tokenizer`, and writes only
through `repo.transaction(ref, ...)`.
"""

from __future__ import annotations

from typing import Protocol

from ..repo import Repository
from ..state.projector import Projector


class TokenCounter(Protocol):
    """The one thing compaction asks of a tokenizer (ctxstore.context.Tokenizer is one)."""

    def count(self, text: str) -> int: ...


class CompactionTarget(Protocol):
    """One branch of one session, bound for writing."""

    repo: Repository
    projector: Projector
    tokenizer: TokenCounter
    session: str
    branch: str
    #: the branch's full ref name (refs/sessions/<sid>/<branch>)
    ref: str

    @property
    def tip(self) -> str:
        """The branch's current tip event; raises BadRevision if the branch is gone."""
        ...

    def resolve(self, rev: str | None) -> str:
        """The event REV names (None: the tip)."""
        ...
