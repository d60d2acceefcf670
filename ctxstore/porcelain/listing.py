"""`ctx sessions`: every session with its title, source format, cwd and subagent tree.

A session's title is the one `ctx session rename` gave it, else the newest one its harness recorded (Claude Code summary / custom-title /
ai-title records, the Codex thread name, pi's session_info name: `AgentState.title`), else the
title it was created with (the first real request of an imported transcript, `ctx new
--title`), else the first line of its goal. The state is projected at the tip of `main`
(snapshots make a second listing cheap; no tokenizer is loaded). Subagent and fork sessions are listed under the
session that spawned them.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..clock import parse_when
from ..errors import InvalidInput
from ..repo import Repository, iter_session_refs
from ..state.projector import Projector
from ..state.prompts import title_of
from .session_meta import own_meta

NATIVE = "native"  # sessions written through ctx itself, not imported


@dataclass
class SessionEntry:
    id: str
    title: str
    format: str
    cwd: str
    kind: str
    created: str
    last_activity: str
    events: int
    branches: dict[str, str]
    parent: str = ""
    spawn_event: str = ""
    goal: str = ""
    children: list[str] = field(default_factory=list)
    depth: int = 0
    tags: list[str] = field(default_factory=list)  # `ctx session tag`

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "format": self.format, "cwd": self.cwd,
                "kind": self.kind, "created": self.created, "last_activity": self.last_activity,
                "events": self.events, "branches": self.branches, "parent": self.parent,
                "spawn_event": self.spawn_event, "children": list(self.children),
                "tags": list(self.tags),
                "depth": self.depth}


def _title(projector: Projector, tip: str, session_title: str) -> tuple[str, str]:
    """(title, goal) of a session from the state projected at TIP."""
    state = projector.project(tip)
    goal = state.goal["user_goal"]
    return state.title or session_title or title_of(goal), goal


def session_title(repo: Repository, session_id: str) -> str:
    """The title `ctx sessions` shows for one session (the rule in this module's docstring),
    without listing the others."""
    own_title, _tags, _meta = own_meta(repo, session_id)
    sess = repo.session(session_id)
    branches = repo.branches(session_id)
    if own_title or not branches:
        return own_title or sess.title
    branch = "main" if "main" in branches else min(branches)
    return _title(Projector(repo), branches[branch], sess.title)[0]


def session_entries(repo: Repository) -> list[SessionEntry]:
    """Every session with a branch, in tree order: roots newest first, each followed by the
    sessions it spawned (oldest first), depth-first."""
    by_session: dict[str, dict[str, str]] = {}
    for sid, branch, tip in iter_session_refs(repo):
        by_session.setdefault(sid, {})[branch] = tip
    entries: dict[str, SessionEntry] = {}
    projector = Projector(repo)
    for sid, branches in by_session.items():
        sess = repo.session(sid)
        tips = [repo.graph.event(t) for t in branches.values()]
        branch = "main" if "main" in branches else min(branches)
        title, goal = _title(projector, branches[branch], sess.title)
        own_title, tags, _meta = own_meta(repo, sid)  # `ctx session rename` wins
        fmt = sess.origin.get("format") if isinstance(sess.origin.get("format"), str) else ""
        entries[sid] = SessionEntry(sid, own_title or title, fmt or NATIVE, sess.cwd, sess.kind, sess.created,
                                    max(e.ts for e in tips), max(e.generation for e in tips),
                                    branches, sess.parent_session, sess.spawn_event, goal,
                                    tags=list(tags))
    for e in entries.values():
        if e.parent in entries:
            entries[e.parent].children.append(e.id)
    for e in entries.values():
        e.children.sort(key=lambda c: (entries[c].created, c))
    roots = sorted((e for e in entries.values() if e.parent not in entries),
                   key=lambda e: e.last_activity, reverse=True)
    out: list[SessionEntry] = []

    def visit(e: SessionEntry, depth: int) -> None:
        e.depth = depth
        out.append(e)
        for c in e.children:
            visit(entries[c], depth + 1)

    for r in roots:
        visit(r, 0)
    return out


# -- filters ----------------------------------------------------------------------------------

def parse_since(text: str, now: datetime | None = None) -> str:
    """An ISO-8601 UTC timestamp from `2026-12-01`, `2026-12-01T10:00`, `3d`, `12h`, `2 weeks
    ago` (`clock.parse_when`); InvalidInput naming the accepted forms otherwise."""
    when = parse_when(text, now, "--since")
    if when is None:
        raise InvalidInput(f"--since {text!r}: give a date, a time or an age, not 'never'")
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _under(path: str, root: str) -> bool:
    if not path:
        return False
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def session_filter(*, cwd: str | None = None, format: str | None = None,
                   grep: str | None = None, since: str | None = None
                   ) -> Callable[[SessionEntry], bool]:
    """A predicate for the filters given (all must hold), checked before any session is read:
    a bad --grep or --since fails at once with InvalidInput."""
    pattern = None
    if grep:
        try:
            pattern = re.compile(grep, re.IGNORECASE)
        except re.error as exc:
            raise InvalidInput(f"--grep {grep!r} is not a valid regular expression: {exc}") from None
    root = os.path.abspath(os.path.expanduser(cwd)) if cwd else None
    since_ts = parse_since(since) if since else None

    def keep(e: SessionEntry) -> bool:
        if root is not None and not _under(e.cwd, root):
            return False
        if format and e.format != format:
            return False
        if since_ts and e.last_activity < since_ts:
            return False
        return pattern is None or any(pattern.search(x) for x in (e.title, e.goal, e.id, e.cwd))

    return keep


def filter_entries(entries: list[SessionEntry], keep: Callable[[SessionEntry], bool]
                   ) -> list[SessionEntry]:
    """The entries KEEP accepts, in the same order; an entry whose parent is filtered out moves
    to the top level of the tree."""
    kept = [e for e in entries if keep(e)]
    ids = {e.id for e in kept}
    depth: dict[str, int] = {}
    for e in kept:
        depth[e.id] = depth[e.parent] + 1 if e.parent in ids else 0
        e.depth = depth[e.id]
    return kept
