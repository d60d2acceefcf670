"""Redaction policy: secrets found by detect-secrets and configurable patterns are replaced
when a context is built (by default), and on request or by policy when a session leaves the
store (export, pack, push); `purge` rewrites history deliberately, as an undoable operation.

    from ctxstore.redaction import Redactor, policy_for, redacted_view
    view = redacted_view(repo, {"refs/sessions/SID/main": tip})   # a pack: view.refs from
                                                                   # view.objects
    # a git push keeps its copy: ctxstore.redaction.pushmap.redact_into_store

Nothing here imports detect-secrets until a Redactor is built (extra `redact`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyattrs import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover
    from .detect import Redactor, detect_secrets_available
    from .policy import DEFAULT_DETECTORS, RedactionPolicy, choose, policy_for
    from .purge import purge, scan
    from .rewrite import OverlayStore, Rewriter, RewriteReport
    from .sensitivity import is_sensitive
    from .views import RedactedView, policy_for_refs, redacted_view

_NAMES = {
    "Redactor": ".detect", "detect_secrets_available": ".detect",
    "DEFAULT_DETECTORS": ".policy", "RedactionPolicy": ".policy", "choose": ".policy",
    "policy_for": ".policy", "purge": ".purge", "scan": ".purge", "OverlayStore": ".rewrite",
    "Rewriter": ".rewrite", "RewriteReport": ".rewrite", "is_sensitive": ".sensitivity",
    "RedactedView": ".views", "policy_for_refs": ".views",
    "redacted_view": ".views",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _NAMES)
__all__ = [
    "DEFAULT_DETECTORS", "OverlayStore", "RedactedView", "RedactionPolicy", "Redactor",
    "RewriteReport", "Rewriter", "choose", "detect_secrets_available", "is_sensitive",
    "policy_for", "policy_for_refs", "purge", "redacted_view", "scan",
]
