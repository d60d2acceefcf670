"""Redacted views of a repository for what leaves it once: packs and exports.

`redacted_view(repo, refs)` rewrites everything the refs reach into an overlay (the store is
not touched) and returns the overlay, the refs as they name the redacted tips, and a report.
A git push keeps its copy instead (the remote-tracking refs must name it, and the next push
must reuse its ids): that is `pushmap.redact_into_store`, docs/format.md "Redacted pushes".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..refs.names import split_branch_ref
from ..repo import Repository
from .detect import Redactor
from .policy import RedactionPolicy, policy_for
from .rewrite import OverlayStore, Rewriter, RewriteReport, remap_refs


@dataclass
class RedactedView:
    objects: OverlayStore  #: reads the redacted objects (and the untouched ones, unchanged)
    refs: dict[str, str]  #: ref name -> redacted tip (session refs follow a changed session id)
    mapping: dict[str, str]  #: old id -> redacted id, for everything reached
    report: RewriteReport

    def repository(self) -> Repository:
        """A read-only-by-convention Repository over the view (for exporters)."""
        from ..refs import MemoryRefs

        repo = Repository(None, self.objects, MemoryRefs())
        with repo.transaction(message="redacted view") as tx:  # writes to the overlay only
            for name, tip in self.refs.items():
                tx.create_ref(name, tip)
        return repo


def policy_for_refs(repo: Repository, refs: Mapping[str, str]) -> RedactionPolicy:
    """The policy for what leaves the store with REFS (a pack or push may carry several
    sessions): each session's own policy (the store's, its config's keys winning) decides for
    it, and the strictest union applies to all — the extra patterns of every session, and
    `on_export`/`on_pack`/`on_push` if any of them sets it. Without sessions, the store's."""
    store = policy_for(repo)
    sessions = []
    for name in refs:
        sid = session_of_ref(name)
        if sid and sid not in sessions:
            sessions.append(sid)
    if not sessions:
        return store
    policies = [policy_for(repo, sid) for sid in sessions]
    extra: list[tuple[str, str]] = []
    for p in policies:
        for pat in p.patterns:
            if pat not in store.patterns and pat not in extra:
                extra.append(pat)
    flags = {f"on_{a}": any(p.default_for(a) for p in policies)
             for a in ("export", "pack", "push")}
    changed = {k: v for k, v in flags.items() if v != getattr(store, k)}
    if not extra and not changed:
        return store
    return RedactionPolicy(**{**store.__dict__, **changed,
                              "patterns": store.patterns + tuple(extra)})


META_PREFIX = "refs/session-meta/"


def session_of_ref(name: str) -> str | None:
    """The session a travelling ref belongs to: `refs/sessions/<sid>/<branch>` or
    `refs/session-meta/<sid>`; None for any other ref."""
    parts = split_branch_ref(name)
    if parts:
        return parts[0]
    return name[len(META_PREFIX):] if name.startswith(META_PREFIX) else None


def redacted_view(repo: Repository, refs: Mapping[str, str],
                  policy: RedactionPolicy | None = None) -> RedactedView:
    """Redact everything REFS ({ref name: tip}) reach into an overlay of the repository."""
    policy = policy or policy_for_refs(repo, refs)
    store = OverlayStore(repo.objects)
    rw = Rewriter(repo.objects, store, Redactor(policy))
    rw.rewrite(sorted(set(refs.values())))
    return RedactedView(store, remap_refs(refs, rw.mapping), rw.mapping, rw.report)
