"""Creating stores and sessions, listing them, and appending events."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .. import jsonparse
from ..clock import now_iso
from ..errors import InvalidInput
from ..objects import is_valid_event_type
from ..repo import Repository, iter_session_refs
from ..repo.gcpause import fewer_collections
from .inputs import open_input

if TYPE_CHECKING:
    from ..repo import Transaction


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
        path = text[1:]
        with open_input(path) as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"payload file {path} is not UTF-8 text (byte {exc.start})") from None
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


_BATCH_FIELDS = frozenset({"type", "actor", "payload", "ts", "causality"})


def _parse_batch(lines: Iterable[str | bytes], repo: Repository) -> list[dict]:
    items = []
    loads, decode_error = jsonparse.loads, json.JSONDecodeError
    for n, line in enumerate(lines, 1):
        try:
            obj = loads(line)  # bytes too: orjson reads UTF-8 without a decode first
        except UnicodeDecodeError:
            raise InvalidInput(f"batch line {n}: not UTF-8 text; nothing appended") from None
        except decode_error as exc:
            if not line.strip():
                continue
            raise InvalidInput(f"batch line {n}: not valid JSON ({exc.msg}); nothing appended") from None
        if type(obj) is not dict or type(obj.get("type")) is not str:
            raise InvalidInput(f"batch line {n}: expected an object with a string \"type\"; "
                               f"nothing appended")
        if type(obj.get("payload", {})) is not dict:
            raise InvalidInput(f"batch line {n}: \"payload\" must be an object; nothing appended")
        if not obj.keys() <= _BATCH_FIELDS:
            unknown = set(obj) - _BATCH_FIELDS
            raise InvalidInput(f"batch line {n}: unknown field(s) {', '.join(sorted(unknown))}; "
                               f"nothing appended")
        if not is_valid_event_type(obj["type"]):
            raise InvalidInput(f"batch line {n}: invalid event type {obj['type']!r}; nothing appended")
        if type(obj.get("causality", {})) is not dict or type(obj.get("ts", "")) is not str or \
                type(obj.get("actor", "")) is not str:
            raise InvalidInput(f"batch line {n}: \"actor\" and \"ts\" must be strings and "
                               f"\"causality\" an object; nothing appended")
        items.append(obj)
    return items


class _BatchClock:
    """`clock.now_iso()` for a stream of events: the same strings, with the date and time of
    day formatted once per second instead of once per event."""

    def __init__(self) -> None:
        self._fake = os.environ.get("CTX_FAKE_TIME")
        self._sec = -1
        self._prefix = ""

    def __call__(self) -> str:
        if self._fake:
            return self._fake
        t = time.time()
        sec = int(t)
        if t - sec >= 0.999999:  # datetime rounds to microseconds: let now_iso pick the second
            return now_iso()
        if sec != self._sec:
            self._sec = sec
            self._prefix = datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        return f"{self._prefix}{int(t * 1000) % 1000:03d}Z"


def append_batch(repo: Repository, lines: Iterable[str | bytes]) -> BatchResult:
    """Append a JSONL batch of {type, actor?, payload?, ts?} in one transaction.

    Every line is validated before anything is written, so a bad line appends nothing. Lines
    given as bytes (a file opened in binary mode) must be UTF-8; one that is not is named by
    its number like any other bad line.
    """
    with fewer_collections():  # every parsed line stays alive until the commit (gcpause.py)
        items = _parse_batch(lines, repo)
        with repo.transaction(message="append --batch") as tx:
            _append_items(tx, items)
    return BatchResult(len(items), tx.tip)


def _append_items(tx: Transaction, items: list[dict]) -> None:
    """`tx.append(type, actor, payload, causality, ts)` for each parsed line, without re-checking
    what `_parse_batch` checked and without looking generations up: the same field maps as
    `Transaction.append` builds (so the same ids), through the transaction's bulk path
    (`BranchAppend.extend`). The parsed maps are completed in place into the field maps (the
    encoder sorts keys, so their order does not matter)."""
    clock = _BatchClock()

    def fields():
        for obj in items:
            if "actor" not in obj:
                obj["actor"] = "agent"
            if "payload" not in obj:
                obj["payload"] = {}
            if "causality" not in obj:
                obj["causality"] = {}
            if not obj.get("ts"):
                obj["ts"] = clock()
            yield obj

    tx.branch().extend(fields())
