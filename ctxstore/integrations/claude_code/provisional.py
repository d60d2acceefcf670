"""What the hook payload carries before the transcript does: `last_assistant_message` (Stop,
SubagentStop) and `compact_summary`.

Claude Code writes the transcript asynchronously, so a Stop hook may run before the answer
it reports is in the file; if the session ends or the machine dies then, the answer would be
lost. The hook therefore keeps a payload text the transcript does not hold yet as a
provisional event on the session's `live-pending` branch (never on main: main stays exactly
what `ctx import` of the transcript writes, with the same event ids). When the transcript's
lines arrive and a capture imports them, every provisional text found in the lines written
since it was recorded is reconciled: the `live-pending` branch is deleted (`ctx undo` and
the reflog keep it), so the answer is stored once, as the import stores it. A text that
never arrives stays on `live-pending` (`ctx log <session>/live-pending`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...importers.claude_map import content_text
from ...importers.live import read_lines
from ...refs import branch_ref
from ...repo import Repository
from .fastpath import TAIL, carried

BRANCH = "live-pending"
#: payload key (fastpath.CARRIED) -> the provisional event's type
KEYS = {"last_assistant_message": "claude-code:provisional-assistant",
        "compact_summary": "claude-code:provisional-compact-summary"}
TYPES = frozenset(KEYS.values())


def _norm(text: str) -> str:
    return " ".join(text.split())


def _line_texts(rec: Any) -> list[str]:
    if not isinstance(rec, dict):
        return []
    msg = rec.get("message")
    out = [content_text(msg.get("content"))] if isinstance(msg, dict) else []
    return out + [rec["summary"]] if isinstance(rec.get("summary"), str) else out


def found(path: Path, start: int, text: str) -> bool:
    """Whether a complete line of `path` after byte `start` holds `text` (whitespace aside)."""
    want = _norm(text)
    lines, _end, _problems = read_lines(path, start)
    return any(want in _norm(t) for _raw, rec in lines for t in _line_texts(rec))


def _pending(repo: Repository, ref: str) -> list[tuple[str, Any]]:
    """(id, event) of the provisional events on the live-pending branch, newest first."""
    out = []
    eid = repo.refs.read(ref)
    while eid:
        ev = repo.graph.event(eid)
        if ev.type not in TYPES:
            break
        out.append((eid, ev))
        eid = ev.parents[0] if ev.parents else None
    return out


def keep(repo: Repository, session: str, path: Path, data: dict) -> list[str]:
    """Record, on the session's live-pending branch, each payload text that is in none of the
    transcript's last TAIL bytes (an answer is among the newest lines once written). Returns
    the provisional event ids."""
    start = max(0, os.path.getsize(path) - TAIL)  # a line cut here is no text: skipped
    ref = branch_ref(session, BRANCH)
    kept = {ev.payload.get("text") for _eid, ev in _pending(repo, ref)}
    todo = [(k, t) for k, t in carried(data) if t not in kept and not found(path, start, t)]
    if not todo or not session:
        return []
    main = repo.refs.read(branch_ref(session, "main"))
    if main is None:
        return []
    size = os.path.getsize(path)
    out = []
    with repo.transaction(actor="ctx-hook", message="claude-code hook: a payload text the "
                                                    "transcript does not hold yet") as tx:
        tip = tx.read(ref) or main
        for key, text in todo:
            tip = tx.event(KEYS[key], "model", {"text": text, "from": key, "offset": size},
                           [tip], session=session)
            out.append(tip)
        tx.set_ref(ref, tip)
    return out


def reconcile(repo: Repository, session: str, path: Path) -> bool:
    """Delete the live-pending branch once the transcript holds every text on it (each
    looked for after the offset it was recorded at). Returns whether it was deleted."""
    ref = branch_ref(session, BRANCH)
    tip = repo.refs.read(ref)
    if tip is None:
        return False
    for _eid, ev in _pending(repo, ref):
        if not found(path, int(ev.payload.get("offset", 0)), str(ev.payload.get("text", ""))):
            return False
    with repo.transaction(actor="ctx-hook", message="claude-code hook: the transcript caught "
                                                    "up with the payload") as tx:
        tx.set_ref(ref, None, expected=tip)
    return True


