"""Rewriting a PackStore's packs so that only live objects remain (the back half of gc).

The caller decides what is live (ctxstore.links.reachable from refs, HEAD and reflogs); this
module only moves records. It reads PackStore internals (pack list, indexes, record framing)
and never changes them in place:

1. take `packs/consolidate.lock` (no consolidation or other gc runs meanwhile);
2. seal idle active packs (no writer holds their flock), as a writer seals orphans;
3. candidates = sealed packs last written before the prune cutoff; newer packs and packs a
   writer holds are kept whole (the grace period protects objects not yet named by a ref);
4. copy each live record of the candidates, byte for byte after its crc and id are checked,
   into one new pack: written as tmp, fdatasync'd; its index made durable; then renamed (a pack
   without its index would be an active pack a writer may take over); dir fsync;
5. take the exclusive gc lock (gclock.py: no process that may have found a dead object and be
   about to name it is left), ask the caller what became live since its mark, copy that out of
   the candidates into one more pack the same way;
6. only then delete the candidates, each pack file before its index.

A kill anywhere leaves every live object in at least one sealed pack (old or new, maybe both:
readers tolerate duplicates). A candidate with a damaged record is left as it is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from ..errors import CorruptObject, LockHeld
from ..lockfile import fsync_dir, write_file_atomically
from .gclock import GcLock
from .pack import HEADER, IDX_SUFFIX, PACK_SUFFIX, PIDX_SUFFIX, PREFIX, Pack, remove_partial_index
from .packconsolidate import (
    LOCK_NAME,
    _write,  # the same write-all loop consolidation uses
    copy_records,
    install_sealed,
)
from .packstore import PackStore
from .packwriter import seal, take_over
from .writerlock import open_locked, try_lock

#: How long gc waits for the processes that have the store open to close it before deleting.
GC_WAIT = 10.0
Step = Callable[[str], None]
Remark = Callable[[], set[str]]


@dataclass
class RepackResult:
    packs_before: int = 0
    packs_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    objects_before: int = 0
    objects_kept: int = 0  # records copied into the new pack
    objects_removed: int = 0
    objects_rescued: int = 0  # dead at the mark, live again before the deletes (gclock.py)
    kept_packs: list[str] = field(default_factory=list)  # too new, active, or damaged
    removed_packs: list[str] = field(default_factory=list)
    new_pack: str | None = None
    rescue_pack: str | None = None  # where the rescued objects went


def store_bytes(packs_dir: str) -> int:
    total = 0
    for name in os.listdir(packs_dir):
        if name.endswith((PACK_SUFFIX, IDX_SUFFIX, PIDX_SUFFIX)):
            try:
                total += os.stat(os.path.join(packs_dir, name)).st_size
            except FileNotFoundError:
                pass
    return total


def dictionary_ids(store: PackStore) -> list[str]:
    """The zdict objects named in the store's `dicts` file: always live (records need them)."""
    return sorted(store._read_dicts().values())


class RepackLock:
    """The flock consolidation takes; gc holds it from marking to the last delete."""

    def __init__(self, packs_dir: str) -> None:
        self.path = os.path.join(packs_dir, LOCK_NAME)
        self.fd: int | None = None

    def __enter__(self) -> RepackLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not try_lock(fd):
            os.close(fd)
            raise LockHeld(f"another gc or pack consolidation is running ({self.path} is locked)")
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def seal_idle(packs_dir: str) -> list[str]:
    """Seal every active pack that no writer holds; returns their paths."""
    sealed = []
    for name in sorted(os.listdir(packs_dir)):
        if not (name.startswith(PREFIX) and name.endswith(PACK_SUFFIX)):
            continue
        path = os.path.join(packs_dir, name)
        idx = path[:-len(PACK_SUFFIX)] + IDX_SUFFIX
        if os.path.exists(idx):
            continue
        fd = open_locked(path)
        if fd is None:
            continue
        try:
            if os.path.exists(idx):
                continue
            pack = Pack(path, sealed=False)
            if not take_over(fd, pack):  # damaged in the middle: left for fsck
                pack.close()
                continue
            seal(fd, pack, pack.scanned)
            pack.close()
            sealed.append(path)
        finally:
            os.close(fd)
    return sealed


def remove_stale_temps(packs_dir: str, age: float = 3600.0) -> list[str]:
    """Delete `tmp-*` files a killed gc or consolidation left, and indexes without their pack
    (a kill between a new pack's index and its rename, or between a deleted pack and its
    index), once they are `age` seconds old (a writer's own tmp file, and a new pack's index
    before its rename, live for milliseconds)."""
    removed = []
    limit = time.time() - age
    names = set(os.listdir(packs_dir))
    for name in names:
        if name.startswith("tmp-") or (
                name.startswith(PREFIX) and name.endswith(IDX_SUFFIX)
                and name[:-len(IDX_SUFFIX)] + PACK_SUFFIX not in names):
            path = os.path.join(packs_dir, name)
            try:
                if os.stat(path).st_mtime < limit:
                    os.unlink(path)
                    removed.append(path)
            except FileNotFoundError:
                continue
    return removed


