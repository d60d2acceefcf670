"""The viewer's data: plain JSON-ready dicts built from a repository, with nothing about HTML.

`store_model` lists the sessions (from `porcelain.listing.session_entries`, the same rows as
`ctx sessions`, plus token totals from `trace.stats`). `session_model` is one session: every
event of every branch oldest first, with its graph lanes, a one-line summary, the message it
names, tool calls paired with their results (the pending/abandoned rule of `state.calls`, the
effects of the tool semantics registry), compaction records with the exact range they replaced,
recorded context bundles segment by segment, provider token usage, and the projected state at
each event (deduplicated) or at turn ends only for very long sessions. The browser code only
draws what is here; the server (`viewer.server`) hands out the same dicts as JSON.

Strings are copied as they are: escaping is the renderer's job (it uses textContent only).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from ..errors import NotFound
from ..objects import Artifact, Compaction, Event, Message, thaw
from ..porcelain.eventfilter import is_bookkeeping, visible_parents
from ..porcelain.history import _text_preview  # the artifact text `ctx show` previews
from ..porcelain.listing import session_entries
from ..repo import Repository
from ..state.calls import EMPTY_BOOK, RESULT_TYPES, step, tool_call_id
from ..state.folds import fold
from ..state.model import AgentState
from ..state.projector import Projector
from ..state.prompts import slash_command
from ..state.tools import call_effects
from ..trace import normalize_usage, stats
from .checks import rerun, structural
from .graph import lanes

T = TypeVar("T")

#: Text longer than this (a tool result, a thinking block) is cut in the page; the rest is
#: one click away (the artifact, or the event in `--serve`).
TEXT_LIMIT = 4000
#: Artifacts up to this size are embedded in a self-contained export (their bytes as text).
ARTIFACT_EMBED_LIMIT = 256 * 1024
#: Up to this many events every event's state is embedded (deduplicated); beyond it, only the
#: state at the end of each turn and at branch tips (the server projects any event exactly).
ALL_STATES_LIMIT = 5000
#: Context-bundle segment texts are cut to this many characters in the page.
SEGMENT_TEXT_LIMIT = 2000


def _cut(text: str, limit: int = TEXT_LIMIT) -> tuple[str, int]:
    """(text cut to `limit` characters, full length)."""
    return (text if len(text) <= limit else text[:limit]), len(text)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(thaw(value), default=str))


# -- the store ----------------------------------------------------------------------------------

def store_model(repo: Repository) -> dict[str, Any]:
    """Every session as `ctx sessions` lists them (tree order, depth, children), with tokens."""
    rows = []
    for e in session_entries(repo):
        tip = e.branches.get("main") or e.branches[min(e.branches)]
        st = stats(repo.graph.first_parents(tip))
        tu = st["token_usage"]
        rows.append({**e.to_dict(), "branch_count": len(e.branches),
                     "tokens": {"input": tu["input_tokens"], "output": tu["output_tokens"],
                                "cache_read": tu["cache_read_tokens"],
                                "context_used": tu["context_used_tokens"]},
                     "compactions": st["compression"]["compaction_count"],
                     "tool_calls": st["tools"]["tool_call_count"]})
    return {"store": str(repo.path or "(memory)"), "sessions": rows}


# -- one session --------------------------------------------------------------------------------

def _session_events(repo: Repository, tips: list[str]) -> list[tuple[str, Event]]:
    """Every event reachable from the tips, newest first (`ctx log --all` order)."""
    return list(repo.graph.walk(tips))


def _get(repo: Repository, oid: str, cls: type[T]) -> T | None:
    """The object OID if the store has it and it is a CLS, else None (the page says "absent")."""
    try:
        obj = repo.objects.get(oid)
    except NotFound:
        return None
    return obj if isinstance(obj, cls) else None


def _message(repo: Repository, mid: str) -> Message | None:
    return _get(repo, mid, Message)


def _block(b: dict[str, Any]) -> dict[str, Any]:
    """A message block for the page: long texts cut (with their full length)."""
    out = dict(b)
    if out.get("type") == "text" and isinstance(out.get("text"), str):
        out["text"] = slash_command(out["text"])
    for key in ("text", "preview"):
        if isinstance(out.get(key), str):
            out[key], n = _cut(out[key])
            if n > len(out[key]):
                out[key + "_len"] = n
    if "args" in out:
        text = json.dumps(out["args"], ensure_ascii=False, indent=1, default=str)
        out["args"], n = _cut(text)
        if n > len(out["args"]):
            out["args_len"] = n
    out.pop("signature", None)  # opaque provider bytes, never shown
    return out


def _first_line(text: str, width: int = 160) -> str:
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= width else line[:width - 1] + "…"
    return ""


def _summary(ev: Event, msg: Message | None, harness: str) -> str:
    """One line for the graph row: what `ctx log` would say, from the event and its message."""
    p = ev.payload
    if ev.type == "ToolCallRequested":
        name = str(p.get("name") or "")
        effects = call_effects(name, p.get("args"), harness)
        detail = next((e.path or e.summary for e in effects if e.path or e.summary), "")
        if not detail:
            args = p.get("args")
            detail = json.dumps(thaw(args), ensure_ascii=False, default=str) if args else ""
        return _first_line(f"{name} {detail}")
    if ev.type in RESULT_TYPES:
        text = str(p.get("preview") or p.get("error") or p.get("output") or "")
        if not text and msg is not None:
            text = next((b.text or b.preview for b in msg.blocks
                         if getattr(b, "KIND", "") == "tool_result"), "")
        return _first_line(f"{p.get('name') or ''} → {text}")
    if ev.type in ("CompactionCompleted", "BranchMerged") and "tokens_before" in p:
        n = p.get("summarized_events", "?")
        return f"summarized {n} events: {p.get('tokens_before')} → {p.get('tokens_after')} tokens"
    if msg is not None and msg.text:
        return _first_line(slash_command(msg.text))
    if ev.type == "ModelResponseReceived" and not (isinstance(p.get("text"), str) and p["text"]):
        stop = p.get("stop_reason")
        return f"(no text{'; stop: ' + str(stop) if stop else ''})"
    if isinstance(p.get("check"), str) and "result" in p:  # VerifierFinished
        return _first_line(f"{p['check']}: {p['result']}")
    if len(p) == 1:
        (key, value), = p.items()
        if hasattr(value, "keys"):  # StateUpdated {"patch": {...}} -> "patch: goal, plan"
            return _first_line(f"{key}: {', '.join(sorted(str(k) for k in value.keys()))}")
    for key in ("text", "title", "path", "name", "verifier", "summary", "goal", "status"):
        if isinstance(p.get(key), str) and p[key]:
            return _first_line(slash_command(p[key]) if key == "text" else p[key])
    keys = ", ".join(sorted(str(k) for k in p)[:6])
    return f"{{{keys}}}" if keys else ""


def _noise(ev: Event, msg: Message | None) -> bool:
    """A model response that says nothing itself: no text, no thinking, no image — only the
    tool calls that follow it as their own events (the page drew it as a "(no text)" row)."""
    if ev.type != "ModelResponseReceived" or (isinstance(ev.payload.get("text"), str)
                                              and ev.payload["text"]):
        return False
    return msg is None or all(getattr(b, "KIND", "") == "tool_call" or
                              (getattr(b, "KIND", "") == "text" and not b.text)
                              for b in msg.blocks)


def _hidden(repo: Repository, events: list[tuple[str, Event]], keep: set[str]) -> set[str]:
    """The events the page leaves out by default: source bookkeeping (as `ctx log` hides it)
    and responses with nothing to show; never one in KEEP (the branch tips)."""
    out = set()
    for eid, ev in events:
        if eid in keep:
            continue
        if is_bookkeeping(ev):
            out.add(eid)
        elif ev.type == "ModelResponseReceived":
            mid = ev.causality.get("message_id")
            if _noise(ev, _message(repo, mid) if isinstance(mid, str) else None):
                out.add(eid)
    return out


def shown_event(repo: Repository, event_id: str, session_id: str) -> str:
    """EVENT_ID, or when the page leaves it out (see `session_model`), the nearest event on
    its first-parent line that the page shows: where `ctx view REV` opens."""
    tips = set(repo.branches(session_id).values())
    eid = event_id
    while eid not in tips:
        ev = repo.graph.event(eid)
        if not ev.parents or not _hidden(repo, [(eid, ev)], tips):
            break
        eid = ev.parents[0]
    return eid


def _compaction(repo: Repository, cid: str, index: dict[str, int], event_id: str,
                projector: Projector) -> dict[str, Any] | None:
    rec = _get(repo, cid, Compaction)
    if rec is None:
        return None
    src = list(rec.source_event_ids)
    checks = structural(repo, rec) + rerun(repo, rec, event_id, projector)
    return {"id": cid, "kind": rec.kind, "first_event": rec.first_event,
            "last_event": rec.last_event, "first_kept": rec.first_kept,
            "source_count": len(src), "sources": [index.get(s, -1) for s in src],
            "source_ids": src if len(src) <= 64 else src[:32] + src[-32:],
            "tokens_before": rec.tokens_before, "tokens_after": rec.tokens_after,
            "summary": rec.summary, "provenance": _jsonable(rec.provenance),
            "decisions": _jsonable(rec.decisions), "open_questions": _jsonable(rec.open_questions),
            "next_steps": _jsonable(rec.next_steps), "errors": _jsonable(rec.errors),
            "files": _jsonable(rec.files), "memory_candidates": len(rec.memory_candidates),
            "previous": rec.previous, "checks": checks}


def bundle_model(repo: Repository, bid: str) -> dict[str, Any] | None:
    """A recorded context bundle ("what the model saw"): every segment, kept or dropped."""
    try:
        value = repo.objects.get(bid)
    except NotFound:
        return None
    if not isinstance(value, dict) or "segments" not in value:
        return None
    b = thaw(value)
    segs = []
    for s in b.get("segments", ()):
        text, n = _cut(str(s.get("text") or ""), SEGMENT_TEXT_LIMIT)
        tier = s.get("tier")
        segs.append({"kind": s.get("kind", ""), "tier": tier if isinstance(tier, int) else None,
                     "tokens": s.get("tokens", 0), "kept": bool(s.get("kept")),
                     "trimmed": bool(s.get("trimmed")), "reason": s.get("reason", ""),
                     "sources": list(s.get("sources", ()))[:20],
                     "source_count": len(s.get("sources", ())), "text": text, "text_len": n})
    return {"id": bid, "used_tokens": b.get("used_tokens", 0), "max_tokens": b.get("max_tokens", 0),
            "reserved_output": b.get("reserved_output", 0), "tokenizer": b.get("tokenizer", ""),
            "state_event": b.get("state_event", ""), "usage": _jsonable(b.get("usage", {})),
            "segments": segs}


def artifact_model(repo: Repository, aid: str, limit: int = ARTIFACT_EMBED_LIMIT
                   ) -> dict[str, Any] | None:
    """An artifact's description and (up to `limit` bytes of) its content as text."""
    art = _get(repo, aid, Artifact)
    if art is None:
        return None
    return {"id": aid, "kind": art.kind, "size": art.size, "uri": art.uri, "summary": art.summary,
            "media_type": art.media_type, "truncated": art.size > limit,
            "text": _text_preview(repo, art.content, limit) if limit else None}


