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
    store: OverlayStore  #: reads the redacted objects (and the untouched ones, unchanged)
    refs: dict[str, str]  #: ref name -> redacted tip (session refs follow a changed session id)
    mapping: dict[str, str]  #: old id -> redacted id, for everything reached
    report: RewriteReport

    def repository(self) -> Repository:
        """A read-only-by-convention Repository over the view (for exporters)."""
        from ..refs import MemoryRefs

        repo = Repository(None, self.store, MemoryRefs())
        with repo.transaction(message="redacted view") as tx:  # writes to the overlay only
            for name, tip in self.refs.items():
                tx.create_ref(name, tip)
        return repo


def policy_for_refs(repo: Repository, refs: Mapping[str, str]) -> RedactionPolicy:
    """The store's policy with the extra patterns of every session the refs belong to (one
    pack or push may carry several sessions; the strictest union applies to all)."""
    policy = policy_for(repo)
    extra: list[tuple[str, str]] = []
    for name in refs:
        parts = split_branch_ref(name)
        if parts:
            for p in policy_for(repo, parts[0]).patterns:
                if p not in policy.patterns and p not in extra:
                    extra.append(p)
    if not extra:
        return policy
    return RedactionPolicy(**{**policy.__dict__, "patterns": policy.patterns + tuple(extra)})


def redacted_view(repo: Repository, refs: Mapping[str, str],
                  policy: RedactionPolicy | None = None) -> RedactedView:
    """Redact everything REFS ({ref name: tip}) reach into an overlay of the repository."""
    policy = policy or policy_for_refs(repo, refs)
    store = OverlayStore(repo.store)
    rw = Rewriter(repo.store, store, Redactor(policy))
    rw.rewrite(sorted(set(refs.values())))
    return RedactedView(store, remap_refs(refs, rw.mapping), rw.mapping, rw.report)