def _sealed(packs_dir: str) -> list[tuple[str, float]]:
    names = set(os.listdir(packs_dir))
    out = []
    for name in sorted(names):
        if name.startswith(PREFIX) and name.endswith(PACK_SUFFIX) \
                and name[:-len(PACK_SUFFIX)] + IDX_SUFFIX in names:
            path = os.path.join(packs_dir, name)
            try:
                out.append((path, os.stat(path).st_mtime))
            except FileNotFoundError:
                continue
    return out


def repack(store: PackStore, live: Container[str], cutoff: float, *, dry_run: bool = False,
           step: Step | None = None, remark: Remark | None = None,
           wait: float = GC_WAIT, transform: Callable[..., bytes] | None = None,
           prepare: Callable[[list[Pack]], Callable[..., bytes] | None] | None = None,
           exclusive: bool = True) -> RepackResult:
    """Keep only `live` objects of the packs last written before `cutoff` (unix time).

    The caller holds a RepackLock. `remark()` is called under the exclusive gc lock, just before
    the deletes: it returns the objects that became live since `live` was marked (see
    gclock.py); they are copied out of the candidates too. `wait`: how long to wait for that
    lock (LockHeld after it, with nothing deleted). `step(name)` is called after each durable
    step (tests kill the process there).

    `prepare(candidate packs)`, called once the candidates are known (sealed), returns the
    `transform` every copied record goes through (store/recompress.py: a new dictionary, so
    the candidates are rewritten even when nothing in them is dead). `exclusive=False` (a
    repack whose `live` is everything) deletes the old packs without the exclusive gc lock, as
    consolidation does: every object they held is in the new, durable pack.
    """
    packs_dir = store.packs_dir
    res = RepackResult()
    note = step or (lambda _name: None)
    if not dry_run:
        store.seal_active()
        seal_idle(packs_dir)
        remove_stale_temps(packs_dir)
        note("sealed")
    res.bytes_before = store_bytes(packs_dir)  # after sealing: the indexes it adds are not gc's
    all_names = [n for n in os.listdir(packs_dir) if n.endswith(PACK_SUFFIX) and n.startswith(PREFIX)]
    res.packs_before = len(all_names)
    sealed = _sealed(packs_dir)
    sealed_paths = {p for p, _ in sealed}
    res.kept_packs = sorted(os.path.join(packs_dir, n) for n in all_names
                            if os.path.join(packs_dir, n) not in sealed_paths)
    candidates = [p for p, mtime in sealed if mtime < cutoff]
    res.kept_packs += [p for p, mtime in sealed if mtime >= cutoff]
    kept = [Pack(p, sealed=True) for p in res.kept_packs if p in sealed_paths]
    try:
        if dry_run:
            old_active = [p for p in res.kept_packs if p not in sealed_paths
                          and _mtime(p) < cutoff]
            res.kept_packs = [p for p in res.kept_packs if p not in old_active]
            _estimate(candidates, old_active, res, live, kept)
        else:
            if prepare is not None:
                cands = [Pack(p, sealed=True) for p in candidates]
                try:
                    transform = prepare(cands)
                finally:
                    for pack in cands:
                        pack.close()
            _rewrite(store, candidates, kept, live, res, note, remark, wait, transform,
                     exclusive)
    finally:
        for pack in kept:
            pack.close()
    res.bytes_after = res.bytes_before if dry_run else store_bytes(packs_dir)
    res.packs_after = (res.packs_before - len(res.removed_packs) + (1 if res.new_pack else 0)
                       + (1 if res.rescue_pack else 0))
    return res


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return float("inf")


def _in_kept(kept: list[Pack], raw: bytes) -> bool:
    for pack in kept:
        try:
            if pack.index.find(raw) >= 0:
                return True
        except (CorruptObject, OSError):
            continue
    return False


def _leaving(dead: set[str], kept: list[Pack]) -> set[str]:
    """The dead ids that leave the store: those no kept pack also holds. Objects, not records:
    two writers racing on one object leave a record of it in each of two packs."""
    return {i for i in dead if not _in_kept(kept, bytes.fromhex(i))}


def _estimate(candidates: list[str], active: list[str], res: RepackResult,
              live: Container[str], kept: list[Pack]) -> None:
    """Dry run: count what a rewrite of `candidates` and old active packs would drop."""
    seen: set[str] = set()
    for path in [*candidates, *active]:
        pack = Pack(path, sealed=path in candidates)
        try:
            if not pack.sealed:
                pack.refresh()
            ids = list(pack.ids())
        except (CorruptObject, OSError):
            continue
        finally:
            pack.close()
        seen.update(ids)
        res.removed_packs.append(path)
    res.objects_before = len(seen)
    res.objects_removed = len(_leaving({i for i in seen if i not in live}, kept))


