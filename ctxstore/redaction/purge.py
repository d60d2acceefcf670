"""`ctx redact --purge REV`: rewrite a session's history without its secrets, deliberately.

Raw events are never rewritten silently: redaction at build, export, pack and push works on
copies. Purging is the one way the store's own history loses a secret, and it is an
operation like any other ref move: every branch of the session moves to its redacted tip in
one transaction (new ids from the first event that held a secret on), recorded in the
operation log, so `ctx undo` moves them back. The old objects stay in the store — reachable
from the reflogs and the operation log — until those expire and `ctx gc` removes them
(`ctx reflog expire --all --expire=now && ctx gc --prune=now`, docs/redaction.md).

If the session object itself held a secret (its title), its id changes too, and the branches
move to the new session's ref names (HEAD follows).
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRevision, NotFound
from ..repo import Repository
from ..repo.revparse import resolve_event
from .detect import Redactor
from .policy import RedactionPolicy, policy_for
from .rewrite import Rewriter, RewriteReport, remap_refs


def session_of(repo: Repository, rev: str) -> str:
    """The session REV names: a session id (or prefix), or the session of a branch/event."""
    try:
        return repo.resolve_session(rev)
    except (BadRevision, NotFound):
        pass
    eid = resolve_event(repo, rev)
    sid = repo.session_of_event(eid)
    if not sid:
        raise BadRevision(f"{rev}: cannot tell which session it belongs to")
    return sid


def scan(repo: Repository, rev: str, policy: RedactionPolicy | None = None) -> dict[str, Any]:
    """What a purge of REV's session would redact (counts per detector and object type),
    without writing anything: the rewrite goes to an overlay that is thrown away."""
    from .views import redacted_view

    sid = session_of(repo, rev)
    refs = {f"refs/sessions/{sid}/{b}": t for b, t in repo.branches(sid).items()}
    view = redacted_view(repo, refs, policy or policy_for(repo, sid))
    return {"session": sid, "report": view.report.to_dict(),
            "refs": {n: {"old": refs[n], "new": view.refs.get(_renamed(n, sid, view.mapping))}
                     for n in sorted(refs)}}


def _renamed(name: str, sid: str, mapping: dict[str, str]) -> str:
    new_sid = mapping.get(sid, sid)
    return name.replace(f"refs/sessions/{sid}/", f"refs/sessions/{new_sid}/", 1)


def purge(repo: Repository, rev: str, policy: RedactionPolicy | None = None) -> dict[str, Any]:
    """Rewrite every branch of REV's session with its secrets redacted, as one operation.

    Returns {"session", "new_session", "report", "moves": [{ref, old, new}], "operation"}.
    Nothing moves (and no operation is recorded) when nothing was found."""
    sid = session_of(repo, rev)
    policy = policy or policy_for(repo, sid)
    refs = {f"refs/sessions/{sid}/{b}": t for b, t in repo.branches(sid).items()}
    moves: list[dict[str, str]] = []
    report = RewriteReport()
    with repo.transaction(message=f"redact --purge: session {sid[:12]}",
                          command=repo.command or "api: redact.purge") as tx:
        rw = Rewriter(repo.objects, repo.objects, Redactor(policy),
                      put_event=lambda f: tx.put_event(f, rw.mapping.get(sid, sid)))
        rw.rewrite(sorted(set(refs.values())))
        report = rw.report
        new_refs = remap_refs(refs, rw.mapping)
        new_sid = rw.mapping.get(sid, sid)
        head = repo.refs.read_head().ref
        for name, old in sorted(refs.items()):
            new_name = _renamed(name, sid, rw.mapping)
            new = new_refs[new_name]
            if new_name == name:
                if new != old:
                    tx.set_ref(name, new, expected=old, message="redact --purge")
                    moves.append({"ref": name, "old": old, "new": new})
                continue
            tx.delete_ref(name, message="redact --purge: session renamed")
            tx.create_ref(new_name, new, message="redact --purge")
            moves.append({"ref": name, "old": old, "new": ""})
            moves.append({"ref": new_name, "old": "", "new": new})
            if head == name:
                tx.set_head(ref=new_name, message="redact --purge: session renamed")
    return {"session": sid, "new_session": new_sid, "moves": moves,
            "operation": tx.op_id if moves else None, "report": report.to_dict()}
