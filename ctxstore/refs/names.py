"""Ref names, checked by git's rules (git check-ref-format), and the ctxstore ref namespace.

Branches of a session live at `refs/sessions/<session id>/<branch>`; HEAD names one of them
(symbolic) or an event (detached).
"""

from __future__ import annotations

from ..errors import InvalidRefName

HEAD = "HEAD"
SESSIONS_PREFIX = "refs/sessions/"
DEFAULT_BRANCH = "main"
_FORBIDDEN = set(" ~^:?*[\\")


def check_ref_name(name: str, what: str = "ref name") -> str:
    """Return `name` if valid, else raise InvalidRefName saying which rule it breaks."""

    def bad(rule: str):
        raise InvalidRefName(f"invalid {what} {name!r}: {rule}")

    if not name:
        bad("empty")
    if name == "@":
        bad("'@' alone is reserved")
    if name.startswith("/") or name.endswith("/"):
        bad("must not start or end with '/'")
    if name.startswith("-"):
        bad("must not start with '-'")
    if "//" in name:
        bad("must not contain '//'")
    if ".." in name:
        bad("must not contain '..'")
    if "@{" in name:
        bad("must not contain '@{'")
    if name.endswith("."):
        bad("must not end with '.'")
    for ch in name:
        if ord(ch) < 32 or ord(ch) == 127:
            bad("must not contain control characters")
        if ch in _FORBIDDEN:
            bad(f"must not contain {ch!r}")
    for part in name.split("/"):
        if part.startswith("."):
            bad("no component may start with '.'")
        if part.endswith(".lock"):
            bad("no component may end with '.lock'")
    if len(name.encode()) > 1024:
        bad("longer than 1024 bytes")
    return name


def check_branch_name(name: str) -> str:
    check_ref_name(name, "branch name")
    if name == HEAD:
        raise InvalidRefName("invalid branch name 'HEAD'")
    return name


def branch_ref(session_id: str, branch: str) -> str:
    check_branch_name(branch)
    return f"{SESSIONS_PREFIX}{session_id}/{branch}"


def split_branch_ref(ref: str) -> tuple[str, str] | None:
    """(session id, branch) of a session branch ref, else None."""
    if not ref.startswith(SESSIONS_PREFIX):
        return None
    rest = ref[len(SESSIONS_PREFIX):]
    session, _, branch = rest.partition("/")
    if not session or not branch:
        return None
    return session, branch
