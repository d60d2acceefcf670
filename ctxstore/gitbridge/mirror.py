"""The local git mirror `.ctx/remotes.git` and the commits that carry ctxstore packs.

One commit per pushed ref update: a tree with `ctx.json` (the manifest) and `objects.ctxpack`
(a portable pack), parents as docs/format.md "Git remotes" specifies. Everything that reads or
writes git objects for the bridge is here.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import codec
from ..errors import BadPack, InvalidInput
from ..lockfile import clear_git_locks
from ..refs import check_ref_name

MIRROR_DIR = "remotes.git"
MANIFEST = "ctx.json"
PACK = "objects.ctxpack"
FORMAT = 1
REMOTE_PREFIX = "refs/ctx/"
PUSH_PREFIX = "refs/ctx-push/"
ZERO_OID = "0" * 40
SIGNATURE = ("ctx", "ctx@localhost")
#: Local ref kinds that travel, and how they name a session.
KINDS = ("sessions/", "session-meta/")


@dataclass(frozen=True)
class Manifest:
    ref: str
    tip: str
    bases: tuple[str, ...]
    objects: int

    def encode(self) -> bytes:
        doc = {"bases": sorted(self.bases), "format": FORMAT, "objects": self.objects,
               "ref": self.ref, "tip": self.tip}
        return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> Manifest:
        try:
            doc = json.loads(data.decode("utf-8"))
            if doc.get("format") != FORMAT:
                raise ValueError(f"unknown format {doc.get('format')!r}")
            ref, tip, bases, objects = doc["ref"], doc["tip"], doc["bases"], doc["objects"]
            if not isinstance(ref, str) or not ref.startswith("refs/"):
                raise ValueError(f"ref {ref!r} is not under refs/")
            check_ref_name(ref)
            if not codec.is_full_id(tip) or not all(codec.is_full_id(b) for b in bases):
                raise ValueError("tip and bases must be full event ids")
            if type(objects) is not int or objects < 0:
                raise ValueError("objects must be a non-negative integer")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, InvalidInput) as exc:
            raise BadPack(f"{where}: not a ctxstore commit ({exc}); nothing was imported") \
                from None
        return cls(ref, tip, tuple(bases), objects)


def session_of_ref(rest: str) -> str | None:
    """The session a travelling ref (without `refs/`) belongs to, or None if it does not
    travel: `sessions/<sid>/<branch>` and `session-meta/<sid>`."""
    if rest.startswith("sessions/"):
        sid, _, branch = rest[len("sessions/"):].partition("/")
        return sid if codec.is_full_id(sid) and branch else None
    if rest.startswith("session-meta/"):
        sid = rest[len("session-meta/"):]
        return sid if codec.is_full_id(sid) else None
    return None


def open_mirror(repo):
    """The bare git repository under .ctx, created on first use."""
    import pygit2

    if repo.path is None:
        raise InvalidInput("git remotes need a store on disk")
    path = Path(repo.path) / MIRROR_DIR
    if (path / "HEAD").is_file():
        return pygit2.Repository(str(path))
    return pygit2.init_repository(str(path), bare=True)


@contextmanager
def transfer_lock(repo):
    """Held (flock, exclusive) by every push and fetch of this store for its whole run, so
    they take turns on the mirror; a git lock file in the mirror (its refs, HEAD, config) or a
    temporary pack in .ctx found under it was left by a process killed mid-transfer, and is
    removed."""
    import fcntl

    from ..errors import LockHeld

    mirror_dir = Path(repo.path) / MIRROR_DIR
    mirror_dir.mkdir(exist_ok=True)
    fd = os.open(mirror_dir / "ctx-transfer.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeld(f"another ctx push or fetch is running on this store "
                           f"({mirror_dir / 'ctx-transfer.lock'} is locked); try again when it "
                           f"has finished") from None
        clear_git_locks(mirror_dir)
        for stale in Path(repo.path).glob("tmp-*.ctxpack-*"):
            stale.unlink()
        yield
    finally:
        os.close(fd)


def read_manifest(mirror, commit_oid) -> Manifest:
    commit = mirror.get(commit_oid)
    where = f"commit {commit_oid}"
    tree = getattr(commit, "tree", None)
    if tree is None or MANIFEST not in tree or PACK not in tree:
        raise BadPack(f"{where}: not a ctxstore commit (its tree must hold {MANIFEST} and "
                      f"{PACK}); nothing was imported")
    return Manifest.decode(mirror[tree[MANIFEST].id].data, where)


def pack_blob_to_file(mirror, commit_oid, path: str) -> None:
    tree = mirror.get(commit_oid).tree
    blob = mirror[tree[PACK].id]
    with open(path, "wb") as f:
        f.write(memoryview(blob))


def write_commit(mirror, manifest: Manifest, pack_path: str, parents: list) -> object:
    """Blob, tree and commit for one ref update; returns the commit's oid."""
    import time

    import pygit2

    pack_blob = write_loose_blob(mirror, pack_path)
    man_blob = mirror.create_blob(manifest.encode())
    tb = mirror.TreeBuilder()
    tb.insert(MANIFEST, man_blob, pygit2.enums.FileMode.BLOB)
    tb.insert(PACK, pack_blob, pygit2.enums.FileMode.BLOB)
    tree = tb.write()
    sig = pygit2.Signature(*SIGNATURE, int(time.time()), 0)
    message = f"ctx push: {manifest.ref} {manifest.tip}\n"
    return mirror.create_commit(None, sig, sig, message, tree, parents)


