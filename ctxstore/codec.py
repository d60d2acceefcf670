"""The one module that knows the bytes: canonical msgpack, object ids, and stored records.

Everything ctxstore stores goes through here, in this order:

    value --canonical msgpack--> body --blake3(header + body)--> id
    body --zstd (optionally with a trained dictionary)--> payload --record header + crc--> record

The id is computed over the *uncompressed* canonical body, so changing a compression level or a
dictionary never changes an id. The byte layouts are specified in docs/format.md; the golden
vectors there are checked by tests/test_codec.py.
"""

from __future__ import annotations

import math
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import blake3
import msgpack
import zstandard

from .errors import CodecError, CorruptObject

# ---------------------------------------------------------------------------------------------
# Object types. The code is what a record stores; the name is what the id header hashes.
# Codes and names are part of the format: never renumber, only append.
# ---------------------------------------------------------------------------------------------

#: Format tag hashed into every id; a future change of hash or canonical form gets a new tag.
ID_SCHEME = b"ctx1"

TYPE_CODES: dict[str, int] = {
    "blob": 1,  # raw bytes (artifact content, chunk); body is the bytes themselves
    "event": 2,
    "session": 3,
    "message": 4,
    "artifact": 5,
    "compaction": 6,
    "snapshot": 7,  # cached state projection (derived, rebuildable)
    "bundle": 8,  # a compiled ContextBundle (what the model saw)
    "memory": 9,
    "zdict": 10,  # a trained zstd dictionary; body is the raw dictionary bytes
    "chunks": 11,  # manifest of a content-defined-chunked large blob
    "record": 12,  # an original transcript line kept verbatim by an importer
    "value": 13,  # any other canonical msgpack value (e.g. a LangGraph channel value)
    "operation": 14,  # one repository transaction's ref moves (the operation log)
    "workspace": 16,  # a workspace snapshot: a git tree and the git objects it adds (ctxstore.workspace)
}
TYPE_NAMES: dict[int, str] = {code: name for name, code in TYPE_CODES.items()}
#: Types whose body is raw bytes rather than canonical msgpack.
RAW_TYPES = frozenset({"blob", "zdict"})

ID_HEX_LEN = 64
ID_BYTES = 32


def type_code(type_name: str) -> int:
    try:
        return TYPE_CODES[type_name]
    except KeyError:
        raise CodecError(f"unknown object type {type_name!r}") from None


def type_name(code: int) -> str:
    try:
        return TYPE_NAMES[code]
    except KeyError:
        raise CorruptObject(f"unknown object type code {code}") from None


# ---------------------------------------------------------------------------------------------
# Canonical msgpack
# ---------------------------------------------------------------------------------------------

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


def canonicalize(value: Any) -> Any:
    """Return `value` in canonical form: dicts key-sorted, tuples as lists, bytes as bytes.

    Rejects what has no single encoding: NaN and infinities, non-str map keys, ints outside
    msgpack's range, and any other type. -0.0 becomes 0.0 so that equal numbers hash equal.
    """
    t = type(value)
    if t is dict:
        return _canon_dict(value)
    if t is list or t is tuple:
        return _canon_list(value)
    return _canon_other(value, t)


# The hot path of every put. Containers check the common scalar types inline (one type() and
# a few identity tests per value, no call); everything else goes through `_canon_other`, which
# holds the complete rules. Both paths give the same result for every input.


def _canon_dict(d: dict) -> dict:
    try:
        keys = sorted(d)
    except TypeError:
        raise CodecError("map keys are not all strings") from None
    out = {}
    for k in keys:
        if type(k) is not str:
            raise CodecError(f"map key {k!r} is not a string")
        v = d[k]
        t = type(v)
        if t is str or t is bool or v is None:
            out[k] = v
        elif t is dict:
            out[k] = _canon_dict(v)
        elif t is int and _INT_MIN <= v <= _INT_MAX:
            out[k] = v
        elif t is list:
            out[k] = _canon_list(v)
        else:
            out[k] = _canon_other(v, t)
    return out


