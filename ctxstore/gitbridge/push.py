"""`ctx push`: send session refs to a git remote, fast-forward only per ref, by git's CAS.

Order (docs/format.md "Git remotes", push): list the remote's refs; decide per ref (up to
date, create, fast-forward, forced with a lease, or rejected); write one commit per update
into the mirror; push them in one git push whose negotiation checks every remote ref is still
at the value decided on; then the mirror's tracking refs and one ctx transaction moving the
remote-tracking refs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import BadPack, BadRevision, NotFound, RefConflict
from ..refs import SESSIONS_PREFIX
from ..transfer import packfile
from . import mirror as mir
from .localpush import local_path, push_local
from .remotes import remote_url
from .sendset import EventMeta, SendFilter, is_ancestor, objects_to_send
from .tracking import tracking_ref
from .transport import RemoteMoved, connect, list_ctx_refs, translated

Progress = Callable[[str, int, int], None]


@dataclass
class RefPush:
    ref: str  # local ref, refs/...
    old: str | None  # remote's tip before (event id), if known
    new: str
    action: str  # up-to-date | create | fast-forward | forced | rejected
    reason: str = ""
    objects: int = 0
    pack_bytes: int = 0
    commit: str = ""
    old_commit: str | None = None
    #: a redacted push: the raw local ref and tip this ref's redacted copy was made from
    raw_ref: str | None = None
    raw_tip: str | None = None

    def to_dict(self) -> dict:
        out = {"ref": self.ref, "old": self.old, "new": self.new, "action": self.action,
               "reason": self.reason, "objects": self.objects, "pack_bytes": self.pack_bytes}
        if self.raw_ref is not None:
            out["raw_ref"], out["raw_tip"] = self.raw_ref, self.raw_tip
        return out


@dataclass
class PushResult:
    remote: str
    url: str
    refs: list[RefPush] = field(default_factory=list)
    #: a redacted push: what the rewrite found and did (counts only, never a secret)
    redaction: dict | None = None

    @property
    def rejected(self) -> list[RefPush]:
        return [r for r in self.refs if r.action == "rejected"]

    def to_dict(self) -> dict:
        out = {"remote": self.remote, "url": self.url, "refs": [r.to_dict() for r in self.refs],
               "rejected": len(self.rejected), "redacted": self.redaction is not None}
        if self.redaction is not None:
            out["redaction"] = self.redaction
        return out


def select_refs(repo, sessions: list[str], all_sessions: bool) -> dict[str, str]:
    """{local ref: tip} to push: the branches and title ref of the named sessions (ids or
    prefixes), of every session with `all_sessions`, else of HEAD's session."""
    if all_sessions:
        sids = repo.session_ids()
    elif sessions:
        sids = [repo.resolve_session(s) for s in sessions]
    else:
        cur = repo.current()
        if cur.session is None:
            raise BadRevision("HEAD is not on a session branch: name the sessions to push, or "
                              "use --all")
        sids = [cur.session]
    out: dict[str, str] = {}
    for sid in sids:
        for branch, tip in repo.branches(sid).items():
            out[f"{SESSIONS_PREFIX}{sid}/{branch}"] = tip
        meta = repo.refs.read(f"refs/session-meta/{sid}")
        if meta is not None:
            out[f"refs/session-meta/{sid}"] = meta
    if not out:
        raise NotFound("nothing to push: no session branches selected")
    return dict(sorted(out.items()))


def push(repo, remote: str, sessions: list[str] | None = None, *, all_sessions: bool = False,
         force_with_lease: bool = False, progress: Progress | None = None,
         send_filter: SendFilter | None = None, redact: bool | None = None) -> PushResult:
    """Push; raises RefConflict (after pushing what it could) when a ref was rejected.

    `redact`: send a redacted copy (True), the raw history (False), or what the redaction
    policy's `on_push` says (None); docs/format.md "Redacted pushes"."""
    from ..redaction.policy import choose
    from ..redaction.views import policy_for_refs

    url = remote_url(repo, remote)
    refs = select_refs(repo, list(sessions or ()), all_sessions)
    policy = policy_for_refs(repo, refs) if redact is not False else None
    with mir.transfer_lock(repo):
        if policy is not None and choose(redact, policy, "push"):
            result = _push_redacted(repo, remote, url, refs, policy, force_with_lease, progress,
                                    send_filter)
        else:
            result = _push(repo, remote, url, refs, force_with_lease, progress, send_filter)
            _explain_redacted_remote(repo, result)
    if result.rejected:
        lines = "; ".join(f"{r.ref}: {r.reason}" for r in result.rejected)
        raise RefConflict(f"push to {remote} rejected {len(result.rejected)} ref(s): {lines}",
                          result=result)
    return result