def write_loose_blob(mirror, path: str):
    """Store the file at `path` as a loose git blob, deflated at zlib level 1: the pack inside
    is zstd already, and libgit2's default level spends seconds per 36 MB finding nothing to
    compress (git reads any zlib level). Returns the blob's oid."""
    import hashlib
    import zlib

    import pygit2

    size = os.path.getsize(path)
    header = b"blob %d\0" % size
    sha = hashlib.sha1(header)
    deflate = zlib.compressobj(1)
    objects = Path(mirror.path) / "objects"
    tmp = objects / f"tmp_ctx_{os.getpid()}_{os.urandom(4).hex()}"
    try:
        with open(path, "rb") as src, open(tmp, "wb") as out:
            out.write(deflate.compress(header))
            while chunk := src.read(1 << 20):
                sha.update(chunk)
                out.write(deflate.compress(chunk))
            out.write(deflate.flush())
            out.flush()
            os.fsync(out.fileno())
        hexid = sha.hexdigest()
        final = objects / hexid[:2] / hexid[2:]
        if mirror.odb.exists(pygit2.Oid(hex=hexid)):
            return pygit2.Oid(hex=hexid)
        final.parent.mkdir(exist_ok=True)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)
        return pygit2.Oid(hex=hexid)
    finally:
        if tmp.exists():
            tmp.unlink()


def loose_path(repo_git, oid) -> Path | None:
    """The loose object file of `oid` in a git repository, if it is stored loose."""
    hexid = str(oid)
    path = Path(repo_git.path) / "objects" / hexid[:2] / hexid[2:]
    return path if path.is_file() else None


#: How far back, and up to what blob size, a push reads the remote's packs for known ids.
KNOWN_COMMITS = 16
KNOWN_MAX_BYTES = 2 << 20


def known_ids(repo, mirror, commits: list) -> set[str]:
    """Ids of the records of the packs in `commits` and their ancestors, newest first, at most
    KNOWN_COMMITS commits and skipping packs above KNOWN_MAX_BYTES (reading only record
    headers): objects the remote surely holds, which a push need not send again."""
    from ..transfer.packfile import read_pack

    out: set[str] = set()
    queue, seen = list(commits), set()
    while queue and len(seen) < KNOWN_COMMITS:
        oid = queue.pop(0)
        if str(oid) in seen:
            continue
        seen.add(str(oid))
        commit = mirror.get(oid)
        if commit is None or PACK not in commit.tree:
            continue
        queue.extend(commit.parent_ids)
        blob_id = commit.tree[PACK].id
        if mirror.odb.read_header(blob_id)[1] > KNOWN_MAX_BYTES:
            continue
        path = tmp_path(repo, "known.ctxpack")
        try:
            pack_blob_to_file(mirror, oid, path)
            try:
                pack = read_pack(path)
            except BadPack:
                continue  # a hint only: the import verifies what really arrives
            try:
                out.update(r.id for r in pack.records)
            finally:
                pack.close()
        finally:
            if os.path.exists(path):
                os.unlink(path)
    return out


def git_refs(mirror, prefix: str) -> dict[str, str]:
    """{name below prefix: commit hex} of the mirror's refs under prefix."""
    out = {}
    for name in mirror.references:
        if name.startswith(prefix):
            ref = mirror.references[name]
            out[name[len(prefix):]] = str(ref.target)
    return out


def set_git_ref(mirror, name: str, oid) -> None:
    mirror.references.create(name, oid, force=True)


def delete_git_ref(mirror, name: str) -> None:
    if name in mirror.references:
        mirror.references.delete(name)


def tmp_path(repo, what: str) -> str:
    """A temporary file in .ctx, named `tmp-WHAT-…` (`transfer_lock` removes leftovers)."""
    return os.path.join(str(repo.path), f"tmp-{what}-{os.getpid()}-{os.urandom(4).hex()}")
