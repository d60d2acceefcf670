"""Named remotes in `.ctx/config.json` (`"remotes": {NAME: {"url": URL}}`) and URL checks.

A URL is stored exactly as given, except that one carrying a password or token is refused:
credentials come from the environment or git's credential helper when a transfer runs
(credentials.py), so they are never written to the config, a reflog or the operation log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

from .. import config as config_mod
from ..errors import InvalidInput, NotFound
from ..lockfile import LockFile
from ..refs import check_ref_name

DEFAULT_REMOTE = "origin"
_SCHEMES = ("file", "git", "ssh", "http", "https")


def check_remote_name(name: str) -> str:
    check_ref_name(name, "remote name")
    if "/" in name:
        raise InvalidInput(f"invalid remote name {name!r}: must not contain '/'")
    return name


def check_url(url: str) -> str:
    """The URL if ctx can use it (a path, file://, git://, ssh://, http(s):// or scp-like
    user@host:path); InvalidInput otherwise, and for a URL that embeds a password."""
    if not url or url != url.strip() or any(ord(c) < 32 for c in url):
        raise InvalidInput(f"invalid remote URL {url!r}")
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in _SCHEMES:
            raise InvalidInput(f"unsupported URL scheme {parts.scheme!r} (use a path, file://, "
                               f"git://, ssh:// or https://)")
        if parts.password is not None:
            raise InvalidInput(
                f"refusing a URL that holds a password or token ({redact_url(url)}): it would be "
                f"stored in .ctx/config.json; set CTX_GIT_TOKEN (https) or use an ssh key or "
                f"agent instead (docs/remotes.md)")
    return url


def redact_url(url: str) -> str:
    """The URL with any user:password replaced (for messages about a refused URL)."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()


def normalize_url(url: str) -> str:
    """A local path as an absolute path (so the remote survives a change of directory)."""
    if "://" in url or _is_scp_like(url):
        return url
    return os.path.abspath(url)


def _is_scp_like(url: str) -> bool:
    head, colon, _ = url.partition(":")
    return bool(colon) and "/" not in head and len(head) > 1


def _config_path(repo) -> Path:
    if repo.path is None:
        raise InvalidInput("remotes need a store on disk")
    return Path(repo.path) / "config.json"


def list_remotes(repo) -> dict[str, str]:
    """{name: url}, sorted by name."""
    remotes = repo.config.get("remotes") or {}
    if not isinstance(remotes, dict):
        return {}
    return {name: str(spec.get("url", "")) for name, spec in sorted(remotes.items())
            if isinstance(spec, dict)}


def remote_url(repo, name: str) -> str:
    url = list_remotes(repo).get(name)
    if url is None:
        known = ", ".join(list_remotes(repo)) or "none; add one with `ctx remote add NAME URL`"
        raise NotFound(f"no remote {name!r} (remotes: {known})")
    return url


def _update(repo, change) -> dict:
    """Read-modify-write config.json under its lock file; returns the new config."""
    path = _config_path(repo)
    with LockFile(path) as lock:
        cfg = config_mod.load(path)
        remotes = dict(cfg.get("remotes") or {})
        change(remotes)
        cfg["remotes"] = dict(sorted(remotes.items()))
        if not cfg["remotes"]:
            del cfg["remotes"]
        config_mod.validate(cfg)
        lock.write((json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
        lock.commit()
    repo.config = cfg
    return cfg


def add_remote(repo, name: str, url: str) -> str:
    check_remote_name(name)
    url = normalize_url(check_url(url))

    def change(remotes: dict) -> None:
        if name in remotes:
            raise InvalidInput(f"remote {name!r} already exists "
                               f"({remotes[name].get('url')}); remove it first")
        remotes[name] = {"url": url}

    _update(repo, change)
    return url


def remove_remote(repo, name: str) -> list[str]:
    """Forget a remote and delete its remote-tracking refs (one operation); returns them."""
    remote_url(repo, name)
    from .tracking import delete_tracking

    removed = delete_tracking(repo, name)
    from . import mirror as mir

    if repo.path is not None and (Path(repo.path) / mir.MIRROR_DIR).exists():
        with mir.transfer_lock(repo):  # a push or fetch may be writing the mirror
            mirror = mir.open_mirror(repo)
            for rest in mir.git_refs(mirror, f"refs/remotes/{name}/"):
                mir.delete_git_ref(mirror, f"refs/remotes/{name}/{rest}")

    def change(remotes: dict) -> None:
        remotes.pop(name, None)

    _update(repo, change)
    return removed