class _States:
    """Projected states with structural sharing: each state is a list of indices into one table
    of field values, and a field value the fold did not change (the same object) is stored
    once. The page rebuilds a state as {FIELDS[j]: values[state[j]]}."""

    #: `tool_effects` is the fold's own bookkeeping (effects waiting for a result), not state
    #: a reader looks at; `version`/`source_event` change at every event.
    FIELDS = tuple(f for f in AgentState.__dataclass_fields__
                   if f not in ("version", "source_event", "tool_effects"))

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.states: list[list[int]] = []
        self._seen: dict[int, tuple[Any, int]] = {}  # id(value) -> (value kept alive, index)
        self._last: list[int] | None = None

    def add(self, state: AgentState) -> int:
        idx = []
        for f in self.FIELDS:
            v = getattr(state, f)
            hit = self._seen.get(id(v))
            if hit is None or hit[0] is not v:
                self.values.append(_calls_view(v) if f == "tool_calls" else _jsonable(v))
                hit = (v, len(self.values) - 1)
                self._seen[id(v)] = hit
            idx.append(hit[1])
        if idx != self._last:
            self.states.append(idx)
            self._last = idx
        return len(self.states) - 1

    def to_dict(self) -> dict[str, Any]:
        return {"fields": list(self.FIELDS), "values": self.values, "states": self.states}


