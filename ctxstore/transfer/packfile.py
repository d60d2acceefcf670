"""Portable packs: one self-describing, checksummed file carrying refs and their objects.

Layout (docs/format.md "Portable packs"; integers little-endian):

    0   8   magic b"CTXPACK\\0"
    8   4   format version (u32) = 1
    12  4   header length H (u32)
    16  H   header: canonical msgpack map
            {"capabilities": [...], "dicts": [zdict ids], "objects": N,
             "prerequisites": [event ids], "refs": {name: id}}
    ..      N object records, codec.encode_record framing, sorted by id, no duplicates
    -32 32  blake3-256 of every preceding byte

Nothing in the file depends on time or on the order a store happens to hold its objects, so the
same refs and objects give a byte-identical file. Reading is split in two: `read_pack` checks
the structure (magic, version, trailer, header, record framing and order) and `verify_objects`
re-hashes every decompressed body; both raise BadPack and never touch a store.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import blake3
import zstandard

from .. import codec
from ..errors import BadPack, CorruptObject, CtxError, NotFound
from ..objects import links
from ..userfiles import check_name, replace_user_file, user_file_error

MAGIC = b"CTXPACK\x00"
VERSION = 1
_FRAME = struct.Struct("<8sII")
FRAME_SIZE = _FRAME.size
TRAILER_SIZE = 32
#: What this build can read. A pack naming anything else is refused.
CAPABILITIES = frozenset({"zstd", "zstd-dict", "thin"})
HEADER_KEYS = frozenset({"capabilities", "dicts", "objects", "prerequisites", "refs"})
MAX_HEADER = 64 << 20
#: Small bodies sampled (in id order, so deterministically) to train a pack's dictionary.
DICT_SAMPLES = 2000
DICT_MIN_SAMPLES = 256


@dataclass(frozen=True)
class Limits:
    """Bounds a reader enforces before trusting a declared size (decompression bombs)."""

    max_object: int = 256 << 20
    max_total: int = 16 << 30
    max_refs: int = 1_000_000


DEFAULT_LIMITS = Limits()


@dataclass
class PackSummary:
    path: str
    objects: int
    bytes: int
    raw_bytes: int
    refs: dict[str, str]
    prerequisites: list[str]
    dicts: list[str]
    checksum: str


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

def frame(header: dict, records: Iterable[bytes], version: int = VERSION,
          magic: bytes = MAGIC) -> bytes:
    """The bytes of a pack from a header and encoded records (tests build hostile packs so)."""
    head = codec.pack_value(header)
    data = _FRAME.pack(magic, version, len(head)) + head + b"".join(records)
    return data + blake3.blake3(data).digest()


def _train(store, ids: list[str]) -> tuple[str, bytes] | None:
    samples = []
    for obj_id in ids:
        type_name, body = store.get_raw(obj_id)
        if type_name not in codec.RAW_TYPES and len(body) <= codec.SMALL_OBJECT_LIMIT:
            samples.append(body)
            if len(samples) >= DICT_SAMPLES:
                break
    if len(samples) < DICT_MIN_SAMPLES:
        return None
    dictionary = codec.train_dictionary(samples)
    if dictionary is None:
        return None
    return codec.compute_id("zdict", dictionary), dictionary


def write_pack(store, path: str, refs: dict[str, str], object_ids: Iterable[str],
               prerequisites: Iterable[str] = (), *, level: int = 3, dictionary: bool = True,
               progress: Callable[[int], None] | None = None) -> PackSummary:
    """Write `object_ids` (plus a trained dictionary if it is worth one) and `refs` to `path`.

    The file appears under `path` only when complete (userfiles.replace_user_file): on any
    failure PATH is as it was and no temporary file is left. IOFailure for an OSError.
    """
    ids = sorted(set(object_ids))
    trained = _train(store, ids) if dictionary else None
    dicts: dict[str, tuple[str, bytes]] = {}
    compressor = plain = codec.Compressor(level)
    if trained is not None:
        dicts[trained[0]] = ("zdict", trained[1])
        compressor = codec.Compressor(level, trained[1])
        if trained[0] not in set(ids):
            ids = sorted([*ids, trained[0]])
    raw_size = 0
    prereqs = sorted(set(prerequisites))
    caps = {"zstd"} | ({"zstd-dict"} if dicts else set()) | ({"thin"} if prereqs else set())
    header = {"capabilities": sorted(caps), "dicts": sorted(dicts), "objects": len(ids),
              "prerequisites": prereqs, "refs": dict(sorted(refs.items()))}
    head = codec.pack_value(header)
    h = blake3.blake3()
    total = 0
    with replace_user_file(path) as f:
        def emit(data: bytes) -> None:
            nonlocal total
            f.write(data)
            h.update(data)
            total += len(data)

        emit(_FRAME.pack(MAGIC, VERSION, len(head)) + head)
        for n, obj_id in enumerate(ids, 1):
            type_name, body = dicts[obj_id] if obj_id in dicts else store.get_raw(obj_id)
            raw_size += len(body)
            comp = plain if type_name == "zdict" else compressor
            payload, code, dict_id = comp.compress(body)
            emit(codec.encode_record(obj_id, type_name, payload, code, dict_id, len(body)))
            if progress is not None and n % 1000 == 0:
                progress(n)
        digest = h.digest()
        f.write(digest)
        total += len(digest)
    if progress is not None:
        progress(len(ids))
    return PackSummary(path, len(ids), total, raw_size, dict(sorted(refs.items())), prereqs,
                       sorted(dicts), digest.hex())


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

@dataclass
class ParsedPack:
    """A pack whose structure has been checked; `data` is the whole file (bytes or mmap)."""

    path: str
    data: object
    version: int
    capabilities: list[str]
    refs: dict[str, str]
    prerequisites: list[str]
    dicts: list[str]
    records: list[codec.RecordInfo]
    checksum: str
    size: int
    by_id: dict[str, codec.RecordInfo] = field(default_factory=dict)
    raw_size: int = 0
    #: Filled by verify_objects, per event: (first parent, None) or, for a root, (None, the
    #: session its SessionStarted payload names, or None). Enough to tell a ref's session.
    chain: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()


def _bad(path: str, message: str) -> BadPack:
    return BadPack(f"{path}: {message}; nothing was imported", path=path)


def read_pack(path: str, limits: Limits = DEFAULT_LIMITS) -> ParsedPack:
    """Open a pack and check everything but the object bodies. Raises BadPack (NotFound if
    there is no such file)."""
    check_name(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < FRAME_SIZE + TRAILER_SIZE:
                data: object = f.read()
            else:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise NotFound(f"no such pack file: {path}") from None
    except OSError as exc:
        raise user_file_error(exc, path, "read") from None
    try:
        return _parse(path, data, size, limits)
    except BaseException:
        if isinstance(data, mmap.mmap):
            data.close()
        raise


def _parse(path: str, data, size: int, limits: Limits) -> ParsedPack:
    if size < FRAME_SIZE:
        raise _bad(path, f"truncated ({size} bytes): not a ctxstore pack")
    magic, version, head_len = _FRAME.unpack_from(data, 0)
    if magic != MAGIC:
        raise _bad(path, "bad magic: not a ctxstore pack")
    if version != VERSION:
        raise _bad(path, f"unsupported pack version {version} (this ctx reads {VERSION})")
    if size < FRAME_SIZE + TRAILER_SIZE:
        raise _bad(path, f"truncated ({size} bytes)")
    body_end = size - TRAILER_SIZE
    with memoryview(data) as view, view[:body_end] as body:
        digest = blake3.blake3(body).digest()
    if digest != bytes(data[body_end:size]):
        raise _bad(path, "checksum trailer does not match (truncated or damaged file)")
    if head_len > MAX_HEADER or FRAME_SIZE + head_len > body_end:
        raise _bad(path, f"absurd header length {head_len}")
    head_bytes = bytes(data[FRAME_SIZE:FRAME_SIZE + head_len])
    try:
        header = codec.unpack_value(head_bytes)
    except CorruptObject:
        raise _bad(path, "header is not msgpack") from None
    if not codec.is_canonical(head_bytes):
        raise _bad(path, "header is not canonical msgpack")
    pack = _check_header(path, header, limits)
    pack.data, pack.size, pack.checksum = data, size, digest.hex()
    records = pack.records
    pos = FRAME_SIZE + head_len
    max_records = (body_end - pos) // codec.RECORD_HEAD_SIZE
    if pack_count(header) > max_records:
        raise _bad(path, f"header declares {header['objects']} objects; the file has room "
                         f"for at most {max_records}")
    raw_total = 0
    prev = ""
    while pos < body_end:
        try:
            info = codec.read_record_header(data, pos)
        except CorruptObject as exc:
            raise _bad(path, f"bad object record: {exc}") from None
        if info.end > body_end:
            raise _bad(path, f"object record at offset {pos} runs into the trailer")
        if info.id <= prev:
            what = "duplicate object" if info.id == prev else "objects out of order at"
            raise _bad(path, f"{what} {info.id}")
        if info.raw_len > limits.max_object:
            raise _bad(path, f"object {info.id} declares {info.raw_len} bytes, over the "
                             f"{limits.max_object}-byte limit (decompression bomb?)")
        raw_total += info.raw_len
        if raw_total > limits.max_total:
            raise _bad(path, f"objects declare more than {limits.max_total} bytes in total "
                             f"(decompression bomb?)")
        if len(records) >= pack_count(header):
            raise _bad(path, f"more object records than the {header['objects']} declared")
        records.append(info)
        prev = info.id
        pos = info.end
    if len(records) != pack_count(header):
        raise _bad(path, f"header declares {header['objects']} objects, file holds "
                         f"{len(records)} (truncated?)")
    pack.raw_size = raw_total
    pack.by_id = {r.id: r for r in records}
    for zid in pack.dicts:
        info = pack.by_id.get(zid)
        if info is None or info.type != "zdict":
            raise _bad(path, f"dictionary {zid} named in the header is not in the pack")
    return pack


def pack_count(header: dict) -> int:
    return header["objects"]


def _check_header(path: str, header, limits: Limits) -> ParsedPack:
    if not isinstance(header, dict) or set(header) != HEADER_KEYS:
        raise _bad(path, "header must be a map with exactly the keys "
                         + ", ".join(sorted(HEADER_KEYS)))
    caps, refs, prereqs, dicts = (header["capabilities"], header["refs"],
                                  header["prerequisites"], header["dicts"])
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise _bad(path, "capabilities must be a list of strings")
    unknown = sorted(set(caps) - CAPABILITIES)
    if unknown:
        raise _bad(path, f"needs capabilities this ctx lacks: {', '.join(unknown)}")
    if type(header["objects"]) is not int or header["objects"] < 0:
        raise _bad(path, "header objects must be a non-negative integer")
    if not isinstance(refs, dict) or len(refs) > limits.max_refs:
        raise _bad(path, "refs must be a map of ref name to id")
    for name, target in refs.items():
        if not isinstance(target, str) or not codec.is_full_id(target):
            raise _bad(path, f"ref {name!r} names {str(target)[:80]!r}, not an object id")
    for what, ids in (("prerequisites", prereqs), ("dicts", dicts)):
        if not isinstance(ids, list) or not all(isinstance(i, str) and codec.is_full_id(i)
                                                for i in ids):
            raise _bad(path, f"{what} must be a list of object ids")
    if prereqs and "thin" not in caps:
        raise _bad(path, "prerequisites without the 'thin' capability")
    if dicts and "zstd-dict" not in caps:
        raise _bad(path, "dictionaries without the 'zstd-dict' capability")
    return ParsedPack(path, None, VERSION, list(caps), dict(refs), list(prereqs), list(dicts),
                      [], "", 0)


# ---------------------------------------------------------------------------------------------
# Verifying bodies
# ---------------------------------------------------------------------------------------------

class BodyReader:
    """Decompresses a parsed pack's records safely: frame sizes checked before inflating."""

    def __init__(self, pack: ParsedPack) -> None:
        self.pack = pack
        self._plain = zstandard.ZstdDecompressor()
        self._by_dict: dict[int, zstandard.ZstdDecompressor] = {}
        for zid in pack.dicts:
            body = self._inflate(pack.by_id[zid], self._plain)
            if codec.compute_id("zdict", body) != zid:
                raise _bad(pack.path, f"dictionary {zid} does not hash to its id")
            try:
                zd = zstandard.ZstdCompressionDict(body)
                self._by_dict[zd.dict_id()] = zstandard.ZstdDecompressor(dict_data=zd)
            except zstandard.ZstdError:
                raise _bad(pack.path, f"dictionary {zid} is not a zstd dictionary") from None

    def _inflate(self, info: codec.RecordInfo, dctx) -> bytes:
        path, data = self.pack.path, self.pack.data
        try:
            payload = codec.record_payload(data, info)
        except CorruptObject as exc:
            raise _bad(path, str(exc)) from None
        if info.compression == codec.COMP_NONE:
            body = payload
        else:
            try:
                declared = zstandard.frame_content_size(payload)
            except zstandard.ZstdError:
                raise _bad(path, f"object {info.id}: not a zstd frame") from None
            if declared != info.raw_len:
                raise _bad(path, f"object {info.id}: zstd frame declares {declared} bytes, the "
                                 f"record {info.raw_len} (decompression bomb?)")
            try:
                body = dctx.decompress(payload, max_output_size=info.raw_len)
            except zstandard.ZstdError as exc:
                raise _bad(path, f"object {info.id}: bad zstd frame: {exc}") from None
        if len(body) != info.raw_len:
            raise _bad(path, f"object {info.id}: {len(body)} bytes, declared {info.raw_len}")
        return body

    def body(self, info: codec.RecordInfo) -> bytes:
        if info.compression == codec.COMP_ZSTD_DICT:
            dctx = self._by_dict.get(info.dict_id)
            if dctx is None:
                raise _bad(self.pack.path, f"object {info.id} needs zstd dictionary "
                                           f"{info.dict_id}, which the pack does not carry")
        else:
            dctx = self._plain
        return self._inflate(info, dctx)

    def verified(self, info: codec.RecordInfo) -> tuple[bytes, list[str]]:
        """(body, ids it references), after checking that the body hashes to the record's id
        and, for msgpack types, is canonical (decoded once: re-encoding it must give it back)."""
        body, _, refs = self.verified_value(info)
        return body, refs

    def verified_value(self, info: codec.RecordInfo) -> tuple[bytes, object, list[str]]:
        """As `verified`, with the decoded value too (None for raw types)."""
        body = self.body(info)
        actual = codec.compute_id(info.type, body)
        if actual != info.id:
            raise _bad(self.pack.path, f"object {info.id} hashes to {actual}")
        if info.type in codec.RAW_TYPES:
            return body, None, []
        try:
            value = codec.unpack_value(body)
            ok = codec.pack_value(value) == body
        except CtxError:
            ok = False
        if not ok:
            raise _bad(self.pack.path, f"object {info.id} is not canonical msgpack")
        return body, value, links.references(info.type, value)


def chain_link(value: object) -> tuple[str | None, str | None]:
    """(first parent, None) of a decoded event, or (None, session named by its SessionStarted
    payload) for a root; (None, None) for a root that names no session or a malformed event."""
    if not isinstance(value, dict):
        return None, None
    parents = value.get("parents")
    if isinstance(parents, list) and parents:
        return (parents[0], None) if isinstance(parents[0], str) else (None, None)
    payload = value.get("payload")
    if value.get("type") != "SessionStarted" or not isinstance(payload, dict):
        return None, None
    sid = payload.get("session")
    return None, sid if isinstance(sid, str) else None


def verify_objects(pack: ParsedPack, progress: Callable[[int], None] | None = None
                   ) -> dict[str, list[str]]:
    """Re-hash every body; returns {id: ids it references} and fills `pack.chain`. Raises
    BadPack."""
    reader = BodyReader(pack)
    out: dict[str, list[str]] = {}
    chain = pack.chain
    for n, info in enumerate(pack.records, 1):
        _, value, out[info.id] = reader.verified_value(info)
        if info.type == "event":
            chain[info.id] = chain_link(value)
        if progress is not None and n % 1000 == 0:
            progress(n)
    if progress is not None:
        progress(len(pack.records))
    return out
