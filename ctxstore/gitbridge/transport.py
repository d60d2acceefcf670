"""Talking to a remote through pygit2: list its refs, fetch, push; libgit2 errors become one
clear CtxError line that names the remote's URL (which never holds a secret: remotes.py
refuses such URLs) and never a credential."""

from __future__ import annotations

from contextlib import contextmanager
from urllib.parse import urlsplit

from ..errors import RefConflict, RemoteFailed
from . import netenv
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
        if callbacks is not None and callbacks.refused_host is not None:
            raise RemoteFailed(f"{what} {url}: {untrusted(url, callbacks.refused_host)}") \
                from None
        text = " ".join(str(exc).split())
        if callbacks is not None and callbacks.tried and "auth" in text.lower():
            text += f" (tried: {', '.join(callbacks.tried)})"
        raise RemoteFailed(f"{what} {url}: {text}") from None


def untrusted(url: str, host: str) -> str:
    """Why the server was not believed, and what the user can do about it."""
    if url.startswith("https://"):
        return (f"the TLS certificate of {host} is not signed by a trusted CA (or names "
                f"another host); nothing was transferred. For a private CA set GIT_SSL_CAINFO (or "
                f"SSL_CERT_FILE) to its PEM file (docs/remotes.md)")
    port = urlsplit(url).port if "://" in url else None
    scan = f"ssh-keyscan -p {port} {host}" if port else f"ssh-keyscan {host}"
    name = f"[{host}]:{port}" if port else host
    return (f"the ssh host key of {name} is not in ~/.ssh/known_hosts, or differs from the "
            f"one there; nothing was transferred. Check its fingerprint, then add it (`{scan} >> "
            f"~/.ssh/known_hosts`) or connect once with ssh (docs/remotes.md)")


def connect(mirror, url: str, progress=None):
    """(anonymous pygit2 remote, callbacks) for one transfer, libgit2 set up from the current
    environment (netenv.py)."""
    netenv.apply(url)
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
