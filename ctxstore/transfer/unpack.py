"""Importing a portable pack: verify everything first, then objects, flush, then refs by CAS.

Order (docs/format.md "Portable packs", import steps):

1. structure: magic, version, trailer checksum, header, record framing (packfile.read_pack);
2. every body decompressed under size limits, re-hashed against its id, canonical;
3. connectivity: every ref target and every link of every object is in the pack or, for what a
   thin pack leaves out, already in the store; every prerequisite is in the store;
4. ref names are valid `refs/...` names; targets are events; each move is a create or a
   fast-forward (else refused unless `force`) — decided before anything is written;
5. objects put (re-compressed by the store), one flush, then each ref moved by CAS.

A failure in 1-4 leaves the store byte-for-byte unchanged. What is wrong with the pack raises
BadPack (exit 12); an object of this store that steps 3-4 need but cannot find or read (the
pack's links are all verified by then) raises CorruptStore (exit 17): the store is damaged. A kill during 5 leaves at most
unreferenced objects, which gc removes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import codec
from ..errors import (
    BadPack,
    CorruptObject,
    CorruptStore,
    CtxError,
    InvalidRefName,
    ObjectNotFound,
    RefConflict,
)
from ..memory import review
from ..refs import HEAD, SESSIONS_PREFIX, check_ref_name
from ..refs.names import split_branch_ref
from ..repo.graph import EventGraph
from ..store.base import ObjectStore
from .packfile import DEFAULT_LIMITS, BodyReader, Limits, ParsedPack, read_pack, verify_objects

Progress = Callable[[str, int, int], None]


@dataclass
class RefUpdate:
    name: str
    old: str | None
    new: str
    action: str  # create | fast-forward | unchanged | forced

    def to_dict(self) -> dict:
        return {"name": self.name, "old": self.old, "new": self.new, "action": self.action}


@dataclass
class UnpackResult:
    path: str
    objects: int
    new_objects: int
    bytes: int
    refs: list[RefUpdate] = field(default_factory=list)
    head: str | None = None

    def to_dict(self) -> dict:
        return {"path": self.path, "objects": self.objects, "new_objects": self.new_objects,
                "bytes": self.bytes, "refs": [r.to_dict() for r in self.refs], "head": self.head}


def _bad(pack: ParsedPack, message: str) -> BadPack:
    return BadPack(f"{pack.path}: {message}; nothing was imported", path=pack.path)


def check_ref_names(pack: ParsedPack) -> None:
    for name in pack.refs:
        if not isinstance(name, str) or not name.startswith("refs/") or name == HEAD:
            raise _bad(pack, f"ref name {str(name)[:80]!r} is not under refs/")
        try:
            check_ref_name(name)
        except InvalidRefName as exc:
            raise _bad(pack, str(exc)) from None


def check_session_refs(pack: ParsedPack, repo=None) -> None:
    """Each `refs/sessions/<sid>/<branch>` ref must name a session that exists (a `session`
    object in the pack, or with `repo` in its store) and an event whose first-parent chain ends
    at the SessionStarted root of that session — or of a session it was forked from (its
    `parent_session` chain: a fork's branches may start on its parent's history). Without
    `repo`, what the pack does not carry counts as absent (a full pack carries all of it)."""
    store = repo.objects if repo is not None else None
    memo: dict[str, str | None] = {}
    lookup = _Sessions(pack, store)
    for name, target in sorted(pack.refs.items()):
        if not name.startswith(SESSIONS_PREFIX):
            continue
        parts = split_branch_ref(name)
        if parts is None or not codec.is_full_id(parts[0]):
            raise _bad(pack, f"ref {name} is not refs/sessions/<session id>/<branch>")
        sid = parts[0]
        info = pack.by_id.get(sid)
        if info is not None:
            kind = info.type
        else:
            try:
                kind = store.type_of(sid) if store is not None else None
            except ObjectNotFound:
                kind = None
        if kind != "session":
            what = "no such session" if kind is None else f"a {kind}, not a session"
            raise _bad(pack, f"ref {name} is in session {sid[:12]}: {what} in the pack"
                             + (" or the store" if store is not None else ""))
        found = _session_of(pack, repo, target, memo)
        if found != sid and (found is None or found not in lookup.forked_from(sid)):
            raise _bad(pack, f"ref {name} names {target[:12]}, whose history starts "
                             + (f"session {found[:12]}" if found else "no session")
                             + f", not session {sid[:12]}")


def _session_of(pack: ParsedPack, repo, target: str, memo: dict[str, str | None]) -> str | None:
    """The session named by the root of `target`'s first-parent chain: the pack's events first,
    then (thin packs) the store's, whose memoised walk stops at session marks."""
    walked: list[str] = []
    eid: str | None = target
    sid: str | None = None
    while eid is not None:
        if eid in memo:
            sid = memo[eid]
            break
        link = pack.chain.get(eid)
        if link is None:  # history the pack does not carry
            sid = _store_session_of(repo, eid)
            break
        walked.append(eid)
        eid, sid = link
    for w in walked:
        memo[w] = sid
    return sid