def _push_redacted(repo, remote: str, url: str, refs: dict[str, str], policy,
                   force_with_lease: bool, progress: Progress | None,
                   send_filter: SendFilter | None) -> PushResult:
    """The redacted copy is written into the store and the push map first (steps 1-2 of
    docs/format.md "Redacted pushes"), then pushed like any refs; the transaction stays open
    around the push so the copy's objects are not collected before the tracking refs name
    them."""
    from ..redaction.pushmap import redact_into_store

    if progress is not None:
        progress("redact", 0, 0)
    with repo.transaction(message=f"push {remote} --redact") as tx:
        red = redact_into_store(repo, tx, refs, policy)
        result = _push(repo, remote, url, red.refs, force_with_lease, progress, send_filter,
                       label=f"push {remote} --redact")
    result.redaction = red.to_dict()
    for p in result.refs:
        p.raw_ref = red.raw[p.ref]
        p.raw_tip = refs[p.raw_ref]
        if p.action == "rejected" and p.reason.startswith("non-fast-forward"):
            p.reason += (" (a redacted copy has other ids than the raw history and than a copy "
                         "made under another redaction policy)")
    return result


def _explain_redacted_remote(repo, result: PushResult) -> None:
    """A raw push refused because the remote holds the redacted copy this store pushed says
    so, rather than suggesting a pull and merge of the copy into the raw branch."""
    refused = [p for p in result.rejected if p.reason.startswith("non-fast-forward")]
    if not refused:
        return
    from ..redaction.pushmap import redacted_images

    images = redacted_images(repo)
    for p in refused:
        if p.old in images:
            p.reason = ("the remote holds the redacted copy this store pushed (`ctx push "
                        "--redact` updates it; --force-with-lease would replace it with the "
                        "raw history, secrets included)")


def _push(repo, remote: str, url: str, refs: dict[str, str], force_with_lease: bool,
          progress: Progress | None, send_filter: SendFilter | None,
          label: str | None = None) -> PushResult:
    mirror = mir.open_mirror(repo)
    git_remote, callbacks = connect(mirror, url, progress)
    advertised = list_ctx_refs(git_remote, callbacks, url)
    tracked = mir.git_refs(mirror, f"refs/remotes/{remote}/")
    result = PushResult(remote, url)
    meta = EventMeta(repo.objects)
    plans = [_decide(repo, mirror, ref, tip, advertised, tracked, force_with_lease, meta)
             for ref, tip in refs.items()]
    result.refs = plans
    todo = [p for p in plans if p.action in ("create", "fast-forward", "forced")]
    if todo:
        for p in todo:
            _write_commit(repo, mirror, p, advertised, tracked, send_filter, meta)
        _send(repo, mirror, git_remote, callbacks, url, todo)
        _record(repo, mirror, remote, [p for p in todo if p.action != "rejected"],
                label or f"push {remote}")
    return result


def _decide(repo, mirror, ref: str, tip: str, advertised: dict[str, str],
            tracked: dict[str, str], lease: bool, meta: EventMeta) -> RefPush:
    rest = ref[len("refs/"):]
    old_commit = advertised.get(rest)
    known = tracked.get(rest)
    plan = RefPush(ref, None, tip, "create", old_commit=old_commit)
    if old_commit is None:
        return plan
    if old_commit != known and not lease and _contained(repo, mirror, old_commit, tip, meta):
        known = old_commit  # e.g. our own push whose tracking refs a kill -9 did not move
    if old_commit != known:
        plan.action = "rejected"
        plan.reason = ("the remote has changes this store has not fetched (fetch first: "
                       "`ctx fetch`, then `ctx pull` or `ctx merge`)" if not lease else
                       "stale info: the remote ref is not where this store last saw it "
                       "(`ctx fetch` first)")
        return plan
    manifest = mir.read_manifest(mirror, old_commit)
    plan.old = manifest.tip
    if manifest.tip == tip:
        plan.action = "up-to-date"
    elif manifest.tip in repo.objects and is_ancestor(meta, manifest.tip, tip):
        plan.action = "fast-forward"
    elif lease:
        plan.action = "forced"
    else:
        plan.action = "rejected"
        plan.reason = ("non-fast-forward: the remote's tip is not an ancestor of yours; "
                       "`ctx pull` (then `ctx merge`) or push with --force-with-lease")
    return plan