def _canon_list(items) -> list:
    out = []
    append = out.append
    for v in items:
        t = type(v)
        if t is str or t is bool or v is None:
            append(v)
        elif t is dict:
            append(_canon_dict(v))
        elif t is int and _INT_MIN <= v <= _INT_MAX:
            append(v)
        elif t is list or t is tuple:
            append(_canon_list(v))
        else:
            append(_canon_other(v, t))
    return out


def _canon_other(value: Any, t: type) -> Any:
    if value is None or t is bool or t is str:
        return value
    if t is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise CodecError(f"integer {value} outside the msgpack range")
        return value
    if t is dict:
        return _canon_dict(value)
    if t is list or t is tuple:
        return _canon_list(value)
    if t is float:
        if math.isnan(value) or math.isinf(value):
            raise CodecError(f"float {value} has no canonical encoding")
        return 0.0 if value == 0.0 else value
    if t is bytes:
        return value
    if t is bytearray or t is memoryview:
        return bytes(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _canon_other(int(value), int)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return _canon_dict(dict(value))
    raise CodecError(f"cannot encode a value of type {t.__name__}")


def _decoded_is_canonical(value: Any) -> bool:
    """True if a decoded value is already in canonical form (fsck, unpack): every map's keys
    are str and sorted, floats are finite and not -0.0, and only msgpack's own types occur
    (no ext types). Then re-packing it gives the canonical bytes without `canonicalize`."""
    t = type(value)
    if t is dict:
        keys = list(value)
        for k in keys:
            if type(k) is not str:
                return False
        if keys != sorted(keys):
            return False
        items = value.values()
    elif t is list:
        items = value
    else:
        items = (value,)
    for v in items:
        t = type(v)
        if t is str or t is int or t is bool or v is None or t is bytes:
            continue
        if t is dict or t is list:
            if not _decoded_is_canonical(v):
                return False
        elif t is float:
            if v != v or v in (_INF, _NEG_INF) or (v == 0.0 and math.copysign(1.0, v) < 0):
                return False
        else:
            return False
    return True


_INF, _NEG_INF = math.inf, -math.inf


def pack_value(value: Any) -> bytes:
    """Canonical msgpack bytes of `value`."""
    body = _fast_pack(value)
    return body if body is not None else _reference_pack(value)


def _reference_pack(value: Any) -> bytes:
    """The canonical form by its definition: `canonicalize`, then msgpack-python. Every other
    encoder must give these bytes (tests/test_codec_fast.py checks it on random values)."""
    try:
        t = type(value)
        canon = _canon_dict(value) if t is dict else canonicalize(value)
        return _packb(canon, use_bin_type=True, use_single_float=False)
    except UnicodeEncodeError as exc:
        raise CodecError(f"string is not valid unicode: {exc}") from None


_packb = msgpack.packb
_unpackb = msgpack.unpackb

#: ormsgpack with sorted keys, refusing everything the canonical form does not take as it is:
#: subclasses, tuples, dataclasses, enums, datetimes, uuids, ints beyond 64 bits, non-str keys.
#: Loaded on the first encode (`_load_fast`): commands that only read never import it.
_FAST_OPTIONS = 0
_fast_packb: Any = None
_ormsgpack: Any = None
_fast_loaded = False


def _load_fast() -> None:
    global _FAST_OPTIONS, _fast_packb, _ormsgpack, _fast_loaded
    try:
        import ormsgpack
    except ImportError:  # pragma: no cover - a core dependency; the reference path stays correct
        ormsgpack = None
    if ormsgpack is not None:
        _ormsgpack, _fast_packb = ormsgpack, ormsgpack.packb
        _FAST_OPTIONS = (ormsgpack.OPT_SORT_KEYS | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
                         | ormsgpack.OPT_PASSTHROUGH_TUPLE | ormsgpack.OPT_PASSTHROUGH_DATACLASS
                         | ormsgpack.OPT_PASSTHROUGH_ENUM | ormsgpack.OPT_PASSTHROUGH_DATETIME
                         | ormsgpack.OPT_PASSTHROUGH_UUID | ormsgpack.OPT_PASSTHROUGH_BIG_INT)
    _fast_loaded = True
#: A float64 that is NaN, an infinity (exponent all ones) or -0.0 -- or bytes inside a string
#: that look like one, which only cost a trip through the reference encoder.
_SPECIAL_FLOAT = re.compile(rb"\xcb(?:[\x7f\xff][\xf0-\xff]|\x80\x00{7})")


def _fast_pack(value: Any) -> bytes | None:
    """The canonical bytes of `value` by ormsgpack (C, ~8x faster), or None where only the
    reference encoder decides: a type or value ormsgpack refuses under `_FAST_OPTIONS`, and any
    float that canonicalisation changes or rejects. Where it answers, the bytes are the
    reference encoder's: msgpack's shortest int and str forms, float64, bin for bytes, map keys
    sorted by code point (= UTF-8 byte order)."""
    if _fast_packb is None:
        if _fast_loaded:
            return None
        _load_fast()
        return _fast_pack(value)
    try:
        body = _fast_packb(value, option=_FAST_OPTIONS)
    except TypeError:  # ormsgpack.MsgpackEncodeError: the reference encoder decides
        return None
    if b"\xcb" in body and _SPECIAL_FLOAT.search(body) is not None:
        return None
    return body


def unpack_value(body: bytes) -> Any:
    """Decode canonical msgpack; raises CorruptObject on anything that is not msgpack."""
    try:
        return _unpackb(body, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types; all mean corrupt bytes
        raise CorruptObject(f"undecodable msgpack: {exc}") from None


def is_canonical(body: bytes) -> bool:
    """True if `body` is exactly the canonical encoding of what it decodes to.

    Equivalent to `pack_value(unpack_value(body)) == body` with key order checked, but cheaper.
    First ormsgpack decodes and `_fast_pack` re-encodes (C both ways, ~2 us for a 1 KB event
    instead of ~4): equal bytes prove the body canonical whichever decoder read it, since
    `_fast_pack` only answers with the canonical encoding of the value it got, and a canonical
    encoding decodes back to that value. Every other body (not canonical, or something
    ormsgpack will not decode or encode) is decided by the reference below: a decoded value
    that passes `_decoded_is_canonical` is re-packed as it is, so any other difference (a
    longer int or string form, float32, a duplicate key) shows as unequal bytes.
    """
    if not _fast_loaded:
        _load_fast()
    if _ormsgpack is not None:
        try:
            fast = _fast_pack(_ormsgpack.unpackb(body))
        except Exception:  # noqa: BLE001 - ormsgpack refuses it: the reference decides below
            fast = None
        if fast is not None and fast == body:
            return True
    try:
        value = _unpackb(body, raw=False, strict_map_key=True, use_list=True)
    except Exception:  # msgpack raises several unrelated types; all mean "not canonical"
        return False
    fast = _fast_pack(value)
    if fast is not None:  # sorted, shortest forms: equal bytes iff the body was canonical
        return fast == body
    if not _decoded_is_canonical(value):
        return False
    try:
        return _packb(value, use_bin_type=True, use_single_float=False) == body
    except (ValueError, OverflowError, TypeError):
        return False


# ---------------------------------------------------------------------------------------------
# Ids
# ---------------------------------------------------------------------------------------------


def id_header(type_name_: str, length: int) -> bytes:
    return b"%s %s %d\x00" % (ID_SCHEME, type_name_.encode("ascii"), length)


#: `ctx1 TYPE ` of every known type, so an id costs one format and one hash call.
_ID_PREFIXES = {name: b"%s %s " % (ID_SCHEME, name.encode("ascii")) for name in TYPE_CODES}
_blake3 = blake3.blake3
#: The same prefixes by type code (fsck reads codes, not names); codes of the raw-body types.
_ID_PREFIX_BY_CODE = {TYPE_CODES[name]: prefix for name, prefix in _ID_PREFIXES.items()}
_RAW_CODES = frozenset(TYPE_CODES[name] for name in RAW_TYPES)
_join = b"".join


def id_digest(type_name_: str, body: bytes) -> bytes:
    """The id as its 32 raw bytes (what record headers and indexes hold)."""
    prefix = _ID_PREFIXES.get(type_name_)
    if prefix is None:
        prefix = b"%s %s " % (ID_SCHEME, type_name_.encode("ascii"))
    return _blake3(_join((prefix, str(len(body)).encode(), b"\x00", body))).digest()


def compute_id(type_name_: str, body: bytes) -> str:
    """The object id: blake3-256 over `ctx1 TYPE LEN\\0` + the canonical body, as 64 hex."""
    return id_digest(type_name_, body).hex()


def encode_object(type_name_: str, value: Any) -> tuple[str, bytes]:
    """(id, body) of a value of the given type; raw types take bytes as they are."""
    prefix = _ID_PREFIXES.get(type_name_)
    if prefix is None or type_name_ in RAW_TYPES:
        if type_name_ in RAW_TYPES:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise CodecError(f"a {type_name_} object holds bytes, not {type(value).__name__}")
            body = bytes(value)
            return compute_id(type_name_, body), body
        type_code(type_name_)  # raises: unknown type
    body = _fast_pack(value)
    if body is None:
        body = _reference_pack(value)
    # join, not `b"%s%d\x00%s" %`: the bytes formatting cost 1.3 µs of a 4 µs id
    return _blake3(_join((prefix, str(len(body)).encode(), b"\x00", body))).hexdigest(), body


def decode_body(type_name_: str, body: bytes) -> Any:
    return body if type_name_ in RAW_TYPES else unpack_value(body)


def is_full_id(text: str) -> bool:
    return len(text) == ID_HEX_LEN and all(c in "0123456789abcdef" for c in text)


# ---------------------------------------------------------------------------------------------
# Stored records: header + payload, checked by crc32
# ---------------------------------------------------------------------------------------------

RECORD_MAGIC = b"CR"
RECORD_VERSION = 1
#: magic, version, type code, compression, 3 reserved, dict id, raw len, stored len, id, crc
_RECORD_HEAD = struct.Struct("<2sBBB3xIII32s")
RECORD_HEAD_SIZE = _RECORD_HEAD.size + 4  # + crc32
_CRC = struct.Struct("<I")

COMP_NONE = 0
COMP_ZSTD = 1
COMP_ZSTD_DICT = 2

#: A single object body may not exceed this (large artifacts are chunked long before it).
MAX_OBJECT_SIZE = 1 << 31


@dataclass(frozen=True, slots=True)
class RecordInfo:
    """What a record header says, plus where its payload lies."""

    id: str
    type: str
    compression: int
    dict_id: int
    raw_len: int
    stored_len: int
    offset: int  # offset of the record header
    size: int  # header + payload

    @property
    def end(self) -> int:
        return self.offset + self.size


_pack_head = _RECORD_HEAD.pack
_crc32 = zlib.crc32
#: The whole 56-byte header at once, crc included (reads: one unpack per record).
_FULL_HEAD = struct.Struct("<3sBB3xIII32sI")
_MAGIC_VERSION = RECORD_MAGIC + bytes([RECORD_VERSION])


def encode_record(obj_id: str, type_name_: str, payload: bytes, compression: int,
                  dict_id: int, raw_len: int) -> bytes:
    code = TYPE_CODES.get(type_name_) or type_code(type_name_)
    head = _pack_head(RECORD_MAGIC, RECORD_VERSION, code, compression, dict_id, raw_len,
                      len(payload), bytes.fromhex(obj_id))
    return b"%s%s%s" % (head, _CRC.pack(_crc32(payload, _crc32(head))), payload)


def read_record_header(buf, offset: int, where: str = "") -> RecordInfo:
    """Parse and sanity-check the header at `offset` of `buf` (bytes or mmap).

    Raises CorruptObject if the header is short, has a wrong magic/version or absurd lengths.
    The payload crc is checked by `record_payload`.
    """
    try:
        raw_id, size = record_span(buf, offset)
    except CorruptObject as exc:
        raise CorruptObject(f"{exc}{where}") from None
    _, code, comp, dict_id, raw_len, _, _, _ = _FULL_HEAD.unpack_from(buf, offset)
    return RecordInfo(raw_id.hex(), TYPE_NAMES[code], comp, dict_id, raw_len,
                      size - RECORD_HEAD_SIZE, offset, size)


def record_payload(buf, info: RecordInfo, where: str = "") -> bytes:
    """The payload bytes of a record, after checking the crc over header and payload."""
    start = info.offset + RECORD_HEAD_SIZE
    payload = bytes(buf[start:start + info.stored_len])
    (crc,) = _CRC.unpack_from(buf, start - 4)
    head = bytes(buf[info.offset:start - 4])
    if zlib.crc32(payload, zlib.crc32(head)) != crc:
        raise CorruptObject(f"checksum mismatch in object {info.id} at offset {info.offset}{where}",
                            id=info.id, offset=info.offset)
    return payload


def record_span(buf, offset: int, base: int = 0) -> tuple[bytes, int]:
    """(raw id, record size) of the header at `offset` of `buf`, checked: magic, version,
    compression, lengths, type code, and that the payload fits in `buf`. The one parser of
    record headers (read_record_header, Decompressor.read, pack scans and fsck use it); fast
    enough to walk a million records. `base`: where `buf` starts in the file (messages)."""
    end = offset + RECORD_HEAD_SIZE
    n = len(buf)
    at = base + offset
    if end > n:
        raise CorruptObject(f"truncated record header at offset {at}")
    magic, code, comp, _, raw_len, stored_len, raw_id, _ = _FULL_HEAD.unpack_from(buf, offset)
    if magic != _MAGIC_VERSION:
        raise CorruptObject(f"bad record magic/version at offset {at}")
    if comp > COMP_ZSTD_DICT or raw_len > MAX_OBJECT_SIZE:
        raise CorruptObject(f"bad record header at offset {at}")
    if code not in TYPE_NAMES:
        raise CorruptObject(f"unknown object type code {code} at offset {at}")
    if end + stored_len > n:
        raise CorruptObject(f"truncated record payload at offset {at}")
    return raw_id, RECORD_HEAD_SIZE + stored_len


# ---------------------------------------------------------------------------------------------
# Compression
# ---------------------------------------------------------------------------------------------

#: Objects up to this size are candidates for dictionary compression (and dictionary samples).
SMALL_OBJECT_LIMIT = 16 * 1024
#: Bodies shorter than this are stored uncompressed: a zstd frame would not pay for itself.
MIN_COMPRESS = 64


def zstd_dict_id(dict_bytes: bytes) -> int:
    return zstandard.ZstdCompressionDict(dict_bytes).dict_id()


class Compressor:
    """Compresses bodies for records; holds the current dictionary, if the store has one."""

    def __init__(self, level: int = 3, dictionary: bytes | None = None) -> None:
        self.level = level
        self._plain = zstandard.ZstdCompressor(level=level, write_checksum=False)
        self.dict_id = 0
        self._with_dict = None
        if dictionary is not None:
            zd = zstandard.ZstdCompressionDict(dictionary)
            self.dict_id = zd.dict_id()
            self._with_dict = zstandard.ZstdCompressor(level=level, dict_data=zd,
                                                       write_checksum=False)

    def compress(self, body: bytes) -> tuple[bytes, int, int]:
        """(payload, compression code, dict id): the smallest of raw / zstd / zstd+dict tried."""
        n = len(body)
        if n < MIN_COMPRESS:
            return body, COMP_NONE, 0
        if self._with_dict is not None and n <= SMALL_OBJECT_LIMIT:
            out = self._with_dict.compress(body)
            if len(out) < n:
                return out, COMP_ZSTD_DICT, self.dict_id
            return body, COMP_NONE, 0
        out = self._plain.compress(body)
        if len(out) < n:
            return out, COMP_ZSTD, 0
        return body, COMP_NONE, 0


    def compress_many(self, bodies: list[bytes], threads: int = 0) -> list[tuple[bytes, int, int]]:
        """`compress` of each body, in order, with the small bodies compressed in one C call
        (`multi_compress_to_buffer`: the same frames as `compress`): zstd's tables stay in cache
        between bodies instead of being evicted by the interpreter's work between two puts, and
        with `threads` > 0 the bodies are compressed in C threads that do not hold the GIL."""
        out: list[tuple[bytes, int, int]] = []
        small: list[int] = []
        for i, body in enumerate(bodies):
            if MIN_COMPRESS <= len(body) <= SMALL_OBJECT_LIMIT:
                small.append(i)
                out.append(None)  # type: ignore[arg-type]  # filled below
            else:
                out.append(self.compress(body))
        if not small:
            return out
        comp, code, dict_id = ((self._with_dict, COMP_ZSTD_DICT, self.dict_id)
                               if self._with_dict is not None else (self._plain, COMP_ZSTD, 0))
        frames = comp.multi_compress_to_buffer([bodies[i] for i in small], threads=threads)
        for k, i in enumerate(small):
            frame, body = frames[k].tobytes(), bodies[i]
            out[i] = (frame, code, dict_id) if len(frame) < len(body) else (body, COMP_NONE, 0)
        return out

    def compress_any(self, body: bytes) -> tuple[bytes, int, int]:
        """As `compress`, but a body of any size may use the dictionary: the smallest of raw,
        zstd and zstd+dictionary (repack: worth two compressions of the few large bodies)."""
        n = len(body)
        if n <= SMALL_OBJECT_LIMIT or self._with_dict is None or n < MIN_COMPRESS:
            return self.compress(body)
        best = (body, COMP_NONE, 0)
        plain = self._plain.compress(body)
        if len(plain) < len(best[0]):
            best = (plain, COMP_ZSTD, 0)
        with_dict = self._with_dict.compress(body)
        if len(with_dict) < len(best[0]):
            best = (with_dict, COMP_ZSTD_DICT, self.dict_id)
        return best


class Decompressor:
    """Inflates record payloads; dictionaries are looked up by zstd dict id on demand."""

    def __init__(self, load_dictionary) -> None:
        # load_dictionary(dict_id) -> bytes; raises CorruptObject if the store lacks it
        self._load = load_dictionary
        self._plain = zstandard.ZstdDecompressor()
        self._by_dict: dict[int, zstandard.ZstdDecompressor] = {}

    def _for_dict(self, dict_id: int) -> zstandard.ZstdDecompressor:
        d = self._by_dict.get(dict_id)
        if d is None:
            zd = zstandard.ZstdCompressionDict(self._load(dict_id))
            d = self._by_dict[dict_id] = zstandard.ZstdDecompressor(dict_data=zd)
        return d

    def decompress(self, payload: bytes, info: RecordInfo) -> bytes:
        return self._inflate(payload, info.compression, info.dict_id, info.raw_len, info.id)

    def _inflate(self, payload: bytes, comp: int, dict_id: int, raw_len: int,
                 obj_id: str | bytes) -> bytes:
        if comp == COMP_NONE:
            body = payload
        else:
            d = self._plain if comp == COMP_ZSTD else self._by_dict.get(dict_id)
            if d is None:
                d = self._for_dict(dict_id)
            try:
                body = d.decompress(payload, max_output_size=raw_len)
            except zstandard.ZstdError as exc:
                hex_id = obj_id if type(obj_id) is str else obj_id.hex()
                raise CorruptObject(f"object {hex_id}: bad zstd frame: {exc}", id=hex_id) from None
        if len(body) != raw_len:
            hex_id = obj_id if type(obj_id) is str else obj_id.hex()
            raise CorruptObject(f"object {hex_id}: size {len(body)} != declared {raw_len}",
                                id=hex_id)
        return body

    def read(self, buf, offset: int, base: int = 0, framed: bool = False
             ) -> tuple[int, bytes, bytes, int]:
        """(type code, raw id, body, record size) of the record at `offset`, verified: header,
        crc, decompression and size; `buf` holds the file from `base` on. The hot path of get and
        fsck: the checks of `record_span` + `record_payload` + `decompress` with no RecordInfo.
        `framed`: the caller already ran `record_span` on these bytes (fsck's walk), so the
        header checks are not repeated. Errors are CorruptObject without the pack name."""
        i = offset - base
        if not framed:
            record_span(buf, i, base)  # the header checks
        head = buf[i:i + RECORD_HEAD_SIZE]
        _, code, comp, dict_id, raw_len, stored_len, raw_id, crc = _FULL_HEAD.unpack(head)
        i += RECORD_HEAD_SIZE
        payload = buf[i:i + stored_len]
        if _crc32(payload, _crc32(head[:52])) != crc:
            raise CorruptObject(f"checksum mismatch in object {raw_id.hex()} at offset {offset}",
                                id=raw_id.hex(), offset=offset)
        return code, raw_id, self._inflate(payload, comp, dict_id, raw_len, raw_id), \
            RECORD_HEAD_SIZE + stored_len


    def check_run(self, buf, start: int, end: int, base: int = 0
                  ) -> list[tuple[str, bytes, int, str]]:
        """fsck's per-object work on the well-framed records in [start, end) of a pack (`buf`
        holds the file from `base` on): crc, decompression, size, id and, for msgpack types,
        the canonical form. Returns (kind, raw id, offset, message) per bad record, kind one of
        checksum | decode | hash | canonical, in offset order.

        The same checks as `read` + `id_digest` + `is_canonical`, in one loop with no call per
        record beyond the C ones (~40% less CPU per 1 KB event). Any record that does not pass
        the quick way (a crc mismatch, a zstd error, a dictionary not loaded yet, a wrong size)
        is read again by `read`, which names exactly what is wrong or loads the dictionary, so
        problems and their messages are the same as record-by-record reading gives."""
        problems: list[tuple[str, bytes, int, str]] = []
        unpack, crc32, full_read = _FULL_HEAD.unpack_from, _crc32, self.read
        plain, by_dict, zstd_error = self._plain, self._by_dict, zstandard.ZstdError
        prefixes, blake, canonical = _ID_PREFIX_BY_CODE, _blake3, is_canonical
        if not _fast_loaded:
            _load_fast()
        if _ormsgpack is None:  # pragma: no cover - a core dependency
            repack = unpackb = _refuse
        else:
            repack, unpackb = _fast_packb, _ormsgpack.unpackb
        options, special_float = _FAST_OPTIONS, _SPECIAL_FLOAT.search
        i, stop = start - base, end - base
        while i < stop:
            _, code, comp, dict_id, raw_len, stored_len, raw_id, crc = unpack(buf, i)
            j = i + RECORD_HEAD_SIZE
            k = j + stored_len
            payload = buf[j:k]
            body = None
            if crc32(payload, crc32(buf[i:j - 4])) == crc:
                if comp == COMP_NONE:
                    body = payload
                else:
                    d = plain if comp == COMP_ZSTD else by_dict.get(dict_id)
                    if d is not None:
                        try:
                            body = d.decompress(payload, max_output_size=raw_len)
                        except zstd_error:
                            body = None
                if body is not None and len(body) != raw_len:
                    body = None
            if body is None:  # the slow way names the fault (or loads the dictionary)
                try:
                    body = full_read(buf, i + base, base, True)[2]
                except CorruptObject as exc:
                    msg = str(exc)
                    problems.append(("checksum" if "checksum" in msg else "decode", raw_id,
                                     i + base, msg))
                    i = k
                    continue
            prefix = prefixes[code]
            if blake(b"%s%d\x00%s" % (prefix, raw_len, body)).digest() != raw_id:
                problems.append(("hash", raw_id, i + base, "body hashes to "
                                 + compute_id(TYPE_NAMES[code], body)))
            elif code not in _RAW_CODES:
                try:  # `is_canonical`'s first step, inline; it decides whatever this does not
                    again = repack(unpackb(body), option=options)
                except Exception:  # noqa: BLE001 - ormsgpack refuses it: is_canonical decides
                    again = None
                if (again != body or (b"\xcb" in body and special_float(body) is not None)) \
                        and not canonical(body):
                    problems.append(("canonical", raw_id, i + base,
                                     "body is not canonical msgpack"))
            i = k
        return problems


def _refuse(*args, **kwargs):  # pragma: no cover - only without ormsgpack
    raise TypeError("no ormsgpack")


#: COVER parameters for a store's own dictionary. zstd's parameter search (the default) picks
#: exactly these on synthetic agent events and on the real transcripts of the shared corpus, so
#: naming them gives the same dictionary at a quarter of the training time (~25 ms, not ~105).
STORE_DICT_PARAMS = {"k": 1024, "d": 8}


def train_dictionary(samples: list[bytes], size: int = 64 * 1024, **params: int) -> bytes | None:
    """Train a zstd dictionary from sample bodies; None if zstd finds too little to learn.

    `params` (k, d, dict_id, ...) are passed to zstd; without k and d zstd searches for good
    ones; without dict_id it picks a random id."""
    try:
        return zstandard.train_dictionary(size, samples, **params).as_bytes()
    except zstandard.ZstdError:
        return None
