"""fsck for a PackStore: re-read every record and say exactly what is wrong and where.

For every pack: the header; every record's crc, decompression, declared size, id (blake3 of the
decompressed body must equal the id in the header) and canonical form; for a sealed pack, that
its index checksum holds and that index and pack agree both ways. A torn tail at the end of an
active pack is the normal state after a crash (the next writer cuts it), so it is not a problem;
bad bytes with intact records after them are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .. import codec
from ..errors import CorruptObject, CtxError
from .pack import HEADER_SIZE, Pack, check_header, later_record, read_file_from
from .packstore import PackStore

PROGRESS_EVERY = 10_000


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # checksum | hash | decode | canonical | index | damage | pack
    message: str
    id: str | None = None
    pack: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message


def verify(store: PackStore, progress: Callable[[int], None] | None = None) -> Iterator[Problem]:
    """Yield every problem found; `progress(n)` is called with objects checked so far."""
    done = 0
    for pack in store.packs():
        for item in _verify_pack(pack, store._decompress):
            if type(item) is int:
                done += item
                if progress is not None:
                    progress(done)
            else:
                yield item
    if progress is not None:
        progress(done)


def _verify_pack(pack: Pack, decompress) -> Iterator[Problem | int]:
    name = pack.name
    try:
        data = pack.data() if pack.sealed else read_file_from(pack.fd(), 0)
        check_header(data, pack.path)
    except (CtxError, OSError) as exc:
        yield Problem("pack", f"pack {name}: {exc}", pack=name)
        return
    found: dict[str, int] = {}
    end = len(data)
    pos = HEADER_SIZE
    read_header, payload_of, compute_id = (codec.read_record_header, codec.record_payload,
                                           codec.compute_id)
    count = 0
    while pos < end:
        try:
            info = read_header(data, pos)
        except CorruptObject as exc:
            nxt = later_record(data, pos)
            if nxt < 0 and not pack.sealed:
                break  # torn tail of an active pack: recovered by the next writer
            yield Problem("damage", f"pack {name}: unreadable bytes at offset {pos}: {exc}",
                          pack=name, offset=pos)
            if nxt < 0:
                break
            pos = nxt
            continue
        hex_id, off = info.id, pos
        pos += info.size
        found.setdefault(hex_id, off)
        count += 1
        if count == PROGRESS_EVERY:
            yield count
            count = 0
        where = f"object {hex_id} in pack {name} at offset {off}"
        try:
            body = decompress(payload_of(data, info), info)
        except CorruptObject as exc:
            kind = "checksum" if "checksum" in str(exc) else "decode"
            yield Problem(kind, f"{where}: {exc}", hex_id, name, off)
            continue
        if compute_id(info.type, body) != hex_id:
            yield Problem("hash", f"{where}: body hashes to {compute_id(info.type, body)}",
                          hex_id, name, off)
        elif info.type not in codec.RAW_TYPES and not codec.is_canonical(body):
            yield Problem("canonical", f"{where}: body is not canonical msgpack", hex_id, name, off)
    yield count
    if pack.sealed:
        yield from _check_index(pack, found, len(data))


def _check_index(pack: Pack, found: dict[str, int], pack_len: int) -> Iterator[Problem]:
    name, index = pack.name, pack.index
    try:
        if not index.verify_checksum():
            yield Problem("index", f"index of pack {name}: checksum mismatch", pack=name)
        if index.pack_length != pack_len:
            yield Problem("index", f"index of pack {name} covers {index.pack_length} bytes, "
                                   f"pack has {pack_len}", pack=name)
        indexed = set()
        for raw, off in index.entries():
            hex_id = raw.hex()
            indexed.add(hex_id)
            if found.get(hex_id) != off:
                yield Problem("index", f"index of pack {name} names {hex_id} at offset {off}, "
                                       f"where the pack has no such record", hex_id, name, off)
        for hex_id in found.keys() - indexed:
            yield Problem("index", f"object {hex_id} in pack {name} at offset {found[hex_id]} "
                                   f"is missing from its index", hex_id, name, found[hex_id])
    except CtxError as exc:
        yield Problem("index", f"index of pack {name}: {exc}", pack=name)
