"""Which scope a memory belongs to, which key names it, and which ref holds its history.

A session sees five scopes at once: the global one, its user's, its project's (the session's
repository root, else its working directory, else the directory holding the store), its
workspace's (the working directory) and its own. A memory written in one project's scope has
that project's key, so a session of another project never sees it (docs/format.md "Memory").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import blake3

from ..errors import MemoryRefused
from ..objects.memory import SCOPES
from ..repo import Repository

MEMORY_PREFIX = "refs/memory/"
REVIEW_REF = "refs/memory-review"


@dataclass(frozen=True)
class ScopeKeys:
    """The key of each scope as one session (or, without a session, the store) sees them."""

    user: str
    project: str
    workspace: str
    session: str

    def key(self, scope: str) -> str:
        if scope == "global":
            return ""
        return getattr(self, scope)

    def visible(self) -> dict[str, str]:
        """{scope: key} of every scope with a key (global always)."""
        out = {"global": ""}
        for s in ("user", "project", "workspace", "session"):
            if self.key(s):
                out[s] = self.key(s)
        return out


def _norm(path: str) -> str:
    return os.path.normpath(path) if path else ""


def scope_keys(repo: Repository, session: str | None = None, user: str | None = None) -> ScopeKeys:
    """The scope keys of SESSION (default: HEAD's session, if any) for USER (default: the
    login name)."""
    if user is None:
        from ..repo.transaction import default_user

        user = default_user()
    if session is None:
        session = repo.current().session
    store_dir = str(Path(repo.path).resolve().parent) if repo.path is not None else ""
    cwd = root = ""
    if session:
        s = repo.session(session)
        cwd, root = _norm(s.cwd), _norm(s.repo_root)
    project = root or cwd or store_dir
    return ScopeKeys(user=user, project=project, workspace=cwd or project,
                     session=session or "")


def parse_scope(text: str, keys: ScopeKeys | None = None) -> tuple[str, str]:
    """`project` (key from KEYS) or `project:KEY` → (scope, key). Refuses an unknown scope, and
    a scope whose key cannot be known (no session for `session`)."""
    name, sep, key = (text or "").partition(":")
    name = name.strip().lower()
    if name not in SCOPES:
        raise MemoryRefused(f"unknown memory scope {text!r}: use one of {', '.join(SCOPES)} "
                            f"(optionally SCOPE:KEY, e.g. project:/path/to/repo)")
    if name == "global":
        if sep and key:
            raise MemoryRefused("the global scope has no key")
        return name, ""
    if sep:
        key = _norm(key) if name in ("project", "workspace") else key
    elif keys is not None:
        key = keys.key(name)
    if not key:
        raise MemoryRefused(f"scope {name} needs a key here: no {name} is known "
                            f"(give {name}:KEY" + (", or check out a session" if name == "session" else "")
                            + ")")
    return name, key


_SLUG_BAD = re.compile(r"[^a-z0-9_-]+")


def scope_ref(scope: str, key: str) -> str:
    """The ref naming SCOPE/KEY's history: refs/memory/<scope>/<slug> (docs/format.md)."""
    if scope not in SCOPES:
        raise MemoryRefused(f"unknown memory scope {scope!r}")
    if scope == "global":
        return f"{MEMORY_PREFIX}global/global"
    tail = key.rstrip("/").rsplit("/", 1)[-1].lower()
    slug = _SLUG_BAD.sub("-", tail).strip("-")[:24] or "key"
    return f"{MEMORY_PREFIX}{scope}/{slug}-{blake3.blake3(key.encode('utf-8')).hexdigest()[:16]}"
