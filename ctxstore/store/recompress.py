"""A new zstd dictionary trained on a sample of the store's objects, and records recompressed
with it (the work `ctx repack` and gc add to the rewrite of store/repack.py).

A store trains its first dictionary on the first ~1000 small objects it ever writes, and keeps
it: what those objects were (a first session, one tool's output) is rarely what the store holds
a year later. Retraining samples the objects that are there now, uniformly (reservoir sampling
over the packs), and recompresses every record the rewrite copies: small bodies with the new
dictionary at a high level (cold data is read far more often than it is rewritten), larger ones
with or without it, whichever is smaller.

Rules (docs/format.md "Dictionaries"), which keep every record readable whatever happens:

1. the new zdict object is written and made durable before `dicts` names it, and `dicts` names
   it (fsync) before any record compressed with it is written;
2. a line of `dicts` is never removed or changed, and the zdict objects it names are gc roots:
   a dictionary stays readable for as long as the store exists, so an old pack holding records
   compressed with it can be read until gc or repack rewrites them (and after);
3. a new dictionary's zstd id is one no line of `dicts` uses yet;
4. a recompressed record keeps its id, type and body: the body is decompressed, its id
   recomputed and checked (a damaged record is never laundered into a fresh one), and only its
   payload and compression fields change.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass

from .. import codec
from ..errors import CorruptObject
from .pack import Pack

#: Compression level of records `ctx repack` rewrites (cold data): ~7% smaller than level 3 on
#: the corpus, and ~10x slower than level 9.
REPACK_LEVEL = 19
#: The level gc recompresses at: gc runs more often and over more data; on the corpus level 9
#: gives 0.47x raw against level 19's 0.46x, ~10x faster.
GC_LEVEL = 9
#: Size of a retrained dictionary: on the mixed corpus (5.4 MB of JSONL) 384 KiB gives 0.446x
#: the raw bytes, 256 KiB 0.456x, 64 KiB ~0.49x, the dictionary included.
REPACK_DICT_SIZE = 384 * 1024
#: Bodies sampled for training (at most): zstd wants ~100x the dictionary size of samples.
REPACK_SAMPLES = 20_000
PROGRESS_EVERY = 500
#: Samples smaller than this teach the dictionary nothing.
MIN_SAMPLE = 32


def sample_bodies(store, packs: list[Pack], limit: int = REPACK_SAMPLES, seed: int = 0,
                  live: Callable[[str], bool] | None = None,
                  progress: Callable[[int], None] | None = None) -> tuple[list[bytes], int]:
    """Up to `limit` small bodies (dictionary candidates), a uniform sample of the records of
    the sealed `packs` (reservoir sampling; ids `live` says no to are skipped), and the bytes
    of all the candidates it was drawn from. Damaged records are skipped here: fsck reports
    them, and the rewrite leaves their packs alone."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    seen = total = 0
    read = store._read
    for pack in packs:
        try:
            entries = sorted(pack.index.entries(), key=lambda e: e[1])
            data = pack.data()
        except (CorruptObject, OSError):
            continue
        for raw, off in entries:
            if live is not None and not live(raw.hex()):
                continue
            try:
                code, _rid, body, _ = read(data, off)
            except (CorruptObject, OSError):
                continue
            if code == _ZDICT or not MIN_SAMPLE <= len(body) <= codec.SMALL_OBJECT_LIMIT:
                continue
            seen += 1
            total += len(body)
            if len(out) < limit:
                out.append(body)
            else:
                j = rnd.randrange(seen)
                if j < limit:
                    out[j] = body
            if progress is not None and seen % 10_000 == 0:
                progress(seen)
    return out, total


_ZDICT = codec.TYPE_CODES["zdict"]


def train(samples: list[bytes], used_ids, size: int = REPACK_DICT_SIZE) -> bytes | None:
    """A dictionary trained on `samples` whose zstd id is not in `used_ids`; None if zstd
    finds too little to learn."""
    rnd = random.Random(os.urandom(8))
    used = set(used_ids)
    dict_id = rnd.randrange(32768, 1 << 31)  # zstd reserves ids below 32768
    while dict_id in used:
        dict_id = rnd.randrange(32768, 1 << 31)
    return codec.train_dictionary(samples, size, dict_id=dict_id, **codec.STORE_DICT_PARAMS)


@dataclass
class Recompressor:
    """Turns a verified record into the same object compressed with `dictionary` at `level`."""

    objects: object
    dictionary: bytes | None  # None: plain zstd (a store without a dictionary)
    level: int = REPACK_LEVEL

    #: progress(records done), every PROGRESS_EVERY records
    progress: Callable[[int], None] | None = None

    def __post_init__(self) -> None:
        self._small = codec.Compressor(self.level, self.dictionary)
        self._plain = codec.Compressor(self.level)
        self.bytes_in = 0  # stored payload bytes before
        self.bytes_out = 0
        self.records = 0

    def __call__(self, data, info: codec.RecordInfo, where: str = "") -> bytes:
        payload = codec.record_payload(data, info, where)  # crc checked
        body = self.objects._decompress(payload, info)  # size checked
        if codec.id_digest(info.type, body).hex() != info.id:  # rule 4
            raise CorruptObject(f"object {info.id}{where}: body does not hash to its id",
                                id=info.id)
        if info.type == "zdict":  # a dictionary is never compressed with a dictionary
            new, comp, dict_id = self._plain.compress(body)
        else:
            new, comp, dict_id = self._small.compress_any(body)
        self.bytes_in += info.stored_len
        self.bytes_out += len(new)
        self.records += 1
        if self.progress is not None and self.records % PROGRESS_EVERY == 0:
            self.progress(self.records)
        return codec.encode_record(info.id, info.type, new, comp, dict_id, len(body))
