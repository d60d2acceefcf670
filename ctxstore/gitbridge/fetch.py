"""`ctx fetch`, `ctx pull` and `ctx clone`: bring a remote's sessions in; fetch never moves a
local branch.

Fetch order (docs/format.md "Git remotes", fetch): git fetch into transient refs of the
mirror; import, parents first, the packs of every commit no mirror tracking ref reaches
(verified like `ctx unpack`, no ref moved); one ctx transaction for the remote-tracking refs;
then the mirror's tracking refs. Pull adds one transaction creating and fast-forwarding local
branches; diverged branches are reported and left alone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadPack, CtxError, InvalidInput, RefConflict
from ..refs import DEFAULT_BRANCH, SESSIONS_PREFIX, split_branch_ref
from ..transfer.packfile import DEFAULT_LIMITS, MAGIC
from ..transfer.unpack import import_objects
from . import mirror as mir
from .localpush import copy_objects, local_path, open_remote
from .remotes import DEFAULT_REMOTE, add_remote, remote_url
from .tracking import TRACKING_PREFIX, local_ref, tracking_ref, tracking_refs
from .transport import connect, translated

Progress = Callable[[str, int, int], None]


@dataclass
class RefFetch:
    ref: str  # the tracking ref
    old: str | None
    new: str | None
    action: str  # create | fast-forward | forced | deleted | up-to-date

    def to_dict(self) -> dict:
        return {"ref": self.ref, "old": self.old, "new": self.new, "action": self.action}


@dataclass
class FetchResult:
    remote: str
    url: str
    commits: int = 0
    objects: int = 0
    new_objects: int = 0
    refs: list[RefFetch] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"remote": self.remote, "url": self.url, "commits": self.commits,
                "objects": self.objects, "new_objects": self.new_objects,
                "refs": [r.to_dict() for r in self.refs if r.action != "up-to-date"]}


def fetch(repo, remote: str = DEFAULT_REMOTE, *, progress: Progress | None = None) -> FetchResult:
    url = remote_url(repo, remote)
    with mir.transfer_lock(repo):
        return _fetch(repo, remote, url, progress)


def _fetch(repo, remote: str, url: str, progress: Progress | None) -> FetchResult:
    import pygit2
    from pygit2.enums import SortMode

    mirror = mir.open_mirror(repo)
    staging = f"refs/ctx-fetch/{remote}/"
    for name in list(mir.git_refs(mirror, staging)):
        mir.delete_git_ref(mirror, staging + name)
    path = local_path(url)
    if path is not None:  # a repository on this machine: copy (hard-link) its objects
        _fetch_local(mirror, path, staging)
    else:
        git_remote, callbacks = connect(mirror, url, progress)
        with translated(url, "fetch from", callbacks):
            git_remote.fetch([f"+{mir.REMOTE_PREFIX}*:{staging}*"], callbacks=callbacks)
    staged = {rest: oid for rest, oid in mir.git_refs(mirror, staging).items()
              if mir.session_of_ref(rest) is not None}
    result = FetchResult(remote, url)
    # every commit a mirror tracking ref reaches was imported (they move after the import)
    imported = [oid for name, oid in mir.git_refs(mirror, "refs/remotes/").items()]
    walker = mirror.walk(None)
    walker.sort(SortMode.TOPOLOGICAL | SortMode.REVERSE)
    wanted = False
    for oid in set(staged.values()):
        walker.push(pygit2.Oid(hex=oid))
        wanted = True
    for oid in imported:
        if mirror.get(oid) is not None:
            walker.hide(pygit2.Oid(hex=oid))
    tips: dict[str, str] = {}
    for rest, oid in staged.items():
        manifest = mir.read_manifest(mirror, oid)
        if manifest.ref != f"refs/{rest}":
            raise BadPack(f"commit {oid} of refs/ctx/{rest} names {manifest.ref}; nothing was "
                          f"imported")
        tips[rest] = manifest.tip
    if wanted:
        for commit in walker:
            _import_commit(repo, mirror, commit.id, result, progress)
    _move_tracking(repo, remote, tips, result)
    for rest, oid in staged.items():
        mir.set_git_ref(mirror, f"refs/remotes/{remote}/{rest}", oid)
    for rest in set(mir.git_refs(mirror, f"refs/remotes/{remote}/")) - set(staged):
        mir.delete_git_ref(mirror, f"refs/remotes/{remote}/{rest}")
    for name in list(mir.git_refs(mirror, staging)):
        mir.delete_git_ref(mirror, staging + name)
    return result



def _fetch_local(mirror, path: str, staging: str) -> None:
    """What `git fetch +refs/ctx/*:STAGING*` does, for a local repository: its commits and
    their trees and blobs are copied into the mirror (loose objects hard-linked), then the
    staging refs are set."""
    import pygit2

    remote = open_remote(os.path.abspath(path))
    heads = {name[len(mir.REMOTE_PREFIX):]: remote.references[name].target
             for name in remote.references if name.startswith(mir.REMOTE_PREFIX)}
    heads = {rest: oid for rest, oid in heads.items() if isinstance(oid, pygit2.Oid)}
    copy_objects(remote, mirror, list(heads.values()))
    for rest, oid in heads.items():
        mir.set_git_ref(mirror, staging + rest, oid)


def _import_commit(repo, mirror, oid, result: FetchResult, progress) -> None:
    manifest = mir.read_manifest(mirror, oid)  # BadPack if it is not one of ours
    path = mir.tmp_path(repo, "fetch.ctxpack")
    try:
        pack_blob_to_file(mirror, oid, path)
        res = import_objects(repo, path)
    except BadPack as exc:
        raise BadPack(f"commit {oid}: {exc}") from None
    finally:
        if os.path.exists(path):
            os.unlink(path)
    if {r.name: r.new for r in res.refs} != {manifest.ref: manifest.tip}:
        raise BadPack(f"commit {oid}: its manifest names {manifest.ref} at {manifest.tip[:12]}, "
                      f"its pack something else; no ref was moved")
    result.commits += 1
    result.objects += res.objects
    result.new_objects += res.new_objects
    if progress is not None:
        progress("import", result.commits, 0)


#: The largest pack blob a fetch accepts (its declared size is read before its content): the
#: same bound `ctx unpack` puts on a whole pack.
MAX_PACK_BLOB = DEFAULT_LIMITS.max_total
_CHUNK = 1 << 20


def pack_blob_to_file(mirror, commit_oid, path: str, limit: int | None = None) -> None:
    """Write the pack blob of a fetched commit to PATH without trusting it: its declared size
    is checked against LIMIT first (the object header only), then its first bytes against the
    pack magic, before the rest is read. A loose blob (a remote on this machine) is inflated
    1 MiB at a time, so memory does not grow with it; a packed one (fetched over the network)
    is read by libgit2 once its size passed the limit. BadPack names the commit and blob."""
    limit = MAX_PACK_BLOB if limit is None else limit
    tree = mirror.get(commit_oid).tree
    blob_id = tree[mir.PACK].id
    where = f"commit {commit_oid}: pack blob {blob_id}"
    kind, size = mirror.odb.read_header(blob_id)
    if size > limit:
        raise BadPack(f"{where} declares {size} bytes, more than the {limit}-byte limit; "
                      f"nothing was imported")
    loose = mir.loose_path(mirror, blob_id)
    if loose is None:
        data = memoryview(mirror[blob_id])
        _check_magic(bytes(data[:len(MAGIC)]), where)
        with open(path, "wb") as f:
            f.write(data)
        return
    head, written, checked = b"", 0, False
    with open(loose, "rb") as src, open(path, "wb") as out:
        for chunk in _inflated(src):
            if not checked:
                head += chunk
                nul = head.find(b"\0")
                if nul < 0 and len(head) > 64:
                    raise BadPack(f"{where}: not a git blob")
                if nul < 0 or len(head) - nul - 1 < len(MAGIC):
                    continue
                _check_magic(head[nul + 1:nul + 1 + len(MAGIC)], where)
                checked, chunk = True, head[nul + 1:]
            written += len(chunk)
            if written > size:
                raise BadPack(f"{where} holds more than the {size} bytes it declares")
            out.write(chunk)
    if not checked:
        raise BadPack(f"{where}: shorter than a pack header")


def _inflated(f) -> Iterator[bytes]:
    """A zlib stream's content, at most 1 MiB at a time (a deflate bomb stays small)."""
    import zlib

    d = zlib.decompressobj()
    while True:
        raw = f.read(_CHUNK)
        if not raw:
            tail = d.flush()
            if tail:
                yield tail
            return
        yield d.decompress(raw, _CHUNK)
        while d.unconsumed_tail:
            yield d.decompress(d.unconsumed_tail, _CHUNK)


