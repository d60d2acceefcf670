"""Write an imported session back in its source format, or as ctxstore's neutral JSONL.

Source formats are rebuilt from the lines kept in events (`payload.source`, see records.py;
older imports name a separate `record` object instead): the events that carry a source
are gathered (from every branch when REV names a session, from REV's history otherwise,
plus inline subagent sessions cut from the same file), sorted by original line number, and
each line is printed once. The output is JSON-equal to the original, line by line.
A session that did not come from the requested harness is converted instead when that
harness is a conversion target (claude-code, codex, pi, gemini: ctxstore/convert).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from .. import convert
from ..errors import BadRevision, InvalidInput, NotFound, Unsupported
from ..objects import Event, Session
from ..repo import Repository
from ..repo.revparse import resolve_event
from . import harnesses, neutral
from .records import event_line

SOURCE_FORMATS = ("claude-code", "codex", "pi", *harnesses.MODULES)


def resolve_target(repo: Repository, rev_or_session: str) -> tuple[str, list[str]]:
    """(session id, tips): all branch tips for a session id, else the one event REV names."""
    text = rev_or_session.strip()
    try:
        sid = repo.resolve_session(text)
        return sid, list(repo.branches(sid).values())
    except (BadRevision, NotFound):
        pass
    eid = resolve_event(repo, text)
    return session_of_event(repo, eid), [eid]


def session_of_event(repo: Repository, event_id: str) -> str:
    sid = repo.session_of_event(event_id)
    if not sid:
        raise InvalidInput(f"event {event_id[:12]} has no SessionStarted root")
    return sid


def export_session(repo: Repository, rev_or_session: str, format: str, out: TextIO) -> dict[str, Any]:
    """Write the session REV names (a session id, branch or event) to `out`.

    `format` is a harness (its original records when the session was imported from it;
    for claude-code, codex, pi and gemini a conversion otherwise, see ctxstore/convert) or
    jsonl. Returns {"session", "format", "lines"} (and "converted", the conversion report).
    """
    sid, tips = resolve_target(repo, rev_or_session)
    if format == "jsonl":
        n = neutral.export(repo, sid, tips, out)
        return {"session": sid, "format": format, "lines": n}
    if format not in SOURCE_FORMATS:
        raise InvalidInput(f"unknown export format {format!r}: use one of "
                           f"{', '.join(SOURCE_FORMATS)} or jsonl")
    session = repo.session(sid)
    origin = session.origin.get("format", "")
    if origin != format and format in convert.TARGETS:
        return _converted(repo, sid, format, out)
    if origin != format:
        raise Unsupported(f"session {sid[:12]} was not imported from {format} "
                          f"(origin: {origin or 'native'}) and cannot be converted to it; "
                          f"export it with --format jsonl, or convert it with --format "
                          f"{' / '.join(sorted(convert.TARGETS))}")
    lines = _source_lines(repo, sid, session, tips)
    writer = getattr(harnesses.module(format), "export", None) if format in harnesses.MODULES else None
    if writer is not None and not getattr(harnesses.module(format), "is_document", lambda o: True)(session.origin):
        writer = None  # this session came from the harness's line format: written line by line
    if writer is not None:  # a document format: the module puts its records back together
        records = [(n, json.loads(event_line(repo.objects, ev.payload, ev.causality)))
                   for n, ev in lines]
        return {"session": sid, "format": format, "lines": writer(records, out)}
    for _line, ev in lines:
        out.write(event_line(repo.objects, ev.payload, ev.causality))
        out.write("\n")
    return {"session": sid, "format": format, "lines": len(lines)}


def _converted(repo: Repository, sid: str, format: str, out: TextIO) -> dict[str, Any]:
    """A session from another harness (or made here), converted to FORMAT (ctxstore/convert):
    every branch where the format has a tree, else the main branch."""
    import io

    buf = io.BytesIO()
    report = convert.target(format).write(convert.read_transcript(repo, sid), buf)
    out.write(buf.getvalue().decode("utf-8"))
    return {"session": sid, "format": format, "lines": report.records,
            "converted": report.to_dict()}


def _source_lines(repo: Repository, sid: str, session: Session,
                  tips: list[str]) -> list[tuple[int, Event]]:
    files = set()
    found: dict[int, Event] = {}
    groups = [tips]
    for child in _inline_children(repo, sid):
        groups.append(list(repo.branches(child).values()))
    for i, group in enumerate(groups):
        for eid in repo.graph.reachable_events(group):
            ev = repo.graph.event(eid)
            src = ev.payload.get("source")
            if not src or not ({"record", "raw"} & set(src) or ev.causality.get("record_id")):
                continue
            if i == 0:
                files.add(src.get("file"))
            elif src.get("file") not in files:
                continue
            found.setdefault(int(src.get("line", 0)), ev)
    return sorted(found.items(), key=lambda x: x[0])


def _inline_children(repo: Repository, sid: str) -> list[str]:
    out = []
    for other in repo.session_ids():
        if other == sid:
            continue
        s = repo.session(other)
        if s.parent_session == sid and s.origin.get("layout") == "inline":
            out.append(other)
    return out