def _calls_view(calls: Any) -> dict[str, Any]:
    """The state's tool-call book as a reader wants it: which calls are open, and counts."""
    c = thaw(calls)
    return {"pending": {k: str(v.get("name", "")) for k, v in dict(c.get("pending") or {}).items()},
            "abandoned": {k: str(v.get("reason", "")) for k, v in
                          dict(c.get("abandoned") or {}).items()},
            "completed": c.get("completed", 0), "failed": c.get("failed", 0)}


def state_dict(state: AgentState) -> dict[str, Any]:
    """One projected state for the page (the server's answer for any event)."""
    return {f: (_calls_view(getattr(state, f)) if f == "tool_calls" else
                _jsonable(getattr(state, f))) for f in _States.FIELDS}


def session_model(repo: Repository, session_id: str, *, states: str = "auto",
                  embed_artifacts: bool = True, bookkeeping: bool = False) -> dict[str, Any]:
    """One session for the page. `states`: "all" (every event's state, deduplicated), "turns"
    (state at turn ends and branch tips), "none" (the server projects on demand) or "auto"
    ("all" up to ALL_STATES_LIMIT events, else "turns").

    Without `bookkeeping`, source bookkeeping events and responses with nothing to show are
    left out, as `ctx log` leaves them out: each row's parents are its nearest shown
    ancestors, states are still folded over every event, and a hidden response's token usage
    goes to the next shown event of its line. `hidden` counts what was left out."""
    sess = repo.session(session_id)
    branches = repo.branches(session_id)
    if not branches:
        raise NotFound(f"session {session_id[:12]} has no branches")
    harness = sess.origin.get("format") if isinstance(sess.origin.get("format"), str) else ""
    walked = _session_events(repo, list(branches.values()))
    hidden = set() if bookkeeping else _hidden(repo, walked, set(branches.values()))
    shown_parents: dict[str, tuple[str, ...]] = {}
    if hidden:
        shown_parents, _ = visible_parents(walked, {e for e, _ev in walked} - hidden)
    newest_first = [(eid, ev) for eid, ev in walked if eid not in hidden]
    layout = lanes([(eid, shown_parents.get(eid, ev.parents)) for eid, ev in newest_first])
    events = list(reversed(newest_first))
    index = {eid: i for i, (eid, _ev) in enumerate(events)}
    if states == "auto":
        states = "all" if len(events) <= ALL_STATES_LIMIT else "turns"
    tips = {tip: name for name, tip in branches.items()}
    messages: dict[str, dict[str, Any]] = {}
    artifacts: dict[str, dict[str, Any]] = {}
    compactions: dict[str, dict[str, Any]] = {}
    bundles: dict[str, dict[str, Any]] = {}
    children: dict[int, list[int]] = {}
    rows: list[dict[str, Any]] = []
    requests: dict[str, int] = {}  # tool_call_id -> row of its request (newest seen)
    projector = Projector(repo)
    for i, (eid, ev) in enumerate(events):
        msg = None
        mid = ev.causality.get("message_id")
        if isinstance(mid, str):
            if mid not in messages:
                msg = _message(repo, mid)
                if msg is not None:
                    messages[mid] = {"role": msg.role,
                                     "blocks": [_block(b.to_dict()) for b in msg.blocks]}
            else:
                msg = _message(repo, mid)
        parents = [index[p] for p in shown_parents.get(eid, ev.parents) if p in index]
        for p in parents:
            children.setdefault(p, []).append(i)
        row: dict[str, Any] = {"id": eid, "t": ev.type, "a": ev.actor, "ts": ev.ts,
                               "g": ev.generation, "p": parents, "s": _summary(ev, msg, harness),
                               **layout[i]}
        if isinstance(mid, str) and mid in messages:
            row["m"] = mid
        if eid in tips:
            row["tip"] = [n for n, t in branches.items() if t == eid]
        _payload_extras(repo, row, ev, index, compactions, bundles, artifacts, embed_artifacts,
                        projector)
        tcid = tool_call_id(ev.payload, ev.causality)
        if ev.type == "ToolCallRequested" and tcid:
            requests[tcid] = i
            row["call"] = {"id": tcid, "name": str(ev.payload.get("name") or ""),
                           "effects": [e.to_dict() for e in call_effects(
                               str(ev.payload.get("name") or ""), ev.payload.get("args"), harness)]}
        elif ev.type in RESULT_TYPES and tcid in requests:
            req = requests[tcid]
            row["pair"] = req
            rows[req].setdefault("results", []).append(i)
        rows.append(row)
    _call_status(rows, events)
    if hidden:
        _usage_of_hidden(rows, walked, hidden, index)
    state_values = _project_states(repo, rows, list(reversed(walked)), states, branches, index) \
        if states != "none" else None
    _compact_rows(rows, children)
    return {"id": session_id, "title": sess.title, "format": harness or "native", "cwd": sess.cwd,
            "kind": sess.kind, "created": sess.created, "parent": sess.parent_session,
            "spawn_event": sess.spawn_event, "branches": {n: index[t] for n, t in branches.items()},
            "events": rows, "messages": messages, "artifacts": artifacts,
            "compactions": compactions, "bundles": bundles, "states": state_values,
            "states_mode": states, "hidden": len(hidden),
            "children": {str(k): v for k, v in children.items() if len(v) > 1}}


