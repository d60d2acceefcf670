"""Talking to a remote through pygit2: list its refs, fetch, push; libgit2 errors become one
clear CtxError line that names the remote's URL (which never holds a secret: remotes.py
refuses such URLs) and never a credential."""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import RefConflict, RemoteFailed
from .credentials import AuthFailed, make_callbacks
from .mirror import REMOTE_PREFIX


class RemoteMoved(RefConflict):
    """A remote ref changed between listing and pushing (another push came between)."""


@contextmanager
def translated(url: str, what: str, callbacks=None):
    import pygit2

    try:
        yield
    except AuthFailed:
        tried = ", ".join(callbacks.tried) if callbacks is not None and callbacks.tried else \
            "none available"
        raise RemoteFailed(f"{what} {url}: authentication failed (tried: {tried}); see "
                           f"docs/remotes.md for CTX_GIT_TOKEN, the credential helper and "
                           f"ssh keys") from None
    except pygit2.GitError as exc:
        text = " ".join(str(exc).split())
        if callbacks is not None and callbacks.tried and "auth" in text.lower():
            text += f" (tried: {', '.join(callbacks.tried)})"
        raise RemoteFailed(f"{what} {url}: {text}") from None


def connect(mirror, url: str, progress=None):
    """(anonymous pygit2 remote, callbacks) for one transfer."""
    callbacks = make_callbacks(url, progress)
    return mirror.remotes.create_anonymous(url), callbacks


def list_ctx_refs(remote, callbacks, url: str) -> dict[str, str]:
    """{name below refs/ctx/: commit hex} the remote advertises."""
    with translated(url, "cannot list refs of", callbacks):
        heads = remote.list_heads(callbacks=callbacks)
    out = {}
    for h in heads:
        name = h.name
        if name.startswith(REMOTE_PREFIX) and not name.endswith("^{}"):
            out[name[len(REMOTE_PREFIX):]] = str(h.oid)
    return out
