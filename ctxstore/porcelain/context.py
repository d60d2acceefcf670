"""State, context, trace, stats and artifacts at a revision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BadRevision, InvalidInput, NotFound
from ..refs import HEAD, split_branch_ref
from ..repo import Repository
from ..repo.revparse import resolve
from ..state.projector import Projector

if TYPE_CHECKING:  # the manager and context compiler load only for `ctx context`
    from ..context import ContextBundle
    from ..manager import ContextManager
    from ..state.model import AgentState

FORMATS = ("neutral", "openai", "anthropic")


def manager_at(repo: Repository, rev: str | None) -> tuple[ContextManager, str]:
    """A ContextManager for the session REV belongs to (bound to REV's branch when REV names
    one, else to HEAD's branch if it is the same session, else to that session's main), and
    REV's event id."""
    from ..manager import ContextManager

    sid, branch, eid = locate(repo, rev)
    return ContextManager(repo, sid, branch), eid


def locate(repo: Repository, rev: str | None) -> tuple[str, str, str]:
    """(session, branch, event id) that `manager_at` binds to, without building a manager:
    `ctx state`, `trace`, `stats` and `diff` project state and never compile a context."""
    r = resolve(repo, rev or HEAD)
    eid = r.id
    repo.graph.event(eid)  # BadRevision if REV is not an event
    parts = split_branch_ref(r.ref) if r.ref else None
    if parts:
        sid, branch = parts
        if repo.refs.read(r.ref) is None:
            raise BadRevision(f"session {sid[:12]} has no branch {branch!r}")
        return sid, branch, eid
    sid = repo.session_of_event(eid)
    if not sid:
        raise BadRevision(f"{rev}: cannot tell which session it belongs to")
    cur = repo.current()
    branches = repo.branches(sid)
    if cur.session == sid and cur.branch:
        branch = cur.branch
    elif branches:
        branch = "main" if "main" in branches else min(branches)
    else:
        raise BadRevision(f"session {sid[:12]} has no branches")
    return sid, branch, eid


def state(repo: Repository, rev: str | None = None) -> AgentState:
    _, _, eid = locate(repo, rev)
    return Projector(repo).project(eid)


def context(repo: Repository, rev: str | None = None, budget: int | None = None,
            system_prompt: str | None = None, record: bool = False,
            truncate_system: bool = False, **retrieval: Any) -> ContextBundle:
    return context_report(repo, rev, budget, system_prompt, record, truncate_system,
                          **retrieval)[0]


def context_report(repo: Repository, rev: str | None = None, budget: int | None = None,
                   system_prompt: str | None = None, record: bool = False,
                   truncate_system: bool = False, **retrieval: Any) -> tuple[ContextBundle, Any]:
    """The bundle and what retrieval offered and refused (None when retrieval was off);
    RETRIEVAL: `retrieve`, `query`, `agent`, `allow_sensitive` of build_context."""
    cm, eid = manager_at(repo, rev)
    bundle = cm.build_context(eid, budget=budget, system_prompt=system_prompt, record=record,
                              auto_compact=False, truncate_system=truncate_system, **retrieval)
    return bundle, cm.last_retrieval


def render_payload(bundle: ContextBundle, fmt: str) -> dict[str, Any]:
    from ..context import to_anthropic, to_openai

    if fmt == "openai":
        return to_openai(bundle)
    if fmt == "anthropic":
        return to_anthropic(bundle)
    if fmt == "neutral":
        return bundle.to_dict()
    raise InvalidInput(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def _first_parent_history(repo: Repository, eid: str):
    return list(reversed(list(repo.graph.first_parents(eid))))


def trace(repo: Repository, rev: str | None = None) -> dict[str, Any]:
    _, _, eid = locate(repo, rev)
    from ..trace import trace as trace_of

    return trace_of(Projector(repo).project(eid), _first_parent_history(repo, eid))


def stats(repo: Repository, rev: str | None = None) -> dict[str, Any]:
    """The seed's Stats at REV: counters along REV's history (its branch), except
    `token_usage`, which is the whole session's (every branch, each provider response once);
    the branch's own share is `branch_token_usage`."""
    sid, _, eid = locate(repo, rev)
    window = int(repo.session(sid).config.get("context_window", 0))
    from ..trace import session_token_usage
    from ..trace import stats as stats_of

    out = stats_of(_first_parent_history(repo, eid), window, state=Projector(repo).project(eid))
    branch = out["token_usage"]
    tips = [*repo.branches(sid).values(), eid]
    out["token_usage"] = {**session_token_usage(repo.graph, tips),
                          "context_window_tokens": branch["context_window_tokens"],
                          "context_used_tokens": branch["context_used_tokens"],
                          "branches": len(repo.branches(sid))}
    out["branch_token_usage"] = branch
    return out


def state_diff_at(repo: Repository, a: str, b: str) -> dict[str, Any]:
    from ..state.diff import state_diff

    return state_diff(state(repo, a), state(repo, b))


def artifact_add(repo: Repository, path: str, kind: str = "file", summary: str = "",
                 sensitive: bool = False) -> dict:
    from ..chunking import put_artifact_content
    from ..objects.message import Artifact
    from ..userfiles import check_name, user_file_error

    p = Path(check_name(path))
    try:
        with open(p, "rb") as f:  # streamed: a large file is chunked, never held whole
            content, size = put_artifact_content(repo, f)
    except OSError as exc:
        raise user_file_error(exc, path, "read") from None
    art = Artifact(kind, content, size, uri=str(p), summary=summary, sensitive=sensitive)
    aid = repo.objects.put_object(art)
    cur = repo.current()
    event = None
    if cur.ref is not None and cur.tip is not None:  # an event names it: gc keeps it
        with repo.transaction(message="artifact add") as tx:
            event = tx.append("ArtifactAdded", "user",
                              {"path": str(p), "kind": kind, "size": size,
                               **({"summary": summary} if summary else {})},
                              {"artifact_id": aid})
    else:
        repo.objects.flush()
    return {"artifact": aid, "content": content, "size": size, "event": event}


def cat(repo: Repository, obj: str) -> Iterator[bytes]:
    """The bytes of an artifact's content, a blob or a chunked blob, streamed and verified."""
    oid = repo.objects.resolve(obj)
    kind = repo.objects.type_of(oid)
    if kind == "artifact":
        oid, kind = repo.objects.get(oid).content, "content"
    if kind not in ("blob", "chunks", "content"):
        raise NotFound(f"object {oid[:12]} is a {kind}, not an artifact or blob "
                       f"(use `ctx show` for structured objects)")
    from ..chunking import iter_content

    return iter_content(repo.objects, oid, verify=True)