def _compact_rows(rows: list[dict[str, Any]], children: dict[int, list[int]]) -> None:
    """Leave out what the page can infer, so a 100k-event page parses faster: `p` when it is
    [the previous row], `c` when 0, `th` when empty, `up` when it is [c] for a row with parents
    and `dn` when it is [c] for a row with children (the straight line of a linear history).
    `row_parents` and the page's `prepare` put them back."""
    for i, r in enumerate(rows):
        c = r["c"]
        if r["up"] == ([c] if r["p"] else []):
            del r["up"]
        if r["dn"] == ([c] if children.get(i) else []):
            del r["dn"]
        if not r["th"]:
            del r["th"]
        if not c:
            del r["c"]
        if r["p"] == ([i - 1] if i else []):
            del r["p"]


def row_parents(rows: list[dict[str, Any]], i: int) -> list[int]:
    """The parent rows of row I of a session model (see `_compact_rows`)."""
    return rows[i].get("p", [i - 1] if i else [])


def _payload_extras(repo: Repository, row: dict[str, Any], ev: Event, index: dict[str, int],
                    compactions: dict, bundles: dict, artifacts: dict, embed: bool,
                    projector: Projector) -> None:
    p = ev.payload
    u = _usage(ev)
    if u is not None:
        row["u"] = u
    def link(field: str, table: dict, key: str, build) -> None:
        """row[key] = the id the event's causality names under FIELD, once TABLE holds it."""
        oid = ev.causality.get(field)
        if not isinstance(oid, str):
            return
        if oid not in table and (value := build(oid)) is not None:
            table[oid] = value
        if oid in table or key == "art":
            row[key] = oid

    link("compaction_id", compactions, "k",
         lambda cid: _compaction(repo, cid, index, row["id"], projector))
    link("bundle_id", bundles, "bd", lambda bid: bundle_model(repo, bid))
    link("artifact_id", artifacts, "art",
         lambda aid: artifact_model(repo, aid, ARTIFACT_EMBED_LIMIT if embed else 0))
    if ev.type not in ("UserPromptSubmitted", "ModelResponseReceived", "ToolCallRequested") \
            and "m" not in row and p:
        text = json.dumps(_jsonable(p), ensure_ascii=False, separators=(",", ":"))
        row["pl"], n = _cut(text, TEXT_LIMIT)  # the page indents it when it is whole JSON


