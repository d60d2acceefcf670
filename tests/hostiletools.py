"""Helpers of the hostile-input suite (tests/test_hostile_*.py, docs/security.md): a decoy
home whose every file is hashed before and after an attack, a crafted snapshot event, and a
record of every file a piece of code opens."""

from __future__ import annotations

import builtins
import hashlib
import io
import os
from pathlib import Path


def decoy_home(path: Path) -> Path:
    """A home directory an attacker would aim at: keys, credentials, a shell profile."""
    (path / ".ssh").mkdir(parents=True)
    (path / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- decoy\n")
    (path / ".ssh" / "known_hosts").write_text("example.org ssh-ed25519 AAAA\n")
    (path / ".aws").mkdir()
    (path / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = DECOYSECRET\n")
    (path / ".bashrc").write_text("export PATH=$PATH\n")
    (path / "outside").mkdir()
    (path / "outside" / "a.txt").write_text("outside, not the project's\n")
    return path


def tree_hashes(root: Path) -> dict[str, str]:
    """{relative path: sha256 of the bytes, or 'link:TARGET', or 'dir'} of everything under
    ROOT, symlinks not followed: compare before and after an attack."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def crafted_snapshot(repo, files: dict[str, bytes], *, root: str, absent=(),
                     ref: str | None = None, partial: bool = True) -> str:
    """Append a snapshot event with any payload an attacker likes (a root that is not the
    receiver's project, tree names git refuses) through the public API; returns its id."""
    from ctxstore.workspace import gitdb
    from ctxstore.workspace.imported import _put_workspace, tree_of_files

    tree, loose = tree_of_files({p: (b, gitdb.MODE_FILE) for p, b in files.items()})
    wid = _put_workspace(repo, tree, loose, len(files))
    payload = {"workspace": wid, "tree": tree, "root": root, "files": len(files),
               "reason": "crafted"}
    if partial:
        payload.update(partial=True, absent=list(absent))
    with repo.transaction(ref, message="crafted", command="test") as tx:
        return tx.append("WorkspaceSnapshot", "system", payload)


def record_opens(monkeypatch) -> list[str]:
    """Every path opened from now on (builtins/io `open` and `os.open`), as given; the caller
    ends the recording with `monkeypatch.undo()`. An importer fed links and `../` paths must
    open none of them."""
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy(file, *a, **k):
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else str(file))
        return real_open(file, *a, **k)

    def spy_os(file, *a, **k):
        opened.append(os.fspath(file))
        return real_os_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    monkeypatch.setattr(os, "open", spy_os)
    return opened