class _Sessions:
    """Session objects as the import would see them: the pack's first, then the store's."""

    def __init__(self, pack: ParsedPack, store: ObjectStore | None) -> None:
        self.pack, self.objects = pack, store
        self.reader: BodyReader | None = None

    def value(self, sid: str) -> dict | None:
        """The session's body, or None if it is not a session the pack or store holds. A
        session the store holds but cannot read is the store's damage: that error propagates."""
        info = self.pack.by_id.get(sid)
        if info is not None:
            if info.type != "session":
                return None
            self.reader = self.reader or BodyReader(self.pack)
            value = codec.unpack_value(self.reader.body(info))  # verified: BadPack if not
        elif self.objects is not None:
            try:
                type_name, body = self.objects.get_raw(sid)
            except ObjectNotFound:
                return None
            value = codec.unpack_value(body) if type_name == "session" else None
        else:
            return None
        return value if isinstance(value, dict) else None

    def forked_from(self, sid: str, limit: int = 1000) -> set[str]:
        """The sessions `sid` descends from through `parent_session` (not `sid` itself)."""
        out: set[str] = set()
        value = self.value(sid)
        while value is not None and len(out) < limit:
            parent = value.get("parent_session")
            if not isinstance(parent, str) or not parent or parent in out or parent == sid:
                break
            out.add(parent)
            value = self.value(parent)
        return out


def _store_session_of(repo, event_id: str) -> str | None:
    """The session of an event the pack does not carry (a thin pack's base): the store's."""
    if repo is None:
        return None
    if event_id not in repo.objects:
        return None
    return repo.session_of_event(event_id)  # an error here is the store's damage


def open_verified(path: str, limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None
                  ) -> tuple[ParsedPack, dict[str, list[str]]]:
    """Steps 1-2 plus ref names and the pack's own connectivity: (pack, {id: references}).

    For a full pack every link must resolve inside the pack; a thin pack may name objects
    outside it (the importing store must have them, which `unpack` checks).
    """
    pack = read_pack(path, limits)
    try:
        check_ref_names(pack)
        cb = None if progress is None else (lambda n: progress("verify", n, len(pack.records)))
        links = verify_objects(pack, cb)
        if not pack.prerequisites:
            for name, target in pack.refs.items():
                if target not in links:
                    raise _bad(pack, f"ref {name} names {target}, which the pack does not carry")
            for obj_id, refs in links.items():
                for ref in refs:
                    if ref not in links:
                        raise _bad(pack, f"object {obj_id} names {ref}, which the pack does "
                                         f"not carry (missing object)")
        for name, target in pack.refs.items():
            info = pack.by_id.get(target)
            if info is not None and info.type != "event":
                raise _bad(pack, f"ref {name} names a {info.type}, not an event")
        return pack, links
    except BaseException:
        pack.close()
        raise


class _Overlay(ObjectStore):
    """The store as it would be after the import: pack bodies first, then the store."""

    def __init__(self, store: ObjectStore, pack: ParsedPack, reader: BodyReader) -> None:
        self.objects, self.pack, self.reader = store, pack, reader

    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        info = self.pack.by_id.get(obj_id)
        if info is not None:
            return info.type, self.reader.body(info)
        return self.objects.get_raw(obj_id)

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self.pack.by_id or obj_id in self.objects

    def __iter__(self) -> Iterator[str]:  # pragma: no cover - not needed by the import
        raise NotImplementedError

    def ids_with_prefix(self, prefix: str) -> Iterator[str]:  # pragma: no cover
        raise NotImplementedError

    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:  # pragma: no cover
        raise NotImplementedError