def _check_magic(first: bytes, where: str) -> None:
    if first != MAGIC:
        raise BadPack(f"{where}: does not start with the ctxpack magic ({first[:8]!r}); "
                      f"nothing was imported")


def _move_tracking(repo, remote: str, tips: dict[str, str], result: FetchResult) -> None:
    want: dict[str, str] = {}
    for rest, tip in tips.items():
        name = tracking_ref(remote, rest)
        if name is not None:
            want[name] = tip
    have = tracking_refs(repo, remote)
    graph = repo.graph
    with repo.transaction(message=f"fetch {remote}") as tx:
        for name in sorted(set(want) | set(have)):
            old, new = have.get(name), want.get(name)
            if old == new:
                result.refs.append(RefFetch(name, old, new, "up-to-date"))
                continue
            if new is None:
                action = "deleted"
            elif old is None:
                action = "create"
            elif old in repo.objects and graph.is_ancestor(old, new):
                action = "fast-forward"
            else:
                action = "forced"
            if new is not None and repo.objects.type_of(new) != "event":
                raise BadPack(f"refs/ctx/{name}: names {new[:12]}, not an event; nothing moved")
            tx.set_ref(name, new, expected=old, message=f"fetch {remote}: {action}")
            result.refs.append(RefFetch(name, old, new, action))


