"""Reading history: log, show, diff, reflog, status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import RefNotFound
from ..objects import Event, StoredObject, thaw
from ..refs import HEAD, check_ref_name, split_branch_ref
from ..repo import Repository
from ..repo.revparse import reflog_ref_name, resolve_event, resolve_object, resolve_ref_name

if TYPE_CHECKING:
    from ..objects.message import Message
    from .eventfilter import EventFilter


def event_dict(eid: str, ev: Event) -> dict[str, Any]:
    d = ev.to_dict()
    d["id"] = eid
    return d


def log(repo: Repository, rev: str | None = None, n: int | None = None,
        all_branches: bool = False, first_parent: bool = False,
        flt: EventFilter | None = None,
        walked: list[tuple[str, Event]] | None = None) -> list[tuple[str, Event]]:
    """Events newest first from REV (default HEAD), or from every branch of HEAD's session
    (every session's when HEAD is on none); with both, every branch of REV's session plus REV
    (git's `log --all REV`: the refs and REV); with `flt`, the first N events it keeps.
    `walked` collects every event looked at, for `eventfilter.visible_parents`."""
    if all_branches and rev:
        tip = resolve_event(repo, rev)
        sid = repo.session_of_event(tip)
        tips = [*(repo.branches(sid).values() if sid else ()), tip]
    elif all_branches:
        cur = repo.current()
        if cur.session:
            tips = list(repo.branches(cur.session).values())
        else:
            tips = [t for _, t in repo.refs.iter_refs("refs/sessions/")]
        if cur.tip:
            tips.append(cur.tip)
    else:
        tips = [resolve_event(repo, rev or HEAD)]
    if flt is None or not flt.active:
        events = list(repo.graph.walk(tips, limit=n, first_parent=first_parent))
        if walked is not None:
            walked.extend(events)
        return events
    from .eventfilter import filtered  # start-up: not the grep scan of search.py

    return filtered(repo.graph.walk(tips, first_parent=first_parent), flt, n, walked)


def message_of(repo: Repository, ev: Event) -> Message | None:
    """The message an event names (`causality.message_id`), or None."""
    mid = ev.causality.get("message_id")
    if isinstance(mid, str) and mid in repo.objects:
        from ..objects.message import Message

        return repo.objects.get_typed(mid, Message)
    return None


def _text_preview(repo: Repository, content_id: str, limit: int = 8192) -> str | None:
    """The first `limit` bytes of an artifact's content as text; None when it is binary."""
    from ..chunking import open_content

    with open_content(repo.objects, content_id) as f:
        head = f.read(limit)
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:  # a character cut at the limit
            return head[:exc.start].decode("utf-8")
        return None


def _call_name(repo: Repository, result: Event, depth: int = 500) -> str:
    """The tool name of a result's call: the nearest earlier ToolCallRequested with the same
    call id among its first-parent ancestors (results often do not repeat the name)."""
    call = result.payload.get("tool_call_id") or result.causality.get("tool_call_id")
    for _eid, ev in repo.graph.walk(result.parents[:1], limit=depth, first_parent=True):
        if ev.type == "ToolCallRequested" and ev.payload.get("tool_call_id") == call:
            return str(ev.payload.get("name", ""))
    return ""


def _named_session(repo: Repository, rev: str) -> str | None:
    """The session of REV when REV names a branch (HEAD on one, or SESSION/BRANCH): no walk."""
    if "~" in rev or "^" in rev or "@{" in rev:
        return None
    ref = resolve_ref_name(repo, rev)
    if ref == HEAD:
        ref = repo.current().ref
    parts = split_branch_ref(ref) if ref else None
    return parts[0] if parts else None


def show(repo: Repository, rev: str, source: bool = False) -> dict[str, Any]:
    """Any object by revision or id: its type, id and decoded content; for an event also its
    session, the message it names and the artifacts it or that message refers to, and with
    `source` the original transcript line an importer kept (`source_line`, JSON text)."""
    obj_id = resolve_object(repo, rev)
    type_name, _ = repo.objects.get_raw(obj_id)
    obj = repo.objects.get(obj_id)
    if isinstance(obj, StoredObject):
        content: Any = obj.to_dict()
    elif isinstance(obj, bytes):
        try:
            content = obj.decode("utf-8")
        except UnicodeDecodeError:
            content = {"binary": len(obj)}
    else:
        content = thaw(obj)
    info: dict[str, Any] = {"id": obj_id, "type": type_name, "content": content}
    if isinstance(obj, Event):
        info["session"] = _named_session(repo, rev) or repo.session_of_event(obj_id)
        if source:
            from ..importers.records import event_line

            info["source_line"] = event_line(repo.objects, obj.payload, obj.causality)
        if obj.type in ("ToolCallFinished", "ToolCallFailed"):
            info["tool_name"] = obj.payload.get("name") or _call_name(repo, obj)
    # by type name, not isinstance: showing an event without a message never loads message.py
    if type_name == "artifact":
        info["preview"] = _text_preview(repo, obj.content)
    mid = obj.causality.get("message_id") if isinstance(obj, Event) else None
    msg = obj if type_name == "message" else None
    if isinstance(mid, str) and mid in repo.objects:
        from ..objects.message import Message

        msg = repo.objects.get_typed(mid, Message)
        info["message"] = {"id": mid, **msg.to_dict()}
    refs = []
    if isinstance(obj, Event) and isinstance(obj.causality.get("artifact_id"), str):
        refs.append(obj.causality["artifact_id"])
    for block in msg.blocks if msg is not None else ():
        for attr in ("output_ref", "artifact_ref"):
            ref = getattr(block, attr, "")
            if ref and ref not in refs:
                refs.append(ref)
    info["artifacts"] = {}
    for ref in refs:
        if ref in repo.objects:
            from ..objects.message import Artifact

            art = repo.objects.get_typed(ref, Artifact)
            info["artifacts"][ref] = art.to_dict()
    return info


class DiffResult(NamedTuple):  # not a dataclass: ~10x cheaper to define at start-up
    a: str
    b: str
    base: str | None
    only_a: list[tuple[str, Event]]
    only_b: list[tuple[str, Event]]
    hidden_a: int = 0  # source bookkeeping events left out (see `diff`)
    hidden_b: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "merge_base": self.base,
                "only_a": [event_dict(i, e) for i, e in self.only_a],
                "only_b": [event_dict(i, e) for i, e in self.only_b],
                "bookkeeping_hidden": {"a": self.hidden_a, "b": self.hidden_b}}


def diff(repo: Repository, a: str, b: str, bookkeeping: bool = False) -> DiffResult:
    """Events only in A and only in B from their merge base, newest first. Source bookkeeping
    (`eventfilter.is_bookkeeping`: records an importer kept that nobody wrote) is left out and
    counted, as `ctx log` hides it, unless `bookkeeping`."""
    from .eventfilter import is_bookkeeping

    ia, ib = resolve_event(repo, a), resolve_event(repo, b)
    d = repo.graph.diff(ia, ib)
    ev = repo.graph.event
    only_a, only_b = [(i, ev(i)) for i in d.only_a], [(i, ev(i)) for i in d.only_b]
    if bookkeeping:
        return DiffResult(ia, ib, d.base, only_a, only_b)
    shown_a = [x for x in only_a if not is_bookkeeping(x[1])]
    shown_b = [x for x in only_b if not is_bookkeeping(x[1])]
    return DiffResult(ia, ib, d.base, shown_a, shown_b, len(only_a) - len(shown_a),
                      len(only_b) - len(shown_b))


def reflog(repo: Repository, ref: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(full ref name, entries newest first with their @{N} index).

    REF is resolved like a revision's ref (a deleted branch still names its reflog); a name
    that is neither a ref nor has a reflog is RefNotFound, an invalid one InvalidRefName."""
    if ref is None:
        name = HEAD
    else:
        found = reflog_ref_name(repo, ref)
        if found is None:
            check_ref_name(ref)
            raise RefNotFound(f"no ref or reflog named {ref!r}")
        name = found
    entries = repo.refs.reflog(name)
    out = []
    for i, e in enumerate(reversed(entries)):
        d = e.to_dict()
        d["index"] = i
        out.append(d)
    return name, out


def status(repo: Repository, recent: int = 5) -> dict[str, Any]:
    """Where HEAD is; when it names no event, how many sessions the store has and the
    `recent` most recently active ones, so a fresh checkout of an imported store can pick one."""
    cur = repo.current()
    info: dict[str, Any] = {"store": str(repo.path) if repo.path else None,
                            "session": cur.session, "branch": cur.branch, "head": cur.tip,
                            "detached": cur.ref is None}
    session = cur.session or (repo.session_of_event(cur.tip) if cur.tip else None)
    if session:
        from .session_meta import read_meta  # status only: `ctx log` and `show` never need it

        meta = read_meta(repo, session)
        info["session"] = session
        info["title"] = meta.title
        info["tags"] = list(meta.tags)
        info["branches"] = sorted(repo.branches(session))
    if cur.tip:
        ev = repo.graph.event(cur.tip)
        info["events"] = ev.generation
        info["last_event"] = {"type": ev.type, "ts": ev.ts}
    else:
        from .listing import session_entries  # projects state for titles: only when needed

        sessions = sorted(session_entries(repo), key=lambda e: e.last_activity, reverse=True)
        info["sessions"] = len(sessions)
        info["recent_sessions"] = [s.to_dict() for s in sessions[:recent]]
    if cur.ref and split_branch_ref(cur.ref) is None:
        info["ref"] = cur.ref
    return info