def _received_names(pack: ParsedPack) -> list[tuple[str, str]]:
    return sorted((n, t) for n, t in pack.refs.items() if review.is_memory_ref(n))


def _plan_memory(repo, pack: ParsedPack, overlay: ObjectStore,
                 origin: str) -> tuple[list[RefUpdate], list[RefUpdate]]:
    """([], moves of the quarantine refs): a pack's memory refs are never created or moved as
    such — each is kept under refs/memory-received/<origin>/ and queued for review, so nothing
    it carries is offered before a person accepts it (docs/security.md). A quarantine ref is
    replaced by a newer copy from the same origin without asking (the old one stays in its
    reflog)."""
    graph = EventGraph(overlay)
    out = []
    for name, new in _received_names(pack):
        kept = review.received_ref(origin, name)
        mine = repo.refs.read(name)
        if mine is not None and (mine == new or graph.is_ancestor(new, mine)):
            out.append(RefUpdate(kept, None, new, "unchanged"))  # nothing this store lacks
            continue
        old = repo.refs.read(kept)
        action = ("create" if old is None else "unchanged" if old == new else
                  "fast-forward" if graph.is_ancestor(old, new) else "forced")
        out.append(RefUpdate(kept, old, new, action))
    return [], out


def plan_refs(repo, pack: ParsedPack, overlay: ObjectStore, force: bool,
              plan: list[RefUpdate] | None = None) -> list[RefUpdate]:
    """How each ref (but memory refs: _plan_memory) would move; RefConflict for a
    non-fast-forward without `force`."""
    graph = EventGraph(overlay)
    plan = [] if plan is None else plan
    for name, new in sorted(pack.refs.items()):
        if review.is_memory_ref(name):
            continue
        old = repo.refs.read(name)
        if old is None:
            action = "create"
        elif old == new:
            action = "unchanged"
        elif graph.is_ancestor(old, new):
            action = "fast-forward"
        elif force:
            action = "forced"
        else:
            raise RefConflict(f"ref {name} is at {old[:12]}, and {new[:12]} from the pack does not "
                              f"descend from it (non-fast-forward); nothing was imported — use "
                              f"--force to move it anyway", ref=name, expected=old, actual=new)
        plan.append(RefUpdate(name, old, new, action))
    return plan


def unpack(repo, path: str, *, force: bool = False, limits: Limits = DEFAULT_LIMITS,
           progress: Progress | None = None, actor: str = "ctx") -> UnpackResult:
    """Import a pack into `repo`; see the module docstring for the order of steps."""
    return _import(repo, path, force=force, limits=limits, progress=progress, actor=actor,
                   move_refs=True)


def import_objects(repo, path: str, *, limits: Limits = DEFAULT_LIMITS,
                   progress: Progress | None = None) -> UnpackResult:
    """Steps 1-3 and the object half of 5: verify the pack and store its objects, moving no
    ref (the git bridge imports a remote's packs this way and moves remote-tracking refs
    itself). `refs` of the result are the pack's refs, all "unchanged"."""
    return _import(repo, path, force=False, limits=limits, progress=progress, actor="ctx",
                   move_refs=False)


