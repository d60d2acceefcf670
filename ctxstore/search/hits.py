"""What `ctx search` and the MCP `search` tool take and give: filters and hits, as values.

Kept apart from the index (index.py) so a caller that only formats hits — the CLI, the MCP
server — imports no SQLite code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: The kinds of hit `--type` names, in the order `ctx search --help` lists them.
HIT_TYPES = ("prompt", "response", "tool-call", "tool-result", "summary", "memory", "other")


@dataclass(frozen=True)
class SearchFilters:
    """Which hits count. Every field narrows; None / empty means no restriction.

    `harness` is the importer format of the session (`claude-code`, `codex`, ...; `ctx`
    for sessions made here); `cwd` a directory the session's cwd is or lies under; `since`
    / `until` aware datetimes (clock.parse_when); `types` kinds from HIT_TYPES; `tool` a tool
    name (case-insensitive); `file` a path an event read or modified (as the projector's tool
    effects name it: absolute, or relative to the session's cwd); `session` a full session
    id; `branch` a branch name (`main`, `try-b`)."""

    harness: str | None = None
    cwd: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    types: tuple[str, ...] = ()
    tool: str | None = None
    file: str | None = None
    session: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class SearchHit:
    """One ranked hit: the event to open (`ctx show EVENT`; for a memory, the memory's id
    and `ctx memory show ID`), where it lives, and why it matched.

    `score` is BM25 as positive numbers, higher is better (FTS5's bm25() negated).
    `snippet` is one line of the matching text with each match between « and »; control
    characters are shown as escapes (\\x1b) and the text's own guillemets as ‹ ›, so the
    snippet is inert in a terminal and unambiguous in JSON. `replaced_by` is the id of the
    compaction record whose summary stands for the event in a compacted branch."""

    event: str
    session: str | None
    branch: str | None
    type: str
    event_type: str
    score: float
    snippet: str
    ts: str = ""
    source_file: str | None = None
    source_line: int | None = None
    replaced_by: str | None = None
    tool: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "session": self.session, "branch": self.branch,
                "type": self.type, "event_type": self.event_type, "score": self.score,
                "snippet": self.snippet, "ts": self.ts,
                "source": ({"file": self.source_file, "line": self.source_line}
                           if self.source_file else None),
                "replaced_by": self.replaced_by, "tool": self.tool}
