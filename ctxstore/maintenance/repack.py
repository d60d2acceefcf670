"""`ctx repack` and gc's recompression: retrain the zstd dictionary on a sample of the objects
the store holds now, and rewrite the packs with it.

The rewrite is store/repack.py's (new pack written, fdatasync'd, renamed and indexed before
any old pack is deleted; a kill anywhere leaves every object in at least one sealed pack), with
every copied record recompressed by store/recompress.py (same id, type and body; checked
before it is rewritten). A new dictionary is installed only if it pays for itself: measured on
the sample, what it saves over the store's current dictionary, scaled to the store, must exceed
its own size — so the store gets smaller, and repeated repacks and gcs do not pile up
dictionaries that save nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ..errors import Unsupported
from ..repo import Repository
from ..store import recompress as rc

Progress = Callable[[str, int, int], None]
#: Sample bodies the dictionary choice compresses (twice) to estimate what a new one saves.
_PROBE = 2000


class _Everything:
    """The live set of a repack that drops nothing."""

    def __contains__(self, _item: object) -> bool:
        return True


@dataclass
class DictionaryChoice:
    dict_id: int  # the dictionary the rewritten records use (0: none)
    new: bool  # trained and installed by this run
    samples: int
    sample_bytes: int
    #: bytes of (up to _PROBE of) the samples compressed with the current dictionary and with
    #: the candidate, at the rewrite's level; equal when there was no candidate
    current_bytes: int
    candidate_bytes: int
    reason: str


@dataclass
class RepackReport:
    dictionary: DictionaryChoice | None
    level: int
    packs_before: int
    packs_after: int
    bytes_before: int
    bytes_after: int
    objects: int
    payload_before: int  # stored payload bytes of the rewritten records, before and after
    payload_after: int
    kept_packs: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def choose_dictionary(store, samples: list[bytes], level: int = rc.REPACK_LEVEL,
                      size: int = rc.REPACK_DICT_SIZE, total_small: int | None = None,
                      train: bool = True) -> tuple[bytes | None, DictionaryChoice]:
    """The dictionary a rewrite should use: a new one trained on `samples` if it pays (see the
    module docstring), else the store's current one (None if it has none). `total_small`: the
    bytes of all small bodies the sample was drawn from."""
    from .. import codec

    dicts = store._read_dicts()
    current_id = list(dicts)[-1] if dicts else 0
    current = store._load_dictionary(current_id) if current_id else None
    sample_bytes = sum(map(len, samples))

    probe = samples[::max(1, len(samples) // _PROBE)]  # the estimate costs two compressions

    def cost(dictionary: bytes | None) -> int:
        comp = codec.Compressor(level, dictionary)
        return sum(len(comp.compress(b)[0]) for b in probe)

    now = cost(current) if samples else 0
    if not train or not samples:
        why = "retraining off" if not train else "no small objects to learn from"
        return current, DictionaryChoice(current_id, False, len(samples), sample_bytes, now, now,
                                         why)
    candidate = rc.train(samples, dicts, size)
    if candidate is None:
        return current, DictionaryChoice(current_id, False, len(samples), sample_bytes, now, now,
                                         "zstd found too little to learn from the sample")
    new = cost(candidate)
    scale = (total_small or sample_bytes) / max(sum(map(len, probe)), 1)
    saved = (now - new) * scale
    if saved <= len(candidate):
        return current, DictionaryChoice(
            current_id, False, len(samples), sample_bytes, now, new,
            f"a new dictionary would save ~{int(saved)} bytes, no more than its own "
            f"{len(candidate)}: kept dictionary {current_id or 'none'}")
    dict_id = store.add_dictionary(candidate)
    return candidate, DictionaryChoice(dict_id, True, len(samples), sample_bytes, now, new,
                                       f"saves ~{int(saved)} bytes on the store")


def preparer(store, level: int, size: int, samples: int, live=None, train: bool = True,
             progress: Progress | None = None, chosen: list | None = None):
    """The `prepare` hook of store.repack.repack: sample the candidates, choose (and install)
    the dictionary, return the recompressing transform."""

    def prepare(packs):
        cb = None if progress is None else (lambda n: progress("sample", n, 0))
        sample, total_small = rc.sample_bodies(store, packs, samples, live=live, progress=cb)
        dictionary, choice = choose_dictionary(store, sample, level, size, total_small, train)
        records = sum(len(pack.index) for pack in packs)
        transform = rc.Recompressor(store, dictionary, level, None if progress is None else
                                    (lambda n: progress("recompress", n, records)))
        if chosen is not None:
            chosen.extend([choice, transform])
        return transform

    return prepare


def repack(repo: Repository, *, level: int = rc.REPACK_LEVEL, dict_size: int = rc.REPACK_DICT_SIZE,
           samples: int = rc.REPACK_SAMPLES, train: bool = True, progress: Progress | None = None,
           step: Callable[[str], None] | None = None, wait: float | None = None) -> RepackReport:
    """Retrain the dictionary (if it pays) and rewrite every sealed pack, recompressed at
    `level`, into one new pack; nothing is dropped (that is gc's job)."""
    from ..store.packstore import PackStore
    from ..store.repack import GC_WAIT, RepackLock
    from ..store.repack import repack as rewrite

    store = repo.objects
    if not isinstance(store, PackStore):
        raise Unsupported("repack needs an on-disk store")
    start = time.perf_counter()
    store.flush()
    chosen: list = []
    with RepackLock(store.packs_dir):
        prepare = preparer(store, level, dict_size, samples, train=train, progress=progress,
                           chosen=chosen)
        res = rewrite(store, _Everything(), float("inf"), step=step,
                      wait=GC_WAIT if wait is None else wait, prepare=prepare, exclusive=False)
    choice, transform = (chosen + [None, None])[:2]
    return RepackReport(choice, level, res.packs_before, res.packs_after, res.bytes_before,
                        res.bytes_after, res.objects_kept,
                        transform.bytes_in if transform else 0,
                        transform.bytes_out if transform else 0, len(res.kept_packs),
                        round(time.perf_counter() - start, 3))