def _import(repo, path: str, *, force: bool, limits: Limits, progress: Progress | None,
            actor: str, move_refs: bool) -> UnpackResult:
    pack, links = open_verified(path, limits, progress)
    try:
        store = repo.objects
        for pre in pack.prerequisites:
            if pre not in store:
                raise _bad(pack, f"thin pack needs {pre}, which this store lacks (unpack the "
                                 f"pack it was made against first)")
        for name, target in pack.refs.items():
            if target not in links and target not in store:
                raise _bad(pack, f"ref {name} names {target}, found neither in the pack nor in "
                                 f"the store")
        for obj_id, refs in links.items():
            for ref in refs:
                if ref not in links and ref not in store:
                    raise _bad(pack, f"object {obj_id} names {ref}, found neither in the pack "
                                     f"nor in the store (missing object)")
        reader = BodyReader(pack)
        overlay = _Overlay(store, pack, reader)
        for name, target in pack.refs.items():
            if target in pack.by_id:
                continue
            with _local_damage(pack):
                kind = store.type_of(target)
            if kind != "event":
                raise _bad(pack, f"ref {name} names {target[:12]}, which is not an event")
        label = os.path.basename(path)
        received: list[RefUpdate] = []
        with _local_damage(pack):
            check_session_refs(pack, repo)
            if move_refs:
                plan, received = _plan_memory(repo, pack, overlay, f"pack {label}")
                plan = plan_refs(repo, pack, overlay, force, plan)
            else:
                plan = [RefUpdate(n, t, t, "unchanged") for n, t in sorted(pack.refs.items())]
        new = 0
        total = len(pack.records)
        for n, info in enumerate(pack.records, 1):
            if info.id not in store:
                store.put_body(info.type, reader.body(info), obj_id=info.id)
                new += 1
            if progress is not None and (n % 1000 == 0 or n == total):
                progress("import", n, total)
        if not move_refs:
            store.flush()
            return UnpackResult(path, total, new, pack.size, plan, None)
        # every ref (and HEAD in a new store) moves at once: a kill leaves all or none
        with repo.transaction(actor=actor, message=f"unpack {label}") as tx:
            for upd in plan + received:
                if upd.action != "unchanged":
                    tx.set_ref(upd.name, upd.new, expected=upd.old,
                               message=f"unpack {label}: {upd.action}")
            for upd, (name, _) in zip(received, _received_names(pack), strict=True):
                if upd.action != "unchanged" and name.startswith("refs/memory/"):
                    review.queue_received(tx, f"pack {label}", name, upd.name, upd.new)
            head = _maybe_set_head(repo, tx, plan)
        return UnpackResult(path, total, new, pack.size, plan + received, head)
    finally:
        pack.close()


@contextmanager
def _local_damage(pack: ParsedPack) -> Iterator[None]:
    """What the pack carries has been verified (BadPack otherwise) and everything it links to
    is in the pack or the store, so an object that cannot be found or read here is this
    store's damage, not the pack's: CorruptStore (exit 17), not BadPack (exit 12)."""
    try:
        yield
    except BadPack:
        raise
    except (ObjectNotFound, CorruptObject) as exc:
        raise CorruptStore(f"this store is damaged, not the pack {pack.path}: {exc}; nothing "
                           f"was imported (`ctx fsck` lists the damage)") from exc


def _maybe_set_head(repo, tx, plan: list[RefUpdate]) -> str | None:
    """In a store with no HEAD yet, point HEAD at the first imported `main` branch (or ref)."""
    head = repo.refs.read_head()
    if head.ref is not None or head.target is not None or not plan:
        return None
    names = [u.name for u in plan if u.name.startswith(SESSIONS_PREFIX)] or [plan[0].name]
    mains = [n for n in names if n.endswith("/main")]
    ref = (mains or names)[0]
    try:
        tx.set_head(ref=ref, message="unpack: first branch")
    except CtxError:
        return None
    return ref


def list_pack(path: str, limits: Limits = DEFAULT_LIMITS) -> dict:
    """Header and object list of a pack, after its structure (not its bodies) is checked."""
    pack = read_pack(path, limits)
    try:
        return {"path": path, "version": pack.version, "capabilities": pack.capabilities,
                "refs": pack.refs, "prerequisites": pack.prerequisites, "dicts": pack.dicts,
                "bytes": pack.size, "raw_bytes": pack.raw_size, "checksum": pack.checksum,
                "objects": [{"id": r.id, "type": r.type, "size": r.raw_len,
                             "stored": r.stored_len} for r in pack.records]}
    finally:
        pack.close()


def verify_pack(path: str, limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None) -> dict:
    """Everything `unpack` checks that does not need a store; raises BadPack."""
    pack, links = open_verified(path, limits, progress)
    try:
        types: dict[str, int] = {}
        for r in pack.records:
            types[r.type] = types.get(r.type, 0) + 1
        if not pack.prerequisites:
            check_session_refs(pack)  # a full pack carries the sessions its refs are in
        external = sorted({ref for refs in links.values() for ref in refs if ref not in links})
        return {"path": path, "ok": True, "objects": len(pack.records), "bytes": pack.size,
                "raw_bytes": pack.raw_size, "types": dict(sorted(types.items())),
                "refs": pack.refs, "prerequisites": pack.prerequisites,
                "external": len(external), "checksum": pack.checksum,
                "id_scheme": codec.ID_SCHEME.decode()}
    finally:
        pack.close()
