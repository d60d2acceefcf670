"""ctxstore's own neutral JSONL: one session, one JSON object per line, ids preserved.

    {"ctxstore": "session", "version": 1, "id": SID, "session": {...Session...}}
    {"ctxstore": "event", "id": EID, "event": {...Event...}, "objects": [OBJ, ...]}
    {"ctxstore": "branch", "name": "main", "tip": EID}

Events come oldest first (parents before children). `objects` holds what the event names in
its causality (message, artifact, compaction, record) and what those need (blobs; the
messages and blobs a line kept in `payload.source` leans on), each as
{"id", "type", "value"} with blob bytes as {"base64": ...}; with `inline_artifacts=False`
artifact blobs are left out and only referenced by id. Importing re-hashes every object and
event and reports any id that does not match, so a round trip yields identical ids.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, TextIO

from .. import codec
from ..objects.links import references
from ..refs import branch_ref
from ..repo import Repository
from .common import MALFORMED, ImportContext, SessionStats, iter_jsonl
from .records import source_objects

VERSION = 1
_CAUSAL = ("message_id", "artifact_id", "compaction_id", "record_id")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _obj(repo: Repository, oid: str) -> dict[str, Any]:
    type_name = repo.objects.type_of(oid)
    value = repo.objects.get(oid)
    if type_name == "blob":
        value = {"base64": base64.b64encode(value).decode("ascii")}
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    return {"id": oid, "type": type_name, "value": value}


def _objects_of(repo: Repository, ev, inline_artifacts: bool, sent: set[str]) -> list[dict]:
    out: list[dict] = []
    causality = ev.causality
    todo = [causality.get(k) for k in _CAUSAL if isinstance(causality.get(k), str)]
    todo += source_objects(ev.payload.get("source"))
    while todo:
        oid = todo.pop(0)
        if not oid or oid in sent or oid not in repo.objects:
            continue
        sent.add(oid)
        obj = _obj(repo, oid)
        out.append(obj)
        type_name, body = repo.objects.get_raw(oid)
        if type_name == "artifact" and not inline_artifacts:
            continue  # by reference: the content stays behind
        todo.extend(references(type_name, codec.decode_body(type_name, body)))
    return out


def export(repo: Repository, sid: str, tips: list[str], out: TextIO,
           inline_artifacts: bool = True) -> int:
    """Write one session (history reachable from `tips`); returns the number of lines."""
    out.write(_dump({"ctxstore": "session", "version": VERSION, "id": sid,
                     "session": repo.session(sid).to_dict()}) + "\n")
    n = 1
    graph = repo.graph
    events = sorted(graph.reachable_events(tips),
                    key=lambda e: (graph.event(e).generation, graph.event(e).ts, e))
    sent: set[str] = set()
    for eid in events:
        ev = graph.event(eid)
        line = {"ctxstore": "event", "id": eid, "event": ev.to_dict(),
                "objects": _objects_of(repo, ev, inline_artifacts, sent)}
        out.write(_dump(line) + "\n")
        n += 1
    branches = repo.branches(sid)
    for name, tip in sorted(branches.items()):
        if tip in set(events):
            out.write(_dump({"ctxstore": "branch", "name": name, "tip": tip}) + "\n")
            n += 1
    return n


def _put(ctx: ImportContext, file: str, line: int, oid: str, type_name: str, value: Any) -> bool:
    if type_name == "blob":
        value = base64.b64decode(value["base64"])
    got = ctx.repo.objects.put(type_name, value)
    if got != oid:
        ctx.warn(file, line, f"{type_name} {oid[:12]} re-hashes to {got[:12]}; kept under the new id")
        return False
    return True


def import_file(ctx: ImportContext, path: Path) -> None:
    stats: SessionStats | None = None
    branches: dict[str, str] = {}
    for n, _text, rec in iter_jsonl(ctx, path):
        if rec is MALFORMED:
            continue  # already reported; neutral JSONL has no raw records to keep
        kind = rec.get("ctxstore")
        try:
            if kind == "session":
                _put(ctx, path.name, n, rec["id"], "session", rec["session"])
                origin = rec["session"].get("origin") or {}
                stats = SessionStats(rec["id"], "jsonl", path.name, origin.get("id", ""),
                                     rec["session"].get("kind", "main"))
                ctx.report.sessions.append(stats)
            elif kind == "event":
                for obj in rec.get("objects", ()):
                    _put(ctx, path.name, n, obj["id"], obj["type"], obj["value"])
                    if stats is not None and obj["type"] == "artifact":
                        stats.artifacts += 1
                new = rec["id"] not in ctx.repo.objects
                _put(ctx, path.name, n, rec["id"], "event", rec["event"])
                if stats is not None:
                    stats.events += 1
                    stats.new_events += int(new)
            elif kind == "branch":
                branches[rec["name"]] = rec["tip"]
            else:
                ctx.warn(path.name, n, f"unknown neutral record {kind!r}; skipped")
        except (KeyError, TypeError, ValueError) as exc:
            ctx.warn(path.name, n, f"malformed neutral record ({exc}); skipped")
    if stats is None:
        ctx.warn(path.name, 1, "no session header line; nothing imported")
        return
    tx, graph = ctx.tx, ctx.repo.graph
    for name, tip in branches.items():
        ref = branch_ref(stats.session, name)
        cur = tx.read(ref)
        stats.branches[name] = tip
        if tip not in ctx.repo.objects:
            ctx.warn(path.name, 0, f"branch {name} names a missing event {tip[:12]}")
            continue
        if cur == tip or (cur is not None and graph.is_ancestor(tip, cur)):
            continue
        tx.set_ref(ref, tip, message=f"import: jsonl {path.name}")
