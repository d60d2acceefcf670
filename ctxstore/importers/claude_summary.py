"""Claude Code files that hold only `summary` records (issue 29, item 7).

Claude Code writes `{"type": "summary", "summary": TITLE, "leafUuid": UUID}` lines, often in a
file of their own: the title of the conversation whose last message is UUID, which lives in
another session file. Imported alone, such a file was a session with nothing in it but a
title, and the session it names stayed untitled. Now the file is still kept whole in a
session of its own (losslessness: its lines are exported back), and, when a Claude Code
session in the store (this import or an earlier one) holds the message UUID, that session gets
the title too, as a `claude-code:summary` title event without a source line (so its own
export is unchanged). A note says which happened. Only the newest events of each branch are
looked at: a leafUuid names the end of a conversation.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..refs import branch_ref
from .common import ImportContext, peek_jsonl, preview
from .records import event_line

#: How far back from each branch tip a leaf is looked for.
LEAF_WINDOW = 64
#: A file with more lines than this is a transcript, not a summary file.
MAX_SUMMARY_LINES = 1000


def summaries_only(path: Path) -> list[dict]:
    """The summary records of a file that holds nothing else ([] otherwise)."""
    out = []
    for rec in peek_jsonl(path, limit=MAX_SUMMARY_LINES + 1):
        if rec.get("type") != "summary" or not isinstance(rec.get("summary"), str):
            return []
        out.append(rec)
    return out if len(out) <= MAX_SUMMARY_LINES else []


def _uuid_of(repo, ev) -> str:
    src = ev.payload.get("source")
    if not isinstance(src, dict) or src.get("format") != "claude-code":
        return ""
    try:
        rec = json.loads(event_line(repo.objects, ev.payload, ev.causality))
    except ValueError:
        return ""
    return rec.get("uuid") if isinstance(rec, dict) and isinstance(rec.get("uuid"), str) else ""


def find_leaf(ctx: ImportContext, uuid: str, skip: str) -> tuple[str, str] | None:
    """(session id, branch) of a Claude Code session whose recent events hold message UUID."""
    repo = ctx.repo
    tips: dict[str, dict[str, str]] = {}
    for s in ctx.report.sessions:  # this import's sessions: their refs move at its commit
        if s.format == "claude-code" and s.session != skip:
            tips[s.session] = dict(s.branches)
    for sid in repo.session_ids():
        if sid in tips or sid == skip:
            continue
        if repo.session(sid).origin.get("format") == "claude-code":
            tips[sid] = repo.branches(sid)
    for sid, branches in tips.items():
        for name, tip in branches.items():
            for i, (_eid, ev) in enumerate(repo.graph.first_parents(tip)):
                if i >= LEAF_WINDOW:
                    break
                if _uuid_of(repo, ev) == uuid:
                    return sid, name
    return None


def attach(ctx: ImportContext, path: Path, own_session: str, records: list[dict]) -> None:
    """Title the sessions the summaries name; a note for each summary says what happened."""
    tx = ctx.tx
    for rec in records:
        text, leaf = rec["summary"], rec.get("leafUuid")
        found = find_leaf(ctx, leaf, own_session) if isinstance(leaf, str) and leaf else None
        if found is None:
            ctx.report.notes.append(f"{path.name}: holds only a summary ({preview(text, 60)!r}); "
                                    f"no session in the store holds its leafUuid {leaf}, so it "
                                    f"is a titled session with no conversation")
            continue
        sid, name = found
        ref = branch_ref(sid, name)
        tip_id = tx.read(ref)
        tip = ctx.repo.graph.event(tip_id)
        if tip.type == "claude-code:summary" and tip.payload.get("text") == preview(text):
            continue  # imported before: titled already
        # a ref this import already moves (a session of this run) is moved again: an event on
        # its staged tip, stamped with the tip's time so a re-import names the same event
        fields = tx.event_fields("claude-code:summary", "system",
                                 {"text": preview(text), "from_file": path.name,
                                  "leaf_uuid": leaf}, (tip_id,), ts=tip.ts)
        eid, _new = tx.put_new_event(fields, sid)
        tx.set_ref(ref, eid, message=f"import: title from {path.name}")
        ctx.report.notes.append(f"{path.name}: holds only a summary; it titles session "
                                f"{sid[:12]} ({name}), which holds its leafUuid")
