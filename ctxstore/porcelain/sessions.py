"""Creating stores and sessions, listing them, and appending events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..objects import is_valid_event_type
from ..repo import Repository, iter_session_refs


@dataclass(frozen=True)
class SessionInfo:
    id: str
    title: str
    created: str
    kind: str
    branches: dict[str, str]
    events: int  # events on the longest branch (the tip's generation)
    last_activity: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "created": self.created, "kind": self.kind,
                "branches": self.branches, "events": self.events,
                "last_activity": self.last_activity}


def list_sessions(repo: Repository) -> list[SessionInfo]:
    by_session: dict[str, dict[str, str]] = {}
    for sid, branch, tip in iter_session_refs(repo):
        by_session.setdefault(sid, {})[branch] = tip
    out = []
    for sid, branches in by_session.items():
        sess = repo.session(sid)
        tips = [repo.graph.event(t) for t in branches.values()]
        out.append(SessionInfo(sid, sess.title, sess.created, sess.kind, branches,
                               max(e.generation for e in tips), max(e.ts for e in tips)))
    out.sort(key=lambda s: s.last_activity, reverse=True)
    return out


def parse_payload(text: str | None) -> dict:
    """`--payload JSON` or `--payload @FILE` into a dict, with a clear error."""
    if text is None or text == "":
        return {}
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise InvalidInput(f"cannot read payload file {text[1:]}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--payload is not valid JSON: {exc.msg} at line {exc.lineno} "
                           f"column {exc.colno}") from None
    if not isinstance(value, dict):
        raise InvalidInput("--payload must be a JSON object")
    return value


def append(repo: Repository, type: str, actor: str = "agent", payload: dict | None = None,
           causality: dict | None = None, ts: str | None = None) -> str:
    """Append one event to HEAD's branch; returns its id."""
    with repo.transaction(message=f"append {type}") as tx:
        return tx.append(type, actor, payload or {}, causality, ts)


@dataclass(frozen=True)
class BatchResult:
    count: int
    head: str


def _parse_batch(lines: Iterable[str], repo: Repository) -> list[dict]:
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"batch line {n}: not valid JSON ({exc.msg}); nothing appended") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise InvalidInput(f"batch line {n}: expected an object with a string \"type\"; "
                               f"nothing appended")
        payload = obj.get("payload", {})
        if not isinstance(payload, dict):
            raise InvalidInput(f"batch line {n}: \"payload\" must be an object; nothing appended")
        unknown = set(obj) - {"type", "actor", "payload", "ts", "causality"}
        if unknown:
            raise InvalidInput(f"batch line {n}: unknown field(s) {', '.join(sorted(unknown))}; "
                               f"nothing appended")
        if not is_valid_event_type(obj["type"]):
            raise InvalidInput(f"batch line {n}: invalid event type {obj['type']!r}; nothing appended")
        causality = obj.get("causality", {})
        if not isinstance(causality, dict) or not isinstance(obj.get("ts", ""), str) or \
                not isinstance(obj.get("actor", ""), str):
            raise InvalidInput(f"batch line {n}: \"actor\" and \"ts\" must be strings and "
                               f"\"causality\" an object; nothing appended")
        items.append(obj)
    return items


def append_batch(repo: Repository, lines: Iterable[str]) -> BatchResult:
    """Append a JSONL batch of {type, actor?, payload?, ts?} in one transaction.

    Every line is validated before anything is written, so a bad line appends nothing.
    """
    items = _parse_batch(lines, repo)
    with repo.transaction(message="append --batch") as tx:
        for obj in items:
            tx.append(obj["type"], obj.get("actor", "agent"), obj.get("payload", {}),
                      obj.get("causality"), obj.get("ts"))
    return BatchResult(len(items), tx.tip)
