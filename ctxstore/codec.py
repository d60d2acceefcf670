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
    if value is None or t is bool or t is str:
        return value
    if t is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise CodecError(f"integer {value} outside the msgpack range")
        return value
    if t is dict:
        out = {}
        for k in sorted(value):
            if type(k) is not str:
                raise CodecError(f"map key {k!r} is not a string")
            out[k] = canonicalize(value[k])
        return out
    if t is list or t is tuple:
        return [canonicalize(v) for v in value]
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
        return canonicalize(int(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return canonicalize(dict(value))
    raise CodecError(f"cannot encode a value of type {t.__name__}")


def _check_keys_sorted(value: Any) -> None:
    """Raise CodecError if a decoded value is not in canonical form (used by fsck)."""
    if type(value) is dict:
        keys = list(value)
        if keys != sorted(keys):
            raise CodecError("map keys are not sorted")
        for v in value.values():
            _check_keys_sorted(v)
    elif type(value) is list:
        for v in value:
            _check_keys_sorted(v)


def pack_value(value: Any) -> bytes:
    """Canonical msgpack bytes of `value`."""
    try:
        return msgpack.packb(canonicalize(value), use_bin_type=True, use_single_float=False)
    except UnicodeEncodeError as exc:
        raise CodecError(f"string is not valid unicode: {exc}") from None


def unpack_value(body: bytes) -> Any:
    """Decode canonical msgpack; raises CorruptObject on anything that is not msgpack."""
    try:
        return msgpack.unpackb(body, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types; all mean corrupt bytes
        raise CorruptObject(f"undecodable msgpack: {exc}") from None


def is_canonical(body: bytes) -> bool:
    """True if `body` is exactly the canonical encoding of what it decodes to."""
    try:
        value = unpack_value(body)
        _check_keys_sorted(value)
        return pack_value(value) == body
    except (CodecError, CorruptObject):
        return False


# ---------------------------------------------------------------------------------------------
# Ids
# ---------------------------------------------------------------------------------------------


def id_header(type_name_: str, length: int) -> bytes:
    return b"%s %s %d\x00" % (ID_SCHEME, type_name_.encode("ascii"), length)


def compute_id(type_name_: str, body: bytes) -> str:
    """The object id: blake3-256 over `ctx1 TYPE LEN\\0` + the canonical body, as 64 hex."""
    h = blake3.blake3(id_header(type_name_, len(body)))
    h.update(body)
    return h.hexdigest()


def encode_object(type_name_: str, value: Any) -> tuple[str, bytes]:
    """(id, body) of a value of the given type; raw types take bytes as they are."""
    if type_name_ in RAW_TYPES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise CodecError(f"a {type_name_} object holds bytes, not {type(value).__name__}")
        body = bytes(value)
    else:
        type_code(type_name_)
        body = pack_value(value)
    return compute_id(type_name_, body), body


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


def encode_record(obj_id: str, type_name_: str, payload: bytes, compression: int,
                  dict_id: int, raw_len: int) -> bytes:
    head = _RECORD_HEAD.pack(RECORD_MAGIC, RECORD_VERSION, type_code(type_name_), compression,
                             dict_id, raw_len, len(payload), bytes.fromhex(obj_id))
    crc = zlib.crc32(payload, zlib.crc32(head))
    return head + _CRC.pack(crc) + payload


def read_record_header(buf, offset: int, where: str = "") -> RecordInfo:
    """Parse and sanity-check the header at `offset` of `buf` (bytes or mmap).

    Raises CorruptObject if the header is short, has a wrong magic/version or absurd lengths.
    The payload crc is checked by `record_payload`.
    """
    end = offset + RECORD_HEAD_SIZE
    if end > len(buf):
        raise CorruptObject(f"truncated record header at offset {offset}{where}")
    magic, version, code, comp, dict_id, raw_len, stored_len, raw_id = _RECORD_HEAD.unpack_from(
        buf, offset)
    if magic != RECORD_MAGIC or version != RECORD_VERSION:
        raise CorruptObject(f"bad record magic/version at offset {offset}{where}")
    if comp not in (COMP_NONE, COMP_ZSTD, COMP_ZSTD_DICT) or raw_len > MAX_OBJECT_SIZE:
        raise CorruptObject(f"bad record header at offset {offset}{where}")
    if end + stored_len > len(buf):
        raise CorruptObject(f"truncated record payload at offset {offset}{where}")
    return RecordInfo(raw_id.hex(), type_name(code), comp, dict_id, raw_len, stored_len,
                      offset, RECORD_HEAD_SIZE + stored_len)


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


class Decompressor:
    """Inflates record payloads; dictionaries are looked up by zstd dict id on demand."""

    def __init__(self, load_dictionary) -> None:
        # load_dictionary(dict_id) -> bytes; raises CorruptObject if the store lacks it
        self._load = load_dictionary
        self._plain = zstandard.ZstdDecompressor()
        self._by_dict: dict[int, zstandard.ZstdDecompressor] = {}

    def decompress(self, payload: bytes, info: RecordInfo) -> bytes:
        comp = info.compression
        if comp == COMP_NONE:
            body = payload
        else:
            if comp == COMP_ZSTD:
                d = self._plain
            else:
                d = self._by_dict.get(info.dict_id)
                if d is None:
                    zd = zstandard.ZstdCompressionDict(self._load(info.dict_id))
                    d = self._by_dict[info.dict_id] = zstandard.ZstdDecompressor(dict_data=zd)
            try:
                body = d.decompress(payload, max_output_size=info.raw_len)
            except zstandard.ZstdError as exc:
                raise CorruptObject(f"object {info.id}: bad zstd frame: {exc}",
                                    id=info.id) from None
        if len(body) != info.raw_len:
            raise CorruptObject(f"object {info.id}: size {len(body)} != declared {info.raw_len}",
                                id=info.id)
        return body


def train_dictionary(samples: list[bytes], size: int = 64 * 1024) -> bytes | None:
    """Train a zstd dictionary from sample bodies; None if zstd finds too little to learn."""
    try:
        return zstandard.train_dictionary(size, samples).as_bytes()
    except zstandard.ZstdError:
        return None