class _NewPack:
    """A pack being written as `tmp-pack-….pack`; `install` makes it and its index durable."""

    def __init__(self, packs_dir: str) -> None:
        self.packs_dir = packs_dir
        self.name = PREFIX + os.urandom(20).hex()
        self.tmp = os.path.join(packs_dir, f"tmp-{self.name}{PACK_SUFFIX}")
        self.fd: int | None = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.pos = _write(self.fd, HEADER)
        self.written: dict[bytes, int] = {}

    def fill(self, paths: list[str], live: Container[str], kept: list[Pack],
             transform: Callable[..., bytes] | None = None
             ) -> tuple[list[str], list[str], set[str], set[str]]:
        """Append the live records of each pack of `paths` not already in `kept` (through
        `transform`, if given), then fdatasync: (packs copied, damaged packs left out, ids
        seen in the copied packs, those not live). Ids, not records: a pack may repeat an
        object another pack holds."""
        copied, damaged, seen, dead = [], [], set(), set()
        for path in paths:
            pack_seen: set[str] = set()
            pack_dead: set[str] = set()

            def is_live(hex_id: str, seen: set[str] = pack_seen, dead: set[str] = pack_dead
                        ) -> bool:
                seen.add(hex_id)
                if hex_id in live:
                    return True
                dead.add(hex_id)
                return False

            pack = Pack(path, sealed=True)
            try:
                out = copy_records(pack, self.fd, self.pos, self.written, is_live,
                                   lambda raw, kept=kept: _in_kept(kept, raw), transform)
            finally:
                pack.close()
            if out is None:  # left in place whole: none of its ids is counted
                damaged.append(path)
                continue
            self.pos = out[0]
            seen |= pack_seen
            dead |= pack_dead
            copied.append(path)
        os.fdatasync(self.fd)
        return copied, damaged, seen, dead

    def discard(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass

    def install(self, note: Step, what: str) -> str | None:
        """Put the (fdatasync'd) pack in place, sealed: its index durable before the rename
        (`install_sealed`); None, and the tmp file gone, if nothing was written."""
        os.close(self.fd)
        self.fd = None
        if not self.written:
            os.unlink(self.tmp)
            return None
        note(f"{what}-written")  # the tmp pack, fdatasync'd by `fill`
        final = install_sealed(self.packs_dir, self.tmp, self.name, list(self.written.items()),
                               self.pos, write_file_atomically)
        note(f"{what}-index-written")
        return final


def _rewrite(store: PackStore, candidates: list[str], kept: list[Pack], live: Container[str],
             res: RepackResult, note: Step, remark: Remark | None, wait: float,
             transform: Callable[..., bytes] | None = None, exclusive: bool = True) -> None:
    packs_dir = store.packs_dir
    new = _NewPack(packs_dir)
    try:
        merged, damaged, seen, dead = new.fill(candidates, live, kept, transform)
    except BaseException:
        new.discard()
        raise
    res.kept_packs += damaged
    res.objects_before = len(seen)
    if not merged or (not dead and len(merged) == 1 and transform is None):
        new.discard()  # nothing to gain: the one candidate already holds only live objects
        return
    leaving = _leaving(dead, kept)
    res.objects_removed, res.objects_kept = len(leaving), len(new.written)
    res.new_pack = new.install(note, "pack")
    if not exclusive:
        for path in merged:
            _delete_pack(path)
            res.removed_packs.append(path)
            note("pack-deleted")
        fsync_dir(packs_dir)
        return
    # Deleting needs the exclusive gc lock: no process that may have found a dead object and be
    # about to name it is left. This process's own look-ups are over (gc runs alone in it).
    store.gc_lock.release()
    lock = GcLock(packs_dir)
    try:
        lock.exclusive(wait)
    except LockHeld as exc:
        raise LockHeld(f"gc deleted nothing: {exc}; the live objects are also in a new pack "
                       f"(harmless duplicates); run gc again once they have closed the store"
                       ) from None
    try:
        note("locked")
        extra = remark() if remark is not None else set()
        if extra:
            merged = _rescue(store, merged, kept, extra, leaving, res, note)
        for path in merged:
            _delete_pack(path)
            res.removed_packs.append(path)
            note("pack-deleted")
        fsync_dir(packs_dir)
    finally:
        lock.release()


def _delete_pack(path: str) -> None:
    """The pack file before its index (a pack without an index is an active pack to readers,
    an index without its pack nothing), then any partial index a crash left."""
    os.unlink(path)
    os.unlink(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX)
    remove_partial_index(path)


def _rescue(store: PackStore, merged: list[str], kept: list[Pack], extra: Container[str],
            leaving: set[str], res: RepackResult, note: Step) -> list[str]:
    """Copy the objects that became live after the mark out of the packs about to be deleted,
    into one more pack; returns the packs that may still be deleted."""
    also = [Pack(res.new_pack, sealed=True)] if res.new_pack else []
    new = _NewPack(store.packs_dir)
    try:
        copied, damaged, seen, dead = new.fill(merged, extra, kept + also)
        res.rescue_pack = new.install(note, "rescue")
    except BaseException:
        new.discard()
        raise
    finally:
        for pack in also:
            pack.close()
    res.kept_packs += damaged
    res.objects_rescued = len((seen - dead) & leaving)  # counted as leaving, and now kept
    res.objects_removed -= res.objects_rescued
    res.objects_kept += len(new.written)
    return copied