# ---------------------------------------------------------------------------------------------
# pull and clone
# ---------------------------------------------------------------------------------------------

@dataclass
class BranchPull:
    ref: str
    old: str | None
    new: str
    action: str  # create | fast-forward | up-to-date | ahead | diverged | redacted-copy
    ahead: int = 0
    behind: int = 0
    #: the remote's branch holds a redacted copy this store pushed (`ctx push --redact`)
    redacted: bool = False

    def to_dict(self) -> dict:
        return {"ref": self.ref, "old": self.old, "new": self.new, "action": self.action,
                "ahead": self.ahead, "behind": self.behind, "redacted": self.redacted}


@dataclass
class PullResult:
    fetch: FetchResult
    branches: list[BranchPull] = field(default_factory=list)
    head: str | None = None

    @property
    def diverged(self) -> list[BranchPull]:
        return [b for b in self.branches if b.action == "diverged"]

    def to_dict(self) -> dict:
        return {"fetch": self.fetch.to_dict(), "head": self.head,
                "branches": [b.to_dict() for b in self.branches if b.action != "up-to-date"]}


def pull(repo, remote: str = DEFAULT_REMOTE, *, progress: Progress | None = None) -> PullResult:
    """Fetch, then create the branches this store lacks and fast-forward those behind, in one
    transaction. RefConflict (after the rest moved) when a branch diverged."""
    from ..redaction.pushmap import redacted_images

    fetched = fetch(repo, remote, progress=progress)
    result = PullResult(fetched)
    graph = repo.graph
    images = redacted_images(repo)  # {redacted id: raw id} of this store's redacted pushes
    moves: list[BranchPull] = []
    for name, tip in sorted(tracking_refs(repo, remote).items()):
        ref = local_ref(name, remote)
        if ref is None:
            continue
        old = repo.refs.read(ref)
        b = BranchPull(ref, old, tip, "up-to-date")
        raw = images.get(tip)
        if raw is not None and (old is None or graph.is_ancestor(raw, old)):
            # the remote holds the redacted copy this store pushed: by id it differs from
            # the raw branch from its first redacted event on; nothing to take from it
            b.action, b.redacted = "redacted-copy", True
        elif old is None:
            b.action = "create"
        elif old != tip:
            if graph.is_ancestor(old, tip):
                b.action = "fast-forward"
            elif graph.is_ancestor(tip, old):
                b.action = "ahead"
            else:
                d = graph.diff(old, tip)
                b.action, b.ahead, b.behind = "diverged", len(d.only_a), len(d.only_b)
                b.redacted = any(e in images for e in d.only_b)
        result.branches.append(b)
        if b.action in ("create", "fast-forward"):
            moves.append(b)
    if moves:
        with repo.transaction(message=f"pull {remote}") as tx:
            for b in moves:
                tx.set_ref(b.ref, b.new, expected=b.old, message=f"pull {remote}: {b.action}")
            result.head = _maybe_head(repo, tx, [b.ref for b in moves])
    if result.diverged:
        raise RefConflict(diverged_message(remote, result.diverged), result=result)
    return result