def _usage(ev: Event) -> list[int] | None:
    """[input, output] tokens the event reports (a response's usage, a built context's size)."""
    p = ev.payload
    if isinstance(p.get("usage"), dict):
        u = normalize_usage(thaw(p["usage"]))
        return [u["input"], u["output"]]
    if ev.type == "ContextBuilt" and isinstance(p.get("used_tokens"), int):
        return [p["used_tokens"], 0]
    return None


def _usage_of_hidden(rows: list[dict[str, Any]], walked: list[tuple[str, Event]],
                     hidden: set[str], index: dict[str, int]) -> None:
    """A hidden response's usage goes to the first shown event after it on its first-parent
    line, unless that one reports its own (Claude Code repeats one API call's usage on each
    record of the response: counting it twice would double the chart)."""
    next_of: dict[str, str] = {}
    for eid, ev in reversed(walked):  # oldest first: the first child on a line wins
        if ev.parents:
            next_of.setdefault(ev.parents[0], eid)
    for eid, ev in walked:
        if eid not in hidden or (u := _usage(ev)) is None:
            continue
        cur = next_of.get(eid)
        while cur is not None and cur in hidden:
            cur = next_of.get(cur)
        if cur is not None and "u" not in rows[index[cur]]:
            rows[index[cur]]["u"] = u


