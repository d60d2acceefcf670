"""fsck for a PackStore: re-read every record and say exactly what is wrong and where.

For every pack: the header; every record's crc, decompression, declared size, id (blake3 of the
decompressed body must equal the id in the header) and canonical form; for a sealed pack, that
its index checksum holds and that index and pack agree both ways (for an active pack, the same
of its partial index and the records before its end mark). A torn tail at the end of an
active pack is the normal state after a crash (the next writer cuts it), so it is not a problem;
bad bytes with intact records after them are.

Two halves, so that the expensive one runs on every core: this process walks the record headers
of a pack (finding damage and each record's offset) and checks its index; runs of at most
`CHUNK` well-framed records are verified (crc, zstd, blake3, canonical form) by worker processes
when the store holds at least `PARALLEL_MIN` records, else right here. Workers are forked, or
come from a fork server when this process runs other threads (see `_start_method`); a worker
that dies costs time, not answers: its runs are checked here. Problems come out in the
same order either way: by pack, by offset, then the index's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context

from .. import codec
from ..errors import CorruptObject, CtxError
from .pack import (
    HEADER_SIZE,
    PIDX_SUFFIX,
    Pack,
    check_header,
    later_record,
    read_file_from,
    sibling,
)
from .packindex import PartialIndex
from .packstore import PackStore, read_dicts_file

#: Records per unit of verification work (and per progress report).
CHUNK = 10_000
#: Stores with fewer records are verified in this process: forking workers would cost more.
PARALLEL_MIN = 50_000


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # checksum | hash | decode | canonical | index | damage | pack | dicts
    message: str
    id: str | None = None
    pack: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message


def verify(store: PackStore, progress: Callable[[int], None] | None = None,
           workers: int | None = None) -> Iterator[Problem]:
    """Yield every problem found; `progress(n)` is called with objects checked so far.

    `workers`: processes verifying records (default: one per CPU this process may use, if the
    store is large enough to pay for them; 1 verifies everything in this process)."""
    packs = store.packs()
    if workers is None:
        workers = _cpus() if sum(p.count() for p in packs) >= PARALLEL_MIN else 1
    pool = None
    method = _start_method() if workers > 1 else None
    if method is not None:
        pool = ProcessPoolExecutor(workers, mp_context=get_context(method),
                                   initializer=_init_worker,
                                   initargs=(store.path, _dictionaries(store)))
    try:
        for exc in store.dicts_problems():
            yield Problem("dicts", str(exc), exc.details.get("id"))
        done = 0
        check_run = codec.Decompressor(store._load_dictionary).check_run  # this process's
        for pack in packs:
            for item in _verify_pack(pack, pool, check_run):
                if type(item) is int:
                    done += item
                    if progress is not None:
                        progress(done)
                else:
                    yield item
        if progress is not None:
            progress(done)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def _start_method() -> str | None:
    """How to start worker processes here, or None to verify in this process.

    fork is the cheapest, but a forked child inherits only the calling thread: with other
    threads running (a writer's group-commit or compression thread, an embedding application's
    threads, pytest-xdist's) a lock one of them held stays held in the child forever. Then the
    workers come from a fork server, a clean single-threaded process that imports what the
    workers need itself (tens of milliseconds, paid once per `verify`)."""
    methods = _start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else None


def _verify_pack(pack: Pack, pool, check_run) -> Iterator[Problem | int]:
    name = pack.name
    try:
        data = pack.data() if pack.sealed else read_file_from(pack.fd(), 0)
        check_header(data, pack.path)
    except (CtxError, OSError) as exc:
        yield Problem("pack", f"pack {name}: {exc}", pack=name)
        return
    found: dict[bytes, int] = {}
    # per run of records (or damage), in pack order: (run, problems or a worker's future)
    results: list[tuple[tuple[int, int, int], list[Problem] | Future]] = []
    for item in _walk(data, pack.sealed, name, found):
        if type(item) is Problem:
            results.append(((0, 0, 0), [item]))
            continue
        start, end, count = item
        future = None
        if pool is not None:
            try:
                future = pool.submit(_verify_chunk, pack.path, pack.sealed, start, end)
            except BrokenProcessPool:  # a worker died: this run, and the rest, are checked here
                future = None
        if future is not None:
            results.append((item, future))
        else:
            results.append(((0, 0, 0), _verify_records(data, start, end, check_run, name)))
            yield count
    index_problems = list(_check_index(pack, found, len(data)) if pack.sealed
                          else _check_partial(pack, found, len(data)))
    for (start, end, count), res in results:
        if type(res) is list:
            yield from res
            continue
        try:
            problems = res.result()
        except (BrokenProcessPool, OSError):  # a worker died (e.g. killed): check it here
            problems = _verify_records(data, start, end, check_run, name)
        yield count
        yield from problems
    yield from index_problems


def _check_partial(pack: Pack, found: dict[bytes, int], pack_len: int) -> Iterator[Problem]:
    """An active pack's .pidx, if it has one: checksum, end mark within the pack, and the same
    records as the pack before the end mark, both ways (docs/format.md "Partial indexes").
    Readers ignore a bad one (they scan instead), so it costs speed, not answers; still a
    problem, since it means something wrote it wrong."""
    path = sibling(pack.path, PIDX_SUFFIX)
    if not os.path.exists(path):
        return
    name, index = pack.name, PartialIndex(path)
    try:
        end = index.pack_length_checked()
        if not index.verify_checksum():
            yield Problem("index", f"partial index of pack {name}: checksum mismatch", pack=name)
        if end > pack_len:
            yield Problem("index", f"partial index of pack {name} covers {end} bytes, pack has "
                                   f"{pack_len}", pack=name)
        listed = dict(index.entries())
        before = {raw: off for raw, off in found.items() if off < end}
        if len(listed) == len(index) and listed == before:
            return
        for raw, off in index.entries():
            if before.get(raw) != off:
                yield Problem("index", f"partial index of pack {name} names {raw.hex()} at offset "
                                       f"{off}, where the pack has no such record",
                              raw.hex(), name, off)
        for raw in before.keys() - listed.keys():
            yield Problem("index", f"object {raw.hex()} in pack {name} at offset {before[raw]} "
                                   f"is missing from its partial index", raw.hex(), name,
                          before[raw])
    except FileNotFoundError:  # sealed meanwhile: the .idx is checked next time
        return
    except CtxError as exc:
        yield Problem("index", f"partial index of pack {name}: {exc}", pack=name)
    finally:
        index.close()


def _walk(data, sealed: bool, name: str, found: dict[bytes, int]) -> Iterator:
    """Walk the record headers of a pack: yields damage Problems and (start, end, count) runs
    of at most CHUNK well-framed records; fills `found` with each id's first offset."""
    end = len(data)
    pos = run_start = HEADER_SIZE
    count = 0
    span = codec.record_span
    setdefault = found.setdefault
    while pos < end:
        try:
            raw, size = span(data, pos)
        except CorruptObject as exc:
            if count:
                yield run_start, pos, count
                count = 0
            nxt = later_record(data, pos)
            if nxt < 0 and not sealed:
                return  # torn tail of an active pack: recovered by the next writer
            yield Problem("damage", f"pack {name}: unreadable bytes at offset {pos}: {exc}",
                          pack=name, offset=pos)
            if nxt < 0:
                return
            pos = run_start = nxt
            continue
        setdefault(raw, pos)
        pos += size
        count += 1
        if count == CHUNK:
            yield run_start, pos, count
            run_start, count = pos, 0
    if count:
        yield run_start, pos, count


def _dictionaries(store: PackStore) -> dict[int, bytes]:
    """The store's readable dictionaries, handed to workers so that none has to look for them
    (a zdict in an active pack would cost each worker a scan of that pack)."""
    out = {}
    for dict_id in read_dicts_file(store._dicts_path())[0]:  # damaged lines: verify reports them
        try:
            out[dict_id] = store._load_dictionary(dict_id)
        except CtxError:
            continue  # the workers' own lookup reports it, as a serial fsck would
    return out


_worker_check = None  # a worker process's Decompressor.check_run


def _init_worker(store_path: str, dictionaries: dict[int, bytes]) -> None:
    global _worker_check
    store: list[PackStore] = []

    def load(dict_id: int) -> bytes:
        if dict_id in dictionaries:
            return dictionaries[dict_id]
        if not store:
            store.append(PackStore(store_path, create=False))
        return store[0]._load_dictionary(dict_id)

    _worker_check = codec.Decompressor(load).check_run


def _verify_chunk(pack_path: str, sealed: bool, start: int, end: int) -> list[Problem]:
    """Worker process: verify the records in [start, end) of one pack."""
    pack = Pack(pack_path, sealed)
    try:
        if sealed:
            return _verify_records(pack.data(), start, end, _worker_check, pack.name)
        data = os.pread(pack.fd(), end - start, start)  # only this run: active packs are pread
        return _verify_records(data, start, end, _worker_check, pack.name, start)
    finally:
        pack.close()


def _verify_records(data, start: int, end: int, check_run, name: str, base: int = 0
                    ) -> list[Problem]:
    """Crc, decompression, size, id and canonical form of the well-framed records in
    [start, end) of a pack (`data` holds it from `base` on): fsck's per-object work, done by
    `check_run` (a `codec.Decompressor.check_run`) in one loop."""
    return [Problem(kind, f"object {raw.hex()} in pack {name} at offset {pos}: {msg}",
                    raw.hex(), name, pos)
            for kind, raw, pos, msg in check_run(data, start, end, base)]


def _check_index(pack: Pack, found: dict[bytes, int], pack_len: int) -> Iterator[Problem]:
    name, index = pack.name, pack.index
    try:
        if not index.verify_checksum():
            yield Problem("index", f"index of pack {name}: checksum mismatch", pack=name)
        if index.pack_length != pack_len:
            yield Problem("index", f"index of pack {name} covers {index.pack_length} bytes, "
                                   f"pack has {pack_len}", pack=name)
        listed = dict(index.entries())
        if len(listed) == len(index) and listed == found:
            return  # the common case, compared in C: same ids, same offsets, no duplicates
        indexed = set()
        get = found.get
        for raw, off in index.entries():
            indexed.add(raw)
            if get(raw) != off:
                hex_id = raw.hex()
                yield Problem("index", f"index of pack {name} names {hex_id} at offset {off}, "
                                       f"where the pack has no such record", hex_id, name, off)
        for raw in found.keys() - indexed:
            hex_id = raw.hex()
            yield Problem("index", f"object {hex_id} in pack {name} at offset {found[raw]} "
                                   f"is missing from its index", hex_id, name, found[raw])
    except CtxError as exc:
        yield Problem("index", f"index of pack {name}: {exc}", pack=name)