def diverged_message(remote: str, diverged: list[BranchPull]) -> str:
    parts = []
    for b in diverged:
        sid, _, branch = b.ref[len(SESSIONS_PREFIX):].partition("/")
        parts.append(f"{sid[:12]}/{branch} and {remote}/{sid[:12]}/{branch} have diverged, and "
                     f"have {b.ahead} and {b.behind} different events each" +
                     (" (the remote's continues the redacted copy this store pushed: "
                      f"`ctx branch NAME {remote}/{sid[:12]}/{branch}` takes it into a branch "
                      "of its own)" if b.redacted else ""))
    return ("; ".join(parts) + " — left as they are: `ctx merge REMOTE/SESSION/BRANCH` keeps "
            "both, `ctx reset REMOTE/SESSION/BRANCH` takes the remote's")


def _maybe_head(repo, tx, refs: list[str]) -> str | None:
    """In a store whose HEAD is unborn (a clone), HEAD goes to the `main` branch of the newest
    top-level session among the branches just created: newest by its tip's time, as `ctx
    sessions` orders them, and never a subagent's session, which only its parent's turns
    make sense of (the alphabetically first branch often was one). None when HEAD is set."""
    head = repo.refs.read_head()
    if head.ref is not None or head.target is not None:
        return None
    best: tuple[tuple, str] | None = None
    for ref in refs:
        parts = split_branch_ref(ref)
        if parts is None:
            continue
        sess = repo.session(parts[0])
        top = sess.kind != "subagent" and not sess.parent_session
        key = (top, parts[1] == DEFAULT_BRANCH, repo.graph.event(tx.read(ref)).ts, ref)
        if best is None or key > best[0]:
            best = (key, ref)
    if best is None:
        return None
    tx.set_head(ref=best[1], message="clone: HEAD on the newest top-level session")
    return best[1]


def clone_dir(url: str) -> str:
    """git's default directory for a clone: the URL's last component without `.git`."""
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    name = tail[:-4] if tail.endswith(".git") else tail
    return name or "ctx-clone"


def clone(url: str, directory: str | None = None, *, progress: Progress | None = None,
          command: str | None = None):
    """A new store in DIRECTORY (default from the URL) with remote `origin` and every session
    of the remote as local branches. On failure the new directory is removed."""
    from ..repo import Repository
    from .remotes import check_url

    check_url(url)
    target = Path(directory or clone_dir(url))
    if (target / ".ctx").exists():
        raise InvalidInput(f"{target}/.ctx already exists: clone into a new directory")
    created = not target.exists()
    try:
        repo = Repository.init(target)
        repo.command = command
        try:
            add_remote(repo, DEFAULT_REMOTE, url)
            result = pull(repo, DEFAULT_REMOTE, progress=progress)
        except BaseException:
            repo.close()
            raise
    except (CtxError, OSError, KeyboardInterrupt):
        if created:
            shutil.rmtree(target, ignore_errors=True)
        else:
            shutil.rmtree(target / ".ctx", ignore_errors=True)
        raise
    return repo, result


__all__ = ["TRACKING_PREFIX", "clone", "fetch", "pull"]
