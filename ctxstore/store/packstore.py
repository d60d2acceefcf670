"""The on-disk object store: records in append-only packs, sealed packs found by sorted index.

Layout under the store directory (docs/format.md "Packs"):

    packs/pack-<hex>.pack   header + records (codec.encode_record framing)
    packs/pack-<hex>.idx    present once the pack is sealed (see packindex.py)
    packs/pack-<hex>.pidx   an active pack's partial index: its records before an end mark
    dicts                   one line per trained zstd dictionary: "<zstd dict id> <zdict object id>"

Opening reads one directory listing and nothing else: indexes are mapped on first lookup and
active packs are scanned on the first lookup that misses every sealed pack — only their tail
after the partial index's end mark, so what a reader scans stays bounded at any store size. A writer exists
only once something is put; it takes over an unlocked active pack before creating a new one,
so a stream of one-object processes (`ctx append`) keeps appending to the same pack.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from typing import Any

from .. import codec
from ..errors import CorruptObject, CorruptStore, InvalidInput, ObjectNotFound, StoreNotFound
from ..lockfile import LockFile
from .base import ObjectStore
from .bodyqueue import BodyQueue
from .gclock import GcLock, create_lock_file
from .pack import IDX_SUFFIX, PACK_SUFFIX, PREFIX, Pack
from .packconsolidate import consolidate
from .packindex import PackIndex
from .packwriter import INDEX_AT_CLOSE, INDEX_EVERY, PackWriter, check_durability

DEFAULT_SEAL_SIZE = 32 * 1024 * 1024
DEFAULT_MAX_PACKS = 8
#: Small bodies a writer collects before training the store's first dictionary.
DICT_SAMPLES = 1000
DICTS_FILE = "dicts"
#: A directory mtime younger than this may hide a change made in the same clock tick.
_MTIME_TRUST_NS = 100_000_000
#: How often `put_new` catches up with other processes' writes (see there).
CATCH_UP_SECONDS = 1.0


def _dir_mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return -1
_DICTS_LINE = re.compile(r"(\d{1,10}) ([0-9a-f]{64})")


def read_dicts_file(path: str) -> tuple[dict[int, str], list[CorruptStore]]:
    """Parse `dicts` (docs/format.md "Dictionaries"): the entries, and a CorruptStore naming
    file and line for every line that is not `<zstd dict id> <zdict object id>`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}, []
    entries: dict[int, str] = {}
    problems: list[CorruptStore] = []
    lines = data.split(b"\n")
    tail = lines.pop()  # what follows the last newline: nothing, if the file is intact
    unterminated = tail != b""
    if unterminated:
        lines.append(tail)
    for n, raw in enumerate(lines, 1):
        text = raw.decode("ascii", "replace")
        m = _DICTS_LINE.fullmatch(text)
        if m is None or (unterminated and n == len(lines)):
            why = "no newline at the end" if m is not None else \
                "expected '<zstd dictionary id> <zdict object id>'"
            problems.append(CorruptStore(f"{path}:{n}: damaged line {text[:100]!r} ({why})",
                                         path=path, line=n))
        else:
            entries[int(m.group(1))] = m.group(2)
    return entries, problems


def _dicts_line(path: str, zid: str) -> int | str:
    """The line of `dicts` naming `zid` (for messages), or '?'."""
    try:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                if zid.encode() in raw:
                    return n
    except OSError:
        pass
    return "?"


