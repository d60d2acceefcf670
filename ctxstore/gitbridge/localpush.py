"""Pushing to a repository on this machine (a path or file:// URL) with a real
compare-and-swap.

libgit2's local transport writes the remote's refs without comparing them to the values it
advertised, so a push that came between would be overwritten. For a local remote we do what
receive-pack does ourselves: copy the missing git objects into its object database first, then
move each ref with libgit2's own compare-and-swap (`Reference.set_target` fails with
GIT_EMODIFIED when the ref changed since it was read; a create fails if the ref exists).
Objects without a ref are harmless (git gc drops them); a kill leaves every ref old or new.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import RemoteFailed
from . import mirror as mir


def local_path(url: str) -> str | None:
    """The directory of a local remote, or None for a network URL."""
    if url.startswith("file://"):
        return unquote(urlsplit(url).path)
    if "://" in url:
        return None
    head, colon, _ = url.partition(":")
    if colon and "/" not in head and len(head) > 1:
        return None  # scp-like user@host:path
    return url


def open_remote(path: str):
    import pygit2

    try:
        return pygit2.Repository(path)
    except pygit2.GitError as exc:
        raise RemoteFailed(f"{path}: not a git repository ({' '.join(str(exc).split())})") \
            from None


def copy_objects(src, dst, commits: list) -> int:
    """Copy each commit `dst` lacks, with its tree and blobs, from `src` (both local git
    repositories); returns how many objects. A loose object is hard-linked (or its file copied)
    as git's local clone does, so a 36 MB pack blob costs no re-compression; a packed one is
    read and written through libgit2."""
    import pygit2

    walker = src.walk(None)
    for c in commits:
        walker.push(pygit2.Oid(hex=str(c)))
    for name in dst.references:
        target = dst.references[name].target
        if isinstance(target, pygit2.Oid) and src.get(target) is not None:
            walker.hide(target)
    n = 0
    for commit in walker:
        for oid in (*(e.id for e in commit.tree), commit.tree.id, commit.id):
            if not dst.odb.exists(oid):
                _copy_one(src, dst, oid)
                n += 1
    return n


def _copy_one(src, dst, oid) -> None:
    loose = mir.loose_path(src, oid)
    if loose is not None:
        hexid = str(oid)
        target = Path(dst.path) / "objects" / hexid[:2] / hexid[2:]
        target.parent.mkdir(exist_ok=True)
        tmp = target.parent / f"tmp_ctx_{os.getpid()}_{os.urandom(4).hex()}"
        try:
            try:
                os.link(loose, tmp)
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(loose, tmp)
            os.replace(tmp, target)
            return
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    kind, data = src.odb.read(oid)
    dst.odb.write(kind, data)


def cas_update(remote, name: str, expected: str | None, new) -> str | None:
    """Move `name` from `expected` (None: absent) to `new`; the reason it was refused, or None."""
    import pygit2

    try:
        if expected is None:
            remote.references.create(name, new, force=False)
            return None
        ref = remote.references.get(name)
        if ref is None or str(ref.target) != expected:
            return "the remote ref moved (another push came between)"
        ref.set_target(new, f"ctx push: {expected[:12]} -> {str(new)[:12]}")
        return None
    except pygit2.AlreadyExistsError:
        return "the remote ref was created meanwhile (another push came between)"
    except (pygit2.GitError, ValueError) as exc:
        return f"the remote ref moved ({' '.join(str(exc).split())})"


def push_local(mirror, path: str, todo) -> dict[str, str]:
    """Objects, then one CAS per ref; {remote ref: reason} for the refused ones."""
    remote = open_remote(os.path.abspath(path))
    copy_objects(mirror, remote, [p.commit for p in todo])
    refused = {}
    for p in todo:
        name = mir.REMOTE_PREFIX + p.ref[len("refs/"):]
        reason = cas_update(remote, name, p.old_commit, remote.get(p.commit).id)
        if reason is not None:
            refused[name] = reason
    return refused
