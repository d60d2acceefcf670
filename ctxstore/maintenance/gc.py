"""Maintenance: gc (mark from refs, HEAD and reflogs, rewrite live objects), reflog expire, fsck."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .. import codec
from ..clock import parse_when
from ..errors import CorruptStore, CtxError, Unsupported
from ..objects import links
from ..refs import ReflogEntry
from ..repo import Repository, operations

Progress = Callable[[str, int, int], None]

DAY = 86400
DEFAULT_PRUNE = "2.weeks.ago"
DEFAULT_EXPIRE = "90.days.ago"
DEFAULT_EXPIRE_UNREACHABLE = "30.days.ago"


def parse_time(text: str, now: float | None = None) -> float | None:
    """A cutoff as unix seconds (None for `never`): see `clock.parse_when`."""
    ref = None if now is None else datetime.fromtimestamp(now, UTC)
    when = parse_when(text, ref)
    return None if when is None else when.timestamp()


# ---------------------------------------------------------------------------------------------
# Reflogs
# ---------------------------------------------------------------------------------------------

def reflog_names(repo: Repository) -> list[str]:
    """Every ref that has a reflog (HEAD and refs/..., including deleted refs' logs)."""
    return repo.refs.reflog_names()


@dataclass
class ExpireResult:
    refs: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {kept, expired}
    expired: int = 0
    kept: int = 0
    dry_run: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _expire_plan(repo: Repository, name: str, expire: float | None,
                 expire_unreachable: float | None) -> tuple[list[ReflogEntry], list[ReflogEntry]]:
    entries = repo.refs.reflog(name)
    tip = repo.refs.read(name)
    keep = []
    for e in entries:
        ts = e.ts_ms / 1000
        if expire is not None and ts < expire:
            continue
        if expire_unreachable is not None and ts < expire_unreachable and not _on_tip(repo, e, tip):
            continue
        keep.append(e)
    return entries, keep


def _on_tip(repo: Repository, e: ReflogEntry, tip: str | None) -> bool:
    if e.new is None or tip is None:
        return False
    try:
        return repo.graph.is_ancestor(e.new, tip)
    except CtxError:  # the event is gone or not an event: not on the tip
        return False


def reflog_expire(repo: Repository, *, expire: str = DEFAULT_EXPIRE,
                  expire_unreachable: str = DEFAULT_EXPIRE_UNREACHABLE, dry_run: bool = False,
                  refs: list[str] | None = None, now: float | None = None) -> ExpireResult:
    """Drop reflog entries older than `expire`, and those older than `expire_unreachable` whose
    event is not reachable from the ref's current tip (git's defaults: 90 and 30 days)."""
    cut = parse_time(expire, now)
    cut_unreach = parse_time(expire_unreachable, now)
    res = ExpireResult(dry_run=dry_run)
    # every reflog is read (strictly) before any is rewritten: a damaged one stops all of them
    plans = [(name, *_expire_plan(repo, name, cut, cut_unreach))
             for name in refs or reflog_names(repo)]
    # one operation, so `ctx undo` puts the expired entries back
    with repo.transaction(message="reflog expire") as tx:
        for name, entries, keep in plans:
            n_exp = len(entries) - len(keep)
            res.refs[name] = {"kept": len(keep), "expired": n_exp}
            res.expired += n_exp
            res.kept += len(keep)
            if n_exp and not dry_run:
                kept = set(map(id, keep))
                tx.expire_reflog(name, [e for e in entries if id(e) not in kept])
    return res


# ---------------------------------------------------------------------------------------------
# Roots and gc
# ---------------------------------------------------------------------------------------------

def roots(repo: Repository, *, now: float | None = None, expire: str = DEFAULT_EXPIRE,
          expire_unreachable: str = DEFAULT_EXPIRE_UNREACHABLE) -> set[str]:
    """What gc keeps alive: every ref, HEAD, every reflog entry that has not expired, and every
    operation younger than `expire` (which names the refs' old and new values: undo needs them)."""
    out = {tip for _, tip in repo.refs.iter_refs("refs/")}
    out.update(operations.split_by_age(repo, parse_time(expire, now))[0])
    head = repo.refs.read_head().target
    if head:
        out.add(head)
    cut = parse_time(expire, now)
    cut_unreach = parse_time(expire_unreachable, now)
    for name in reflog_names(repo):
        _, keep = _expire_plan(repo, name, cut, cut_unreach)
        for e in keep:
            out.update(v for v in (e.old, e.new) if v)
    return out


def check_root_sources(repo: Repository) -> None:
    """Read every source of gc's roots strictly — each ref file, HEAD, op-head, each reflog
    line, each line of `dicts` and the zdict it names — and raise CorruptStore (file and line) at the first
    damage: a source that cannot be read would hide live objects from the mark."""
    from ..store.packstore import PackStore

    list(repo.refs.iter_refs("refs/"))
    repo.refs.read_head()
    repo.refs.read_op_head()
    for name in reflog_names(repo):
        repo.refs.reflog(name)
    if isinstance(repo.objects, PackStore):
        problems = repo.objects.dicts_problems()
        if problems:
            raise problems[0]


def _refuse_missing(repo: Repository, missing: dict[str, str]) -> None:
    """CorruptStore naming what is missing and what names it (a ref's file where a ref does),
    if the mark met any missing object."""
    if not missing:
        return
    obj, by = sorted(missing.items())[0]
    if by:
        where = f"named by object {by}"
    else:
        refs = [name for name, tip in repo.refs.iter_refs("refs/") if tip == obj]
        base = Path(repo.path or ".")
        if refs:
            where = f"named by ref {refs[0]} ({base / refs[0]})"
        elif repo.refs.read_head().target == obj:
            where = f"named by HEAD ({base / 'HEAD'})"
        else:
            where = "named by a reflog entry or an operation"
    more = len(missing) - 1
    raise CorruptStore(f"gc refused, nothing deleted: object {obj} is missing ({where})"
                       + (f" and {more} more missing" if more > 0 else "")
                       + "; a missing object makes reachability unknown (`ctx fsck --full` "
                         "lists all damage)", missing=sorted(missing))


def _snapshot_roots(repo: Repository, live: set[str]) -> set[str]:
    """Cached state snapshots of live events (derived data, but cheap to keep)."""
    base = Path(repo.path or "") / "cache" / "snapshots"
    out: set[str] = set()
    if repo.path is None or not base.is_dir():
        return out
    for sub in base.iterdir():
        for entry in sub.iterdir() if sub.is_dir() else ():
            if entry.name in live:
                try:
                    value = entry.read_text().strip()
                except OSError:
                    continue
                if codec.is_full_id(value):
                    out.add(value)
    return out


@dataclass
class GcResult:
    dry_run: bool
    prune: str
    roots: int
    live: int
    missing: list[str]
    objects_before: int
    objects_removed: int
    packs_before: int
    packs_after: int
    bytes_before: int
    bytes_after: int
    kept_packs: int
    reflog_expired: int
    seconds: float
    objects_rescued: int = 0  # dead at the mark, named again before the deletes: kept
    #: operations older than the expiry, removed with what only they named: `ctx undo` and
    #: `ctx op restore` can no longer go back to them
    operations_expired: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def gc(repo: Repository, *, prune: str = DEFAULT_PRUNE, dry_run: bool = False,
       expire: str = DEFAULT_EXPIRE, expire_unreachable: str = DEFAULT_EXPIRE_UNREACHABLE,
       progress: Progress | None = None, step: Callable[[str], None] | None = None,
       now: float | None = None, wait: float | None = None, level: int | None = None,
       retrain: bool = True) -> GcResult:
    """Expire reflogs, mark everything reachable, rewrite the live objects, delete old packs.

    Refuses (CorruptStore, nothing changed) while any source of its roots is damaged: see
    check_root_sources.

    `prune`: packs last written after this time are kept whole (default 2 weeks). A missing
    object met by the mark (a ref, reflog entry, operation or link naming what the store
    cannot find) refuses the gc, CorruptStore naming it, nothing deleted: what cannot be read
    cannot be proven dead or alive (issue 28).
    Before deleting, gc waits up to `wait` seconds (default repack.GC_WAIT) for every other
    process that has the store open to close it, then marks again what they made reachable
    meanwhile (ctxstore/store/gclock.py); LockHeld if they do not, with nothing deleted.

    The rewritten records are recompressed at `level` (default GC_LEVEL, 9) with a dictionary
    retrained on a sample of the live objects when that pays (maintenance/repack.py; `retrain`
    False keeps the current one).
    """
    from ..store.packstore import PackStore
    from ..store.recompress import GC_LEVEL, REPACK_DICT_SIZE, REPACK_SAMPLES
    from ..store.repack import GC_WAIT, RepackLock, dictionary_ids, repack
    from .repack import preparer

    store = repo.objects
    if not isinstance(store, PackStore):
        raise Unsupported("gc needs an on-disk store")
    try:
        check_root_sources(repo)
    except CorruptStore as exc:
        raise CorruptStore(f"gc refused, nothing deleted: {exc} (`ctx fsck` lists all damage)",
                           **exc.details) from None
    if repo.journal is not None:  # a record not yet applied names objects no ref names yet
        from ..repo import journal_apply

        with repo.refs.transaction_lock():
            journal_apply.recover(repo)
    start = time.perf_counter()
    given_now = now
    now = time.time() if now is None else now
    store.flush()
    expired_ops = [lo.id for lo in operations.split_by_age(repo, parse_time(expire, now))[1]]
    with nullcontext() if dry_run else RepackLock(store.packs_dir):
        # the mark comes first, from the roots as they will be after the reflog expiry (roots()
        # applies the same cut), so that a missing object refuses the gc before it changed
        # anything, the expiry included
        root_ids = roots(repo, now=now, expire=expire, expire_unreachable=expire_unreachable)
        root_ids.update(dictionary_ids(store))
        missing: dict[str, str] = {}
        cb = None if progress is None else (lambda n: progress("mark", n, 0))
        live = links.reachable(store, sorted(root_ids), missing=missing, progress=cb)
        _refuse_missing(repo, missing)
        expired = reflog_expire(repo, expire=expire, expire_unreachable=expire_unreachable,
                                dry_run=dry_run, now=now).expired
        if step:
            step("reflogs-expired")
        # the expiry is an operation written to the active pack just now: `--prune=now`
        # means "packs written before this point", that one included; what it names is live
        cutoff = parse_time(prune, time.time() if given_now is None else given_now)
        if cutoff is None:  # --prune=never: nothing is old enough
            cutoff = float("-inf")
        after = roots(repo, now=now, expire=expire, expire_unreachable=expire_unreachable)
        root_ids |= after
        live |= links.reachable(store, sorted(after), missing=missing, stop=live.__contains__)
        _refuse_missing(repo, missing)
        live |= _snapshot_roots(repo, live)
        if step:
            step("marked")

        def remark() -> set[str]:
            """What became live since the mark (called with every other process shut out):
            walked from today's refs, HEAD, reflogs and dictionaries, only as far as `live`."""
            now_roots = roots(repo, now=now, expire=expire, expire_unreachable=expire_unreachable)
            now_roots.update(dictionary_ids(store))
            new = links.reachable(store, sorted(now_roots), missing=missing,
                                  stop=live.__contains__)
            _refuse_missing(repo, missing)
            new |= _snapshot_roots(repo, new)
            return new - live

        prepare = preparer(store, GC_LEVEL if level is None else level, REPACK_DICT_SIZE,
                           REPACK_SAMPLES, live=live.__contains__, train=retrain,
                           progress=progress)
        res = repack(store, live, cutoff, dry_run=dry_run, step=step, remark=remark,
                     wait=GC_WAIT if wait is None else wait, prepare=prepare)
    return GcResult(dry_run, prune, len(root_ids), len(live), sorted(missing), res.objects_before,
                    res.objects_removed, res.packs_before, res.packs_after, res.bytes_before,
                    res.bytes_after, len(res.kept_packs), expired,
                    round(time.perf_counter() - start, 3), res.objects_rescued, expired_ops)