class PackStore(ObjectStore):
    """`PackStore(path, durability="batch", create=True)`; see the module docstring."""

    def __init__(self, path: str | os.PathLike, durability: str = "batch", create: bool = True,
                 *, seal_size: int = DEFAULT_SEAL_SIZE, max_packs: int = DEFAULT_MAX_PACKS,
                 dict_samples: int = DICT_SAMPLES, level: int = 3, sync_interval: float = 0.1,
                 sync_objects: int = 100, index_every: int = INDEX_EVERY,
                 index_at_close: int = INDEX_AT_CLOSE) -> None:
        self.path = os.fspath(path)
        self.durability = check_durability(durability)
        self.packs_dir = os.path.join(self.path, "packs")
        if not os.path.isdir(self.packs_dir):
            if not create:
                raise StoreNotFound(f"no object store at {self.path}")
            os.makedirs(self.packs_dir, exist_ok=True)
            create_lock_file(self.packs_dir)  # so that a first look-up changes no file
        if seal_size < 1024 or max_packs < 2:
            raise InvalidInput("seal_size must be >= 1024 and max_packs >= 2")
        self.seal_size, self.max_packs, self.level = seal_size, max_packs, level
        self._dict_samples = dict_samples
        self._sync = (sync_interval, sync_objects, index_every, index_at_close)
        self._packs: dict[str, Pack] = {}
        self._order: list[Pack] = []
        #: sealed packs' sizes at the last listing: the probe order (`_reorder`)
        self._sizes: dict[str, int] = {}
        self._dicts: dict[int, str] = {}
        decompressor = codec.Decompressor(self._load_dictionary)
        self._decompress, self._read = decompressor.decompress, decompressor.read
        self._writer: PackWriter | None = None
        self._compressor: codec.Compressor | None = None
        self._samples: list[bytes] | None = None
        self._closed = False
        #: Shared from the first look-up that may lead to naming an object until close (gclock.py).
        self.gc_lock = GcLock(self.packs_dir)
        self._relist = False
        self._listed_mtime = -1
        self._caught_up = -CATCH_UP_SECONDS  # put_new: when it last caught up (monotonic)
        self._buffering = False
        #: bodies put inside a transaction, compressed together (bodyqueue.py)
        self._queued = BodyQueue()
        #: (id, type, body) of every object stored since `start_capture` (the write-ahead
        #: journal's record); None when not capturing or past the limit
        self._captured: list[tuple[str, str, bytes]] | None = None
        self._capture_left = 0
        #: a record no journal record holds was stored since the last flush (a journalled
        #: commit then flushes the packs too)
        self.unsynced_outside = False
        self._list_packs()

    # -- the pack set ---------------------------------------------------------------------
    def _list_packs(self) -> bool:
        """Re-read the packs directory; True if the set of packs or their state changed."""
        names = set(os.listdir(self.packs_dir))
        changed = False
        sizes: dict[str, int] = {}
        for name in names:
            if not (name.startswith(PREFIX) and name.endswith(PACK_SUFFIX)):
                continue
            stem = name[:-len(PACK_SUFFIX)]
            sealed = stem + IDX_SUFFIX in names
            pack = self._packs.get(stem)
            path = os.path.join(self.packs_dir, name)
            if pack is None:
                self._packs[stem] = Pack(path, sealed)
                changed = True
            elif sealed and not pack.sealed:
                pack.seal_with(PackIndex(path[:-len(PACK_SUFFIX)] + IDX_SUFFIX))
                changed = True
            if sealed:
                try:
                    sizes[stem] = os.stat(path).st_size
                except FileNotFoundError:
                    sizes[stem] = 0
        mine = self._writer.pack if self._writer is not None else None
        for stem in [s for s in self._packs if s + PACK_SUFFIX not in names]:
            if self._packs[stem] is not mine:
                self._packs.pop(stem).close()
                changed = True
        self._sizes = sizes
        if changed or not self._order:
            self._reorder()
        return changed

    def _reorder(self) -> None:
        """Probe order: sealed packs largest first (most hits; sizes of the last listing), then
        active packs."""
        sizes = self._sizes
        sealed = sorted((p for p in self._packs.values() if p.sealed),
                        key=lambda p: -sizes.get(p.name, 0))
        self._order = sealed + [p for p in self._packs.values() if not p.sealed]

    def _refresh(self) -> bool:
        """Catch up with other processes: new/sealed/removed packs, new active-pack tails.

        The directory is listed again only if its mtime moved, or is too recent to tell (file
        times tick coarsely): an import asks "is this new?" of every event, and a listing each
        time cost more than the rest of the put."""
        mtime = _dir_mtime(self.packs_dir)
        now = time.time_ns()
        if mtime == self._listed_mtime and now - mtime > _MTIME_TRUST_NS:
            changed = False
        else:
            changed = self._list_packs()
            # A listing made within the trust window of the mtime it saw may have missed a
            # change made in the same clock tick (the mtime does not move), and trusting it
            # later would hide another process's new pack: such a listing is not remembered,
            # so the next look lists again.
            self._listed_mtime = mtime if now - mtime > _MTIME_TRUST_NS else -1
        mine = self._writer.pack if self._writer is not None else None
        for pack in self._order:
            if not pack.sealed and pack is not mine:
                try:
                    changed = pack.refresh() > 0 or changed
                except FileNotFoundError:
                    changed = True
        return changed

    def _probe(self, hex_id: str, raw: bytes) -> tuple[Pack, int] | None:
        """(pack, offset) among the packs this process already knows, or None: no directory
        listing. Raises FileNotFoundError if a pack was consolidated away before being mapped."""
        for pack in self._order:
            off = pack.locate(hex_id, raw)
            if off >= 0:
                return pack, off
        return None

    def _find(self, hex_id: str, refresh: bool = True) -> tuple[Pack, int] | None:
        try:
            raw = bytes.fromhex(hex_id)
        except (ValueError, TypeError):
            return None
        if len(raw) != codec.ID_BYTES:
            return None
        refreshed = False
        for _ in range(4):
            try:
                hit = self._probe(hex_id, raw)
            except FileNotFoundError:  # consolidated away before we mapped it: list again,
                self._list_packs()     # and still catch up with the active packs' tails below
                continue
            if hit is not None:
                return hit
            # A pack vanishing used to end the look-up after the re-listing, without reading
            # the tails other writers had added to their active packs since: a reader then
            # missed an object whose ref another process had just committed (issue 30).
            if not refresh or refreshed or not self._refresh():
                return None
            refreshed = True
        return None

    # -- ObjectStore primitives --------------------------------------------------------------
    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        if obj_id in self._queued:
            self._write_queue()
        writer = self._writer
        if writer is not None and writer.buffered:
            writer.drain()  # a record of this transaction may be asked for
        try:  # the hot path: one probe of the packs we know, then read and verify
            raw = bytes.fromhex(obj_id)
            hit = self._probe(obj_id, raw) if len(raw) == codec.ID_BYTES else None
            if hit is not None:
                return hit[0].read(obj_id, hit[1], self._read, raw)
        except (ValueError, TypeError):
            raise ObjectNotFound(f"no object {obj_id}") from None
        except FileNotFoundError:  # a pack consolidated away: the slow path re-lists
            pass
        for _ in (0, 1):  # not (yet) known here: look for other processes' new packs and tails
            hit = self._find(obj_id)
            if hit is None:
                break
            try:
                return hit[0].read(obj_id, hit[1], self._read)
            except FileNotFoundError:
                self._list_packs()
        raise ObjectNotFound(f"no object {obj_id}")

    def __contains__(self, obj_id: object) -> bool:
        self._share()
        return type(obj_id) is str and (obj_id in self._queued or self._find(obj_id) is not None)

    def __iter__(self) -> Iterator[str]:
        self._write_queue()
        self._refresh()
        seen: set[str] = set()
        for pack in list(self._order):
            for hex_id in pack.ids():
                if hex_id not in seen:
                    seen.add(hex_id)
                    yield hex_id

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def ids_with_prefix(self, prefix: str) -> Iterator[str]:
        self._share()
        self._write_queue()
        self._refresh()
        seen: set[str] = set()
        for pack in list(self._order):
            for hex_id in pack.with_prefix(prefix):
                if hex_id not in seen:
                    seen.add(hex_id)
                    yield hex_id

    def _known(self, obj_id: str) -> bool:
        """Presence check of put: the packs this process knows, with no directory listing (a
        racing duplicate costs a few bytes; a listing per put would cost half the speed)."""
        self._share()
        return obj_id in self._queued or self._find(obj_id, refresh=False) is not None

    def put(self, type_name: str, value: Any) -> str:
        """As ObjectStore.put, but the presence check does not look for other processes' new
        objects (see `_known`)."""
        obj_id, body = codec.encode_object(type_name, value)
        if not self._known(obj_id):
            self._store_body(obj_id, type_name, body)
        return obj_id

    def _held(self, obj_id: str) -> bool:
        """The presence check of a put (`_known`), inlined for the hot paths: one probe of the
        packs this process knows (a miss in every one, mostly), no directory listing."""
        if not self.gc_lock.held:
            self._share()
        if obj_id in self._queued:
            return True
        try:
            raw = bytes.fromhex(obj_id)
            for pack in self._order:
                if pack.locate(obj_id, raw) >= 0:
                    return True
        except (FileNotFoundError, ValueError):  # a pack consolidated away; a bad id
            return self._known(obj_id)
        return False

    def put_encoded(self, obj_id: str, type_name: str, body: bytes) -> str:
        """As `put`, for an (id, body) the caller encoded: the hot path of every transaction's
        events and messages."""
        if not self._held(obj_id):
            self._store_body(obj_id, type_name, body)
        return obj_id

    def put_absent(self, obj_id: str, type_name: str, body: bytes) -> None:
        if not self.gc_lock.held:
            self._share()
        self._store_body(obj_id, type_name, body)

    def put_new(self, obj_id: str, type_name: str, body: bytes) -> bool:
        """put_encoded, telling whether the store lacked the object. Other processes' new packs
        and active-pack tails are looked for at most every CATCH_UP_SECONDS, not at every miss:
        an import asks this of every event, and catching up each time (a directory stat and a
        probe of every other active pack) cost more than the rest of the put. An object another
        process stored within that second is stored again (a few bytes) and counted as new."""
        if self._held(obj_id):
            return False
        now = time.monotonic()
        if now - self._caught_up >= CATCH_UP_SECONDS:
            self._caught_up = now
            if self._refresh() and self._find(obj_id, refresh=False) is not None:
                return False
        self._store_body(obj_id, type_name, body)
        return True

    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:
        captured = self._captured
        if captured is not None:
            self._capture_left -= len(body)
            if self._capture_left >= 0:
                captured.append((obj_id, type_name, body))
            else:
                self._captured = None  # too large for one journal record: the pack path
        else:
            self.unsynced_outside = True
        writer = self._writer
        if self._buffering and writer is not None and writer.pack is not None and \
                self._samples is None and len(body) <= codec.SMALL_OBJECT_LIMIT and \
                self.durability != "always":  # a started writer, the dictionary trained
            if self._queued.add(obj_id, type_name, body):
                self._write_records(self._queued.rotate(self._compressor))
            return
        self._write_queue()  # the records stay in the order of the puts
        writer = self._writer
        if writer is None or writer.pack is None:
            writer = self._start()
            if self._find(obj_id, refresh=False) is not None:
                return  # the active pack just taken over already holds it: no duplicate record
        payload, comp, dict_id = self._compressor.compress(body)
        writer.append(obj_id, codec.encode_record(obj_id, type_name, payload, comp, dict_id,
                                                  len(body)))
        samples = self._samples
        if samples is not None and len(body) <= codec.SMALL_OBJECT_LIMIT and type_name != "zdict":
            samples.append(body)
            if len(samples) >= self._dict_samples:
                self._train()
        if writer.size >= self.seal_size:
            self._seal()

    def _write_queue(self) -> None:
        """Write every queued body (bodyqueue.py). Runs before anything reads the packs, syncs
        or seals, and at the transaction's end (format.md, "Write ordering" 1): until then,
        nothing names a queued object."""
        if self._queued:
            self._write_records(self._queued.drain(self._compressor))

    def _write_records(self, done: list) -> None:
        encode = codec.encode_record
        writer, restarted = self._writer, False
        for (obj_id, type_name, body), (payload, comp, dict_id) in done:
            if writer.pack is None:  # sealed by the previous record: start or take over another
                writer, restarted = self._start(), True
            if restarted and self._find(obj_id, refresh=False) is not None:
                continue  # the pack taken over already holds it
            writer.append(obj_id, encode(obj_id, type_name, payload, comp, dict_id, len(body)))
            if writer.size >= self.seal_size:
                self._seal()

    # -- writer lifecycle ---------------------------------------------------------------------
    def _start(self) -> PackWriter:
        if self._closed:
            raise InvalidInput("the store is closed")
        if self._writer is None:
            self._writer = PackWriter(self.packs_dir, self.durability, *self._sync)
            self._writer.buffering = self._buffering
            self._start_compression()
        self._list_packs()
        pack, orphans = self._writer.acquire([p for p in self._packs.values() if not p.sealed])
        self._packs[pack.name] = pack
        if orphans:
            self._writer.seal_orphans()
            self._maybe_consolidate()
        self._reorder()
        return self._writer

    def _seal(self) -> None:
        self._writer.seal()
        self._maybe_consolidate()

    def seal_active(self) -> None:
        """Seal this process's active pack, if any (gc: so it can be rewritten); the next put
        starts or takes over another."""
        self._write_queue()
        if self._writer is not None and self._writer.pack is not None:
            self._seal()

    def _maybe_consolidate(self) -> None:
        if sum(1 for p in self._packs.values() if p.sealed) > self.max_packs:
            consolidate(self.packs_dir, self.max_packs)
        self._list_packs()
        self._reorder()  # the pack just sealed goes among the sealed ones by its size

    def flush(self) -> None:
        self._write_queue()
        if self._writer is not None:
            self._writer.sync()
        self.unsynced_outside = False

    def start_capture(self, limit: int) -> None:
        """Remember the bodies stored from now on, up to `limit` bytes in all (a repository
        transaction that may commit through the write-ahead journal, store/journal.py)."""
        self._captured, self._capture_left = [], limit

    def take_captured(self) -> list[tuple[str, str, bytes]] | None:
        """The bodies stored since `start_capture`, or None if they passed its limit (or
        nothing was capturing); capturing stops."""
        captured, self._captured = self._captured, None
        return captured

    def write_out(self) -> None:
        """Hand every record put so far to the OS, without syncing it (a journalled commit:
        its record makes the objects durable; a checkpoint syncs the packs later)."""
        self._write_queue()
        if self._writer is not None:
            self._writer.drain()

    def sync_active_packs(self) -> None:
        """fdatasync every active pack, whoever wrote it (a checkpoint: records other processes
        wrote unsynced under the journal become durable). A pack gone meanwhile was sealed or
        consolidated, which synced its records first."""
        self.write_out()
        for name in os.listdir(self.packs_dir):
            if not (name.startswith(PREFIX) and name.endswith(PACK_SUFFIX)):
                continue
            try:
                fd = os.open(os.path.join(self.packs_dir, name), os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)

    def begin_transaction(self) -> None:
        """Buffer this process's writes until the transaction ends (packwriter.py)."""
        self._buffering = True
        if self._writer is not None:
            self._writer.buffering = True

    def end_transaction(self) -> None:
        """Write what the transaction left buffered (its commit has flushed it already, unless
        it was aborted), and release the shared gc lock between transactions, so gc can run
        beside a long-lived writer. The next look-up takes it again and first re-lists the
        packs, dropping any gc deleted meanwhile (an object found only in one of those must be
        written again)."""
        self._write_queue()
        self._buffering = False
        if self._writer is not None:
            self._writer.buffering = False
            self._writer.drain()
        if self.gc_lock.held:
            self.gc_lock.release()
            self._relist = True

    def _share(self) -> None:
        """Take gc's shared lock for this store's look-ups and puts (gclock.py); a closed store
        takes no lock: it is an error to use it (sqlite: "Cannot operate on a closed
        database"), and a lock taken then would never be released."""
        if self._closed:
            raise InvalidInput("the store is closed")
        if not self.gc_lock.held:
            self.gc_lock.share()
            if self._relist:
                self._relist = False
                self._list_packs()

    def close(self) -> None:
        if self._closed:
            return
        self._write_queue()
        self._queued.close()
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        for pack in self._packs.values():
            pack.close()
        self._packs, self._order = {}, []
        self.gc_lock.release()

    # -- dictionaries -------------------------------------------------------------------------
    def _dicts_path(self) -> str:
        return os.path.join(self.path, DICTS_FILE)

    def _read_dicts(self) -> dict[int, str]:
        """{zstd dictionary id: zdict object id}; CorruptStore naming file and line for a line
        that does not parse (a skipped line would lose every record compressed with it)."""
        entries, problems = read_dicts_file(self._dicts_path())
        if problems:
            raise problems[0]
        return entries

    def dicts_problems(self) -> list[CorruptStore]:
        """Every damaged line of `dicts`, and every line whose zdict the store lacks or that
        names a zdict of another zstd dictionary id."""
        path = self._dicts_path()
        entries, problems = read_dicts_file(path)
        for dict_id, zid in entries.items():
            try:
                type_name, body = self.get_raw(zid)
            except ObjectNotFound:
                problems.append(self._missing_zdict(dict_id, zid))
                continue
            except CorruptObject as exc:
                problems.append(CorruptStore(f"{path}:{_dicts_line(path, zid)}: {exc}", path=path,
                                             id=zid))
                continue
            if type_name != "zdict" or codec.zstd_dict_id(body) != dict_id:
                what = f"a {type_name}" if type_name != "zdict" else \
                    f"zstd dictionary {codec.zstd_dict_id(body)}"
                problems.append(CorruptStore(f"{path}:{_dicts_line(path, zid)}: dictionary "
                                             f"{dict_id} names {zid}, which is {what}",
                                             path=path, id=zid))
        return problems

    def _missing_zdict(self, dict_id: int, zid: str) -> CorruptStore:
        return CorruptStore(f"{self._dicts_path()}:{_dicts_line(self._dicts_path(), zid)}: "
                            f"dictionary {dict_id} names zdict {zid}, which is not in the store",
                            path=self._dicts_path(), id=zid)

    def _load_dictionary(self, dict_id: int) -> bytes:
        if dict_id not in self._dicts:
            self._dicts = self._read_dicts()
        zid = self._dicts.get(dict_id)
        if zid is None:
            raise CorruptStore(f"{self._dicts_path()}: no line for zstd dictionary {dict_id}, "
                               f"which records are compressed with", path=self._dicts_path())
        try:
            type_name, body = self.get_raw(zid)
        except ObjectNotFound:
            raise self._missing_zdict(dict_id, zid) from None
        if type_name != "zdict":
            raise CorruptObject(f"dictionary {zid} is a {type_name}, not a zdict", id=zid)
        return body

    def _start_compression(self) -> None:
        """Compress with the newest dictionary; with none yet, collect samples to train one."""
        self._dicts = self._read_dicts()
        if self._dicts:
            dict_id = list(self._dicts)[-1]
            self._compressor = codec.Compressor(self.level, self._load_dictionary(dict_id))
        else:
            self._compressor = codec.Compressor(self.level)
            self._samples = [] if self._dict_samples > 0 else None

    def _train(self) -> None:
        """Train, store the zdict durably, then name it in `dicts` (that order: see format.md)."""
        samples, self._samples = self._samples, None
        dictionary = codec.train_dictionary(samples, **codec.STORE_DICT_PARAMS)
        if dictionary is None:
            return
        self.add_dictionary(dictionary)

    def add_dictionary(self, dictionary: bytes) -> int:
        """Make `dictionary` the one new records are compressed with: the zdict object durable
        first, then its `dicts` line (fsync'd) — docs/format.md "Dictionaries". Returns its zstd
        id, which must be new to the store (CorruptStore otherwise: a reused id would make the
        records of the other dictionary unreadable)."""
        dict_id = codec.zstd_dict_id(dictionary)
        path = os.path.join(self.path, DICTS_FILE)
        with LockFile(path) as lock:
            entries, problems = read_dicts_file(path)
            if problems:
                raise problems[0]
            if dict_id in entries:
                raise CorruptStore(f"{path}: zstd dictionary id {dict_id} is already in use",
                                   path=path)
            zid = self.put("zdict", dictionary)
            self.flush()
            try:
                with open(path, "rb") as f:
                    lock.write(f.read())
            except FileNotFoundError:
                pass
            lock.write(f"{dict_id} {zid}\n".encode("ascii"))
            lock.commit(fsync=self.durability != "never")
        self._dicts[dict_id] = zid
        self._compressor = codec.Compressor(self.level, dictionary)
        self._samples = None
        return dict_id

    # -- introspection (fsck, benchmarks) --------------------------------------------------------
    def packs(self) -> list[Pack]:
        self._write_queue()
        if self._writer is not None:
            self._writer.drain()
        self._refresh()
        return list(self._order)
