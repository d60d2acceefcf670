"""Pending or abandoned: the one rule for tool calls that have no result (issue 12 item 5).

A call without a result is PENDING only while nothing has followed it on its branch. It is
ABANDONED — it will never get a result, and nothing may wait for it — as soon as

- it came from an assistant response that ended in error or was aborted
  (`ModelResponseReceived.payload.stop_reason` in ABANDONING_STOP_REASONS, e.g. pi's
  `stopReason: "aborted"` / `"error"`); or
- a later user prompt (`UserPromptSubmitted`) was submitted: the user moved on; or
- the turn was interrupted (an event registered with `register_interruption`, e.g. Codex's
  `event_msg` of subtype `turn_aborted`).

A result that arrives later still closes the call, whichever list holds it.

Everything that asks "is this call still open?" calls `step` (one event at a time, as the
state fold does) or `open_calls` (a whole range, as the context builder, compaction's checks
and fsck do), so the parts of the product cannot disagree. The functions see events only as
`(id, type, payload, causality)`, so stored events, compaction rows and fsck's slim records
all fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..objects.frozen import EMPTY, FrozenMap, freeze

#: Stop reasons of an assistant response after which its tool calls never get a result.
ABANDONING_STOP_REASONS = frozenset({"aborted", "error", "cancelled", "canceled", "interrupted"})
RESULT_TYPES = frozenset({"ToolCallFinished", "ToolCallFailed"})

#: (event type, payload subtype or None) pairs that interrupt the running turn.
_INTERRUPTIONS: set[tuple[str, str | None]] = {("codex:event_msg", "turn_aborted")}


def register_interruption(event_type: str, subtype: str | None = None) -> None:
    """Declare that events of `event_type` (with `payload.subtype == subtype`, if given)
    interrupt the turn: every call still open when one is seen becomes abandoned."""
    _INTERRUPTIONS.add((event_type, subtype))


def is_interruption(event_type: str, payload: Mapping[str, Any]) -> bool:
    if (event_type, None) in _INTERRUPTIONS:
        return True
    sub = payload.get("subtype")
    return isinstance(sub, str) and (event_type, sub) in _INTERRUPTIONS


def tool_call_id(payload: Mapping[str, Any], causality: Mapping[str, Any]) -> str:
    v = payload.get("tool_call_id") or causality.get("tool_call_id")
    return v if isinstance(v, str) else ""


@dataclass(frozen=True, slots=True)
class CallBook:
    """Calls without a result after some prefix of a branch.

    `pending`: {tool_call_id: {name, args, event, status}}; `abandoned`: {tool_call_id:
    {name, args, event, reason}}; `stopped`: the message id of the newest response whose stop
    reason abandons the calls it carries ("" when the newest response ended normally)."""

    pending: FrozenMap = EMPTY
    abandoned: FrozenMap = EMPTY
    stopped: str = ""

    def status(self, tcid: str) -> str:
        """"pending", "abandoned" or "" (answered, or never seen)."""
        return "pending" if tcid in self.pending else "abandoned" if tcid in self.abandoned else ""


EMPTY_BOOK = CallBook()


def _abandon_all(book: CallBook, reason: str) -> CallBook:
    if not book.pending:
        return book
    moved = {k: FrozenMap({"name": v["name"], "args": v["args"], "event": v["event"],
                           "reason": reason}) for k, v in book.pending.items()}
    return CallBook(EMPTY, FrozenMap({**book.abandoned, **moved}), book.stopped)


def step(book: CallBook, event_id: str, event_type: str, payload: Mapping[str, Any],
         causality: Mapping[str, Any]) -> CallBook:
    """The book after one event (the rule). Returns `book` itself when nothing changed."""
    if event_type == "ToolCallRequested":
        tcid = tool_call_id(payload, causality)
        if not tcid or tcid in book.pending or tcid in book.abandoned:
            return book
        entry = {"name": str(payload.get("name") or ""), "args": payload.get("args", EMPTY),
                 "event": event_id}
        mid = causality.get("message_id")
        if book.stopped and mid == book.stopped:
            entry["reason"] = "its response was aborted or ended in error"
            return CallBook(book.pending, FrozenMap({**book.abandoned, tcid: freeze(entry)}),
                            book.stopped)
        entry["status"] = "requested"
        return CallBook(FrozenMap({**book.pending, tcid: freeze(entry)}), book.abandoned,
                        book.stopped)
    if event_type in RESULT_TYPES:
        tcid = tool_call_id(payload, causality)
        if tcid in book.pending:
            return CallBook(FrozenMap({k: v for k, v in book.pending.items() if k != tcid}),
                            book.abandoned, book.stopped)
        if tcid in book.abandoned:
            return CallBook(book.pending,
                            FrozenMap({k: v for k, v in book.abandoned.items() if k != tcid}),
                            book.stopped)
        return book
    if event_type == "ModelResponseReceived":
        stop = payload.get("stop_reason")
        mid = causality.get("message_id")
        stopped = mid if isinstance(stop, str) and stop in ABANDONING_STOP_REASONS \
            and isinstance(mid, str) else ""
        return book if stopped == book.stopped else CallBook(book.pending, book.abandoned, stopped)
    if event_type == "UserPromptSubmitted":
        return _abandon_all(book, f"the user spoke again ({event_id[:12]})")
    if is_interruption(event_type, payload):
        return _abandon_all(book, f"the turn was interrupted ({event_id[:12]})")
    return book


def open_calls(events: Iterable[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]],
               start: CallBook = EMPTY_BOOK) -> CallBook:
    """Fold `step` over `(event_id, type, payload, causality)`, oldest first."""
    book = start
    for eid, t, payload, causality in events:
        book = step(book, eid, t, payload, causality)
    return book


def event_facts(events: Iterable[tuple[str, Any]]):
    """`(id, type, payload, causality)` of `(event_id, Event)` pairs, for `open_calls`."""
    for eid, ev in events:
        yield eid, ev.type, ev.payload, ev.causality
