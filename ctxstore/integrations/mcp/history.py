"""What `ctx mcp` answers: an agent's own history, as plain JSON values.

`History` holds the store and implements each MCP tool and resource as a method returning
data (no protocol here: server.py binds these to the SDK, and tests call them directly).
Everything leaves through `Scrubber` (the redaction policy), and nothing here writes except
`memory_propose`, which the server offers only with `--allow-writes` and which never writes a
memory: it queues a proposal for `ctx memory review` (see proposals.py).

Three answers need layers above this one (the session listing's titles, `ctx show`'s view of
an event, and the context compiler, which lives in the manager): the caller passes them in as
`Views` (cli/cmd_mcp.py gives the porcelain's), so this package imports only its own layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...clock import parse_when
from ...errors import BadRevision, InvalidInput, NotFound
from ...objects import Compaction
from ...repo import Repository, iter_session_refs
from ...repo.revparse import resolve_object
from ...state.projector import Projector
from .scrub import Scrubber

#: Most hits, events or candidates one call returns (an agent's context is the scarce thing).
MAX_LIMIT = 100
#: The `context` tool's budget when none is given (tokens).
CONTEXT_BUDGET = 8000
#: Dropped segments listed by `context` (the rest are counted; `usage` sums them all).
MAX_DROPPED = 40
#: A recalled event's text beyond this many characters is cut (ctx://event/{id} has it all).
RECALL_TEXT = 2000


@dataclass(frozen=True)
class Views:
    """The answers built above the feature layer, supplied by the caller."""

    #: repo -> [session entry dict, ...] as `ctx sessions --json` lists them
    sessions: Callable[[Repository], list[dict[str, Any]]]
    #: (repo, object id) -> the dict `ctx show --json` prints
    show: Callable[[Repository, str], dict[str, Any]]
    #: (repo, event id, budget, query) -> the neutral bundle dict `ctx context --json` prints
    context: Callable[[Repository, str, int | None, str | None], dict[str, Any]]


class History:
    def __init__(self, repo: Repository, views: Views, *, allow_writes: bool = False) -> None:
        self.repo = repo
        self.views = views
        self.allow_writes = allow_writes
        self.scrubber = Scrubber(repo)
        self._listed: tuple[tuple, list[dict[str, Any]]] | None = None

    # -- where ---------------------------------------------------------------------------------

    def locate(self, session: str | None = None, branch: str | None = None,
               event: str | None = None) -> tuple[str, str | None, str]:
        """(session, branch, event) a call is about: EVENT if given, else SESSION's BRANCH tip
        (default `main`, else its first branch), else HEAD's — the current session."""
        repo = self.repo
        if event:
            eid = resolve_object(repo, event)
            if repo.objects.type_of(eid) != "event":
                raise InvalidInput(f"{event!r} is a {repo.objects.type_of(eid)}, not an event")
            sid = repo.session_of_event(eid)
            if not sid:
                raise BadRevision(f"{event}: cannot tell which session it belongs to")
            return sid, None, eid
        if session:
            sid = repo.resolve_session(session)
            branches = repo.branches(sid)
            name = branch or ("main" if "main" in branches else min(branches, default=""))
            if name not in branches:
                raise NotFound(f"session {sid[:12]} has no branch {name or '(none)'!r}")
            return sid, name, branches[name]
        cur = repo.current()
        if cur.session is None or cur.tip is None:
            raise NotFound("no current session (HEAD is not on a session's branch): "
                           "name a session (see the ctx://sessions resource)")
        if branch and branch != cur.branch:
            return self.locate(cur.session, branch)
        return cur.session, cur.branch, cur.tip

    def _out(self, value: Any, session: str | None) -> dict[str, Any]:
        data = self.scrubber.scrub(value, session)
        return {**data, "redacted": self.scrubber.take_count()}

    # -- tools ---------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10, harness: str | None = None,
               cwd: str | None = None, since: str | None = None, until: str | None = None,
               types: list[str] | None = None, tool: str | None = None,
               file: str | None = None, session: str | None = None,
               branch: str | None = None) -> dict[str, Any]:
        """Ranked hits over every session (ctx search): `since`/`until` as `ctx search` reads
        them, `session` a unique prefix, the rest as SearchFilters names them."""
        from ...search import SearchFilters
        from ...search import search as run_search

        filters = SearchFilters(
            harness=harness or None, cwd=cwd or None,
            since=parse_when(since, what="since") if since else None,
            until=parse_when(until, what="until") if until else None,
            types=tuple(types or ()), tool=tool or None, file=file or None,
            session=self.repo.resolve_session(session) if session else None,
            branch=branch or None)
        hits = run_search(self.repo, query, limit=2 * _limit(limit), filters=filters)
        out, withheld = [], 0
        for h in hits:
            hit = self.scrubber.scrub(h.to_dict(), h.session)
            why = self._memory_refusal(h.event) if h.type == "memory" else \
                self._sensitive(self.views.show(self.repo, h.event).get("artifacts", ()), h.session)
            if why and h.type == "memory":
                withheld += 1
                continue
            if why:
                hit["snippet"], hit["withheld"] = "", why
            out.append(hit)
        return {"query": query, "hits": out[:_limit(limit)], "memories_withheld": withheld,
                "redacted": self.scrubber.take_count()}

    def _memory_refusal(self, mid: str) -> str:
        """Why the current session may not be offered memory MID ('' if it may): the
        builder's own checks (scope, liveness, expiry, sensitivity, readable_by). `ctx
        search` shows a person every scope; an agent sees what its context could hold."""
        from ...memory import scope_keys
        from ...memory.governance import now_dt
        from ...memory.scopes import scope_ref
        from ...retrieval.select import live_ids, memory_refusal

        mem = self.repo.objects.get(mid) if mid in self.repo.objects else None
        keys = scope_keys(self.repo)
        scope = getattr(mem, "scope", "global")
        key = keys.visible().get(scope)  # None: a scope this session does not see
        live = live_ids(self.repo, scope_ref(scope, key)) if key is not None else frozenset()
        policy = self.scrubber.policy(self.repo.current().session)
        return memory_refusal(mem, keys, live, mid, now_dt(), agent="",
                              allow_sensitive=policy.admit_sensitive, min_confidence=0.0)

    def _sensitive(self, artifacts, session: str | None) -> str:
        """'' unless one of ARTIFACTS (ids) is marked sensitive and SESSION's policy does not
        admit sensitive material: then text drawn from it is withheld, as a build would."""
        from ...redaction.sensitivity import is_sensitive

        if self.scrubber.policy(session).admit_sensitive:
            return ""
        for aid in artifacts:
            if aid in self.repo.objects and is_sensitive(self.repo.objects.get(aid)):
                return (f"sensitive artifact {aid[:12]} (the redaction policy does not admit "
                        f"sensitive material: redaction.admit_sensitive)")
        return ""

    def session_state(self, session: str | None = None, branch: str | None = None,
                      event: str | None = None) -> dict[str, Any]:
        """The projected working state (goal, plan, files, errors, ...) at an event."""
        sid, name, eid = self.locate(session, branch, event)
        state = Projector(self.repo).project(eid).to_dict()
        return self._out({"session": sid, "branch": name, "event": eid, "state": state}, sid)

    def recall(self, summary: str | None = None, event: str | None = None,
               session: str | None = None, branch: str | None = None, query: str | None = None,
               limit: int = 20) -> dict[str, Any]:
        """The raw events compactions replaced on a branch, best match first with QUERY.
        SUMMARY (a compaction record id) keeps only what that summary replaced; EVENT is
        the branch point to look back from (a CompactionCompleted event, or any event)."""
        from ...retrieval.recall import compactions
        from ...retrieval.recall import recall as recall_events

        cid = None
        if summary:
            cid = resolve_object(self.repo, summary)
            if not isinstance(self.repo.objects.get(cid), Compaction):
                raise InvalidInput(f"{summary!r} is not a compaction record (a summary's id, "
                                   f"as a CompactionCompleted event names it)")
        if cid and not (event or session):
            sid, name, tip = self._holder(cid)
        else:
            sid, name, tip = self.locate(session, branch, event)
        if cid and cid not in {c for c, _ in compactions(self.repo, tip)}:
            raise NotFound(f"compaction {cid[:12]} is not on the history of {tip[:12]}")
        hits = recall_events(self.repo, tip, query or None, k=0 if cid else _limit(limit))
        if cid:
            hits = [h for h in hits if h.compaction == cid][:_limit(limit)]
        events = []
        for h in hits:
            row = h.to_dict()
            why = self._sensitive(h.artifacts, sid) if query else ""  # a query's snippet
            if why:
                row["text"], row["withheld"] = "", why
            elif len(row["text"]) > RECALL_TEXT:
                row["text"], row["truncated"] = row["text"][:RECALL_TEXT] + "…", len(row["text"])
            events.append(row)
        return self._out({"session": sid, "branch": name, "at": tip, "compaction": cid,
                          "events": events}, sid)

    def _holder(self, cid: str) -> tuple[str, str, str]:
        """A branch whose history holds compaction CID (HEAD's first)."""
        from ...retrieval.recall import compactions

        cur = self.repo.current()
        refs = sorted(iter_session_refs(self.repo),
                      key=lambda r: (r[0] != cur.session or r[1] != cur.branch, r[0], r[1]))
        for sid, name, tip in refs:
            if any(c == cid for c, _ in compactions(self.repo, tip)):
                return sid, name, tip
        raise NotFound(f"no branch's history holds compaction {cid[:12]}")

    def context(self, session: str | None = None, branch: str | None = None,
                event: str | None = None, budget: int | None = None,
                query: str | None = None) -> dict[str, Any]:
        """What ctxstore would compile for the model at an event under BUDGET tokens
        (default CONTEXT_BUDGET, not the session's window: the answer enters the asking
        agent's own context). Kept segments with their text, dropped ones without."""
        if budget is not None and budget < 1:
            raise InvalidInput("budget must be a positive number of tokens")
        sid, name, eid = self.locate(session, branch, event)
        bundle = self.views.context(self.repo, eid, budget or CONTEXT_BUDGET, query)
        segments = bundle.pop("segments", [])
        kept = [{"kind": g["kind"], "tier": f"P{g['tier']}", "tokens": g["tokens"],
                 "text": g["text"] or g["messages"], "sources": _ids(g["sources"], 20),
                 "reason": g["reason"], **({"trimmed": True} if g.get("trimmed") else {})}
                for g in segments if g["kept"]]
        dropped = [{"kind": g["kind"], "tier": f"P{g['tier']}", "tokens": g["tokens"],
                    "reason": g["reason"], "sources": _ids(g["sources"], 3)}
                   for g in segments if not g["kept"]]
        for key in ("eviction_order", "format"):
            bundle.pop(key, None)
        return self._out({"session": sid, "branch": name, "event": eid, **bundle,
                          "kept": kept, "dropped": dropped[:MAX_DROPPED],
                          "dropped_not_listed": max(0, len(dropped) - MAX_DROPPED)}, sid)

    def memory_search(self, query: str, limit: int = 10) -> dict[str, Any]:
        """Live memories the current session may be offered (scope, expiry, sensitivity and
        trust checks as the context builder applies them), best first."""
        from ...memory import scope_keys
        from ...retrieval import RetrievalIndex, search_memories

        repo = self.repo
        found = search_memories(repo, RetrievalIndex.open(repo), query, scope_keys(repo),
                                k=_limit(limit), min_confidence=0.0)
        rows = [{"id": mid, "score": round(score, 4), **mem.to_dict()}
                for mid, mem, score in found]
        return self._out({"query": query, "memories": rows}, repo.current().session)

    def memory_propose(self, content: str, sources: list[str], scope: str = "project",
                       kind: str = "fact", ttl: str | None = None,
                       update_policy: str | None = None,
                       keywords: list[str] | None = None) -> dict[str, Any]:
        """Queue a memory proposal for `ctx memory review` (never a memory write)."""
        from .proposals import propose

        if not self.allow_writes:
            raise ReadOnly("memory_propose is refused: this server is read-only (start it with "
                           "`ctx mcp --allow-writes` to let agents propose memories; a person "
                           "still accepts each one with `ctx memory review`)")
        res = propose(self.repo, content, sources, scope=scope, kind=kind, ttl=ttl,
                      update_policy=update_policy, keywords=keywords or ())
        return self._out(res, self.repo.current().session)

    # -- resources -----------------------------------------------------------------------------

    def sessions(self) -> dict[str, Any]:
        """Every session, one short row each (a store may hold thousands): the branch tips,
        subagent tree and tags are in ctx://session/{id}."""
        rows = [{"id": r["id"], "title": r["title"], "format": r["format"], "cwd": r["cwd"],
                 "created": r["created"], "last_activity": r["last_activity"],
                 "events": r["events"], "branches": sorted(r["branches"]),
                 **({"parent": r["parent"]} if r.get("parent") else {})}
                for r in self._listing()]
        return {"sessions": [self.scrubber.scrub(r, r.get("id")) for r in rows],
                "redacted": self.scrubber.take_count()}

    def _listing(self) -> list[dict[str, Any]]:
        """The session listing, listed again only when a session or session-meta ref moved
        (listing projects every session's title: seconds on a store of a thousand)."""
        key = tuple(self.repo.refs.iter_refs("refs/session"))
        if self._listed is None or self._listed[0] != key:
            self._listed = (key, self.views.sessions(self.repo))
        return self._listed[1]

    def session(self, session: str) -> dict[str, Any]:
        sid = self.repo.resolve_session(session)
        row = next((r for r in self._listing() if r.get("id") == sid), None)
        if row is None:
            raise NotFound(f"session {sid[:12]} has no branches")
        state = Projector(self.repo).project(self.locate(sid)[2]).to_dict()
        return self._out({**row, "state": state}, sid)

    def event(self, event: str) -> dict[str, Any]:
        sid, _, eid = self.locate(event=event)
        return self._out(self.views.show(self.repo, eid), sid)


class ReadOnly(InvalidInput):
    """A write asked of a server started without --allow-writes."""


def _ids(ids: list[str], most: int) -> list[str]:
    """Up to MOST source ids, shortened to 16 hex digits (a unique prefix: every tool and
    resource takes one), then "+N more"."""
    out = [i[:16] if len(i) == 64 else i for i in ids[:most]]
    return out + ([f"+{len(ids) - most} more"] if len(ids) > most else [])


def _limit(n: int) -> int:
    if not isinstance(n, int) or n < 1:
        raise InvalidInput(f"limit must be a positive integer, not {n!r}")
    return min(n, MAX_LIMIT)
