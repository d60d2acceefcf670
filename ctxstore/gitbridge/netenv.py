"""libgit2's process-wide network settings, taken from the environment when a transfer starts
(git reads them on every run; libgit2 reads them once, when pygit2 is first imported):

- the home directory, where libgit2 finds `~/.ssh/known_hosts` for ssh host-key checks: the
  current `$HOME` (credentials.py reads the ssh key files from the same place);
- extra certificate authorities for https: `GIT_SSL_CAINFO` (else `SSL_CERT_FILE`) names a
  PEM bundle, `GIT_SSL_CAPATH` (else `SSL_CERT_DIR`) a hashed directory, as git and OpenSSL
  name them. They are added to the system's trusted CAs (libgit2 can add, not replace), so a
  private CA works without losing the public ones.
"""

from __future__ import annotations

import os

from ..errors import InvalidInput

CA_FILE_VARS = ("GIT_SSL_CAINFO", "SSL_CERT_FILE")
CA_DIR_VARS = ("GIT_SSL_CAPATH", "SSL_CERT_DIR")

_loaded: set[tuple[str | None, str | None]] = set()  # (file, dir) pairs libgit2 already has


def _first(names: tuple[str, ...]) -> tuple[str, str] | tuple[None, None]:
    for name in names:
        value = os.environ.get(name)
        if value:
            return name, value
    return None, None


def apply(url: str) -> None:
    """Point libgit2 at the current home directory and, for an https URL, at the CAs the
    environment names; InvalidInput (naming the variable) when those cannot be loaded."""
    import pygit2

    home = os.path.expanduser("~")
    if home != "~" and pygit2.settings.homedir != home:
        pygit2.settings.homedir = home
    if not url.startswith("https://"):
        return
    file_var, cafile = _first(CA_FILE_VARS)
    dir_var, capath = _first(CA_DIR_VARS)
    if (cafile is None and capath is None) or (cafile, capath) in _loaded:
        return
    for var, path, ok in ((file_var, cafile, os.path.isfile), (dir_var, capath, os.path.isdir)):
        if path is not None and not ok(path):
            kind = "file" if ok is os.path.isfile else "directory"
            raise InvalidInput(f"${var} names {path}, which is not a readable {kind} of CA "
                               f"certificates")
    try:
        pygit2.settings.set_ssl_cert_locations(cafile, capath)
    except pygit2.GitError as exc:
        names = " and ".join(f"${v}={p}" for v, p in ((file_var, cafile), (dir_var, capath))
                             if p is not None)
        raise InvalidInput(f"cannot load CA certificates from {names}: "
                           f"{' '.join(str(exc).split())}") from None
    _loaded.add((cafile, capath))