def _contained(repo, mirror, commit: str, tip: str, meta: EventMeta) -> bool:
    """Whether a remote commit this store's mirror holds names a tip already in `tip`'s
    history: the remote has nothing this store lacks, so the push is still a fast-forward."""
    if mirror.get(commit) is None:
        return False
    try:
        remote_tip = mir.read_manifest(mirror, commit).tip
    except BadPack:
        return False
    return remote_tip in repo.objects and is_ancestor(meta, remote_tip, tip)


def _write_commit(repo, mirror, p: RefPush, advertised: dict[str, str],
                  tracked: dict[str, str], send_filter: SendFilter | None,
                  meta: EventMeta) -> None:
    rest = p.ref[len("refs/"):]
    sid = mir.session_of_ref(rest)
    parents: list[str] = []
    if p.action == "fast-forward":
        parents.append(p.old_commit or "")
    for other, commit in sorted(advertised.items()):
        # other refs of the same session the remote holds and this store has imported
        if other == rest or mir.session_of_ref(other) != sid or tracked.get(other) != commit:
            continue
        parents.append(commit)
    bases = []
    for commit in parents:
        base = mir.read_manifest(mirror, commit).tip
        if base in repo.objects:
            bases.append(base)
    known = mir.known_ids(repo, mirror, parents) if bases else set()
    ids = objects_to_send(repo, p.new, bases, meta, known)
    if send_filter is not None:
        ids = send_filter(p.ref, p.new, ids)
    path = mir.tmp_path(repo, "push.ctxpack")
    try:
        summary = packfile.write_pack(repo.objects, path, {p.ref: p.new}, ids, bases,
                                      level=repo.config.get("compression_level", 3))
        manifest = mir.Manifest(p.ref, p.new, tuple(sorted(set(bases))), summary.objects)
        oid = mir.write_commit(mirror, manifest, path, parents)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    p.objects, p.pack_bytes, p.commit = summary.objects, summary.bytes, str(oid)
    mir.set_git_ref(mirror, mir.PUSH_PREFIX + rest, oid)


def _send(repo, mirror, git_remote, callbacks, url: str, todo: list[RefPush]) -> None:
    planned = {mir.REMOTE_PREFIX + p.ref[len("refs/"):]: p for p in todo}

    def negotiation(updates) -> None:
        for u in updates:
            p = planned.get(u.dst_refname)
            expected = p.old_commit if p is not None and p.old_commit else mir.ZERO_OID
            if str(u.src) != expected:
                raise RemoteMoved(f"{u.dst_refname} moved on the remote while pushing (another "
                                  f"push came between): nothing was sent; `ctx fetch` and retry",
                                  ref=u.dst_refname)

    path = local_path(url)
    if path is not None:
        try:
            refused = push_local(mirror, path, todo)
        finally:
            for p in todo:
                mir.delete_git_ref(mirror, mir.PUSH_PREFIX + p.ref[len("refs/"):])
        for name, reason in refused.items():
            p = planned[name]
            p.action, p.reason = "rejected", reason
        return
    # a new connection: the old values the negotiation sees are the remote's as of now
    git_remote, callbacks = connect(mirror, url, callbacks.progress)
    callbacks.negotiation = negotiation
    specs = [("+" if p.action == "forced" else "") +
             f"{mir.PUSH_PREFIX}{p.ref[len('refs/'):]}:{mir.REMOTE_PREFIX}{p.ref[len('refs/'):]}"
             for p in todo]
    try:
        with translated(url, "push to", callbacks):
            git_remote.push(specs, callbacks=callbacks)
    finally:
        for p in todo:
            mir.delete_git_ref(mirror, mir.PUSH_PREFIX + p.ref[len("refs/"):])
    for name, message in callbacks.rejected.items():
        p = planned.get(name)
        if p is not None:
            p.action, p.reason = "rejected", f"the remote refused it: {message}"


def _record(repo, mirror, remote: str, done: list[RefPush], label: str) -> None:
    """The mirror's tracking refs, then the ctx remote-tracking refs in one transaction."""
    if not done:
        return
    for p in done:
        mir.set_git_ref(mirror, f"refs/remotes/{remote}/{p.ref[len('refs/'):]}", p.commit)
    with repo.transaction(message=label) as tx:
        for p in done:
            name = tracking_ref(remote, p.ref[len("refs/"):])
            if name is None:
                continue
            tx.set_ref(name, p.new, expected=tx.read(name), message=f"{label}: {p.action}")