def _call_status(rows: list[dict[str, Any]], events: list[tuple[str, Event]]) -> None:
    """Mark each request "ok"/"error" (from its result) or "pending"/"abandoned" (the one rule
    in state.calls, folded along the request's own first-parent line)."""
    for row in rows:
        if "call" not in row:
            continue
        if row.get("results"):
            last = events[row["results"][-1]][1]
            err = last.type == "ToolCallFailed" or bool(last.payload.get("is_error"))
            row["call"]["status"] = "error" if err else "ok"
    open_rows = [i for i, r in enumerate(rows) if "call" in r and not r.get("results")]
    if not open_rows:
        return
    first_child: dict[int, int] = {}
    for j, r in enumerate(rows):
        if r["p"] and r["p"][0] not in first_child:
            first_child[r["p"][0]] = j
    for i in open_rows:
        book = EMPTY_BOOK
        line = _line_from(first_child, rows[i]["p"][0] if rows[i]["p"] else i)
        for j in line:
            eid, ev = events[j]
            book = step(book, eid, ev.type, ev.payload, ev.causality)
        status = book.status(rows[i]["call"]["id"]) or "pending"
        rows[i]["call"]["status"] = status


def _line_from(first_child: dict[int, int], start: int) -> list[int]:
    """Row indices from START forward along first-child links to a leaf (the oldest branch's
    line through START)."""
    line, cur = [], start
    while True:
        line.append(cur)
        nxt = first_child.get(cur)
        if nxt is None:
            return line
        cur = nxt


def _project_states(repo: Repository, rows: list[dict[str, Any]], events: list[tuple[str, Event]],
                    mode: str, branches: dict[str, str], index: dict[str, int]
                    ) -> dict[str, Any]:
    """Fold every event (EVENTS: all of them oldest first, hidden ones too, so a state is
    what `ctx state` says) onto its first parent's state, and keep the states the mode asks
    for; the rows of shown events get `si` (their state's index)."""
    table = _States()
    wanted: set[int] | None = None
    if mode == "turns":
        wanted = {index[t] for t in branches.values()}
        for r in rows:
            if r["t"] == "UserPromptSubmitted":
                wanted.update(r["p"][:1])
    states: dict[str, AgentState] = {}
    refcount: dict[str, int] = {}
    for _eid, ev in events:
        if ev.parents:
            refcount[ev.parents[0]] = refcount.get(ev.parents[0], 0) + 1

    def lookup(mid: str) -> Message | None:
        return _message(repo, mid)

    for eid, ev in events:
        parent = ev.parents[0] if ev.parents else None
        start = states.get(parent) if parent is not None else None
        if parent is not None and parent in refcount:
            refcount[parent] -= 1
            if refcount[parent] == 0:
                states.pop(parent, None)  # no other child needs it: keep memory flat
        state = fold(start if start is not None else AgentState(), eid, ev, lookup)
        if refcount.get(eid):
            states[eid] = state
        i = index.get(eid)
        if i is not None and (wanted is None or i in wanted):
            rows[i]["si"] = table.add(state)
    return table.to_dict()
