"""Credentials for libgit2 at transfer time, never stored.

Order tried, once each (libgit2 asks again after a refusal; asking a second time with the same
answer would loop, so a refused method is not offered again and the transfer fails with
"authentication failed"):

- https: a token from `CTX_GIT_TOKEN` (else `GIT_TOKEN`), user `CTX_GIT_USERNAME` (default
  `x-access-token`, which GitHub and Gitea accept; GitLab wants `oauth2`); else git's own
  credential helper (`git credential fill`, never prompting on a terminal).
- ssh, as the URL's user (else the local user, like ssh): the ssh agent (`SSH_AUTH_SOCK`),
  then a key file: `CTX_SSH_KEY` (passphrase from `CTX_SSH_PASSPHRASE`) or
  `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`.

The server is checked before any credential is offered: an https certificate must chain to a
trusted CA (netenv.py adds the ones `GIT_SSL_CAINFO` names), an ssh host key must be in
`~/.ssh/known_hosts`; a failed check ends the transfer (`certificate_check`).

Secrets live only in this object's memory for the duration of one transfer. Messages name the
method and the environment variable, never the value.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

TOKEN_VARS = ("CTX_GIT_TOKEN", "GIT_TOKEN")
DEFAULT_TOKEN_USER = "x-access-token"
SSH_KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")


class AuthFailed(Exception):
    """Raised inside the callback; the transfer turns it into a RemoteFailed message."""


def token_from_env() -> tuple[str, str] | None:
    for var in TOKEN_VARS:
        value = os.environ.get(var)
        if value:
            return os.environ.get("CTX_GIT_USERNAME") or DEFAULT_TOKEN_USER, value
    return None


def credential_helper(url: str) -> tuple[str, str] | None:
    """(user, password) from `git credential fill`, or None (no git, no helper, no answer)."""
    git = shutil.which("git")
    if git is None:
        return None
    parts = urlsplit(url)
    query = f"protocol={parts.scheme}\nhost={parts.netloc.rpartition('@')[2]}\n"
    if parts.path:
        query += f"path={parts.path.lstrip('/')}\n"
    if parts.username:
        query += f"username={parts.username}\n"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    try:
        out = subprocess.run([git, "credential", "fill"], input=query + "\n", env=env,
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    fields = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    if fields.get("password") and fields.get("username"):
        return fields["username"], fields["password"]
    return None


def local_user() -> str:
    """The name ssh logs in with when the URL names no user."""
    return getpass.getuser()


def ssh_key_files() -> list[tuple[str, str, str]]:
    """(public, private, passphrase) key files to try, existing ones only."""
    explicit = os.environ.get("CTX_SSH_KEY")
    phrase = os.environ.get("CTX_SSH_PASSPHRASE", "")
    paths = [Path(explicit)] if explicit else [Path.home() / ".ssh" / n for n in SSH_KEY_FILES]
    return [(str(p) + ".pub" if Path(str(p) + ".pub").exists() else "", str(p), phrase)
            for p in paths if p.is_file()]


def make_callbacks(url: str, progress=None):
    """A pygit2.RemoteCallbacks subclass instance answering credential requests as above.
    `tried` records which methods were offered (names only, for the error message)."""
    import pygit2
    from pygit2.enums import CredentialType

    class Callbacks(pygit2.RemoteCallbacks):
        def __init__(self) -> None:
            super().__init__()
            self.tried: list[str] = []
            self._sources = None
            self.negotiation = None  # set by push: a callable checking the planned updates
            self.rejected: dict[str, str] = {}
            self.progress = progress
            self.refused_host: str | None = None  # a host whose certificate/key failed

        def _plan(self, allowed, username: str | None):
            if allowed & CredentialType.USERPASS_PLAINTEXT:
                env = token_from_env()
                if env is not None:
                    user = env[0] if not username or env[0] != DEFAULT_TOKEN_USER else username
                    yield "token from $" + next(v for v in TOKEN_VARS if os.environ.get(v)), \
                        pygit2.UserPass(user, env[1])
                helper = credential_helper(url)
                if helper is not None:
                    yield "git credential helper", pygit2.UserPass(*helper)
            if allowed & CredentialType.SSH_KEY:
                user = username or local_user()
                if os.environ.get("SSH_AUTH_SOCK"):
                    yield "ssh agent", pygit2.KeypairFromAgent(user)
                for pub, priv, phrase in ssh_key_files():
                    yield f"ssh key {priv}", pygit2.Keypair(user, pub or None, priv, phrase)

        def credentials(self, url_, username_from_url, allowed_types):
            if allowed_types == CredentialType.USERNAME:
                # an ssh URL without a user: libgit2 asks for the name first, then (in a new
                # call, the name now known) for a key; ssh and git log in as the local user
                return pygit2.Username(username_from_url or local_user())
            if self._sources is None:
                self._sources = self._plan(allowed_types, username_from_url)
            for name, cred in self._sources:
                self.tried.append(name)
                return cred
            raise AuthFailed("authentication failed")

        def certificate_check(self, certificate, valid, host) -> bool:
            """libgit2's own verdict, kept: for https the CA chain and host name, for ssh the
            host key against ~/.ssh/known_hosts. (pygit2's default accepts every ssh host
            key, known or not, which would let anyone on the path answer for the server.)"""
            if not valid:
                self.refused_host = host.decode(errors="replace") if isinstance(host, bytes) \
                    else str(host)
            return bool(valid)

        def push_negotiation(self, updates) -> None:
            if self.negotiation is not None:
                self.negotiation(updates)

        def push_update_reference(self, refname, message) -> None:
            if message:
                self.rejected[refname] = message

        def transfer_progress(self, stats) -> None:
            if self.progress is not None:
                self.progress("receive", stats.received_objects, stats.total_objects)

        def push_transfer_progress(self, current, total, bytes_) -> None:
            if self.progress is not None:
                self.progress("send", current, total)

    return Callbacks()
