"""Channel values and pending writes as content-addressed objects.

A value is serialized through LangGraph's serde (`dumps_typed`) and stored as a `value` object
`{"type": t, "data": bytes}`, so equal values are stored once. A large msgpack *array* (a
growing message list) is instead cut into chunks at content-defined element boundaries; each
chunk is a `blob` holding a complete msgpack array of consecutive elements. Appending one
message to a long list then stores one new tail chunk, not the whole list again.

A stored value is named by a *ref*: a hex id (a `value` object) or a list of hex ids (the
chunks of an array, in order). An event names every object it needs in one flat list,
`causality.values`, which is what `ctxstore.links` follows (pack, gc and fsck need no special
case); its payload says how the list splits: `pack_refs` / `unpack_refs` below.
"""

from __future__ import annotations

import struct
import zlib
from collections import OrderedDict
from typing import Any

import msgpack

from ...store import ObjectStore

#: Arrays whose serialized size is below this are stored whole.
CHUNK_MIN_VALUE = 4096
#: A chunk ends after an element whose crc32 has these low bits clear (about 1 in 16) ...
BOUNDARY_MASK = 0xF
#: ... or once it holds this many bytes.
CHUNK_MAX_BYTES = 256 * 1024

Ref = str | list[str]
#: How many (thread, namespace, channel) array prefixes to remember.
TAIL_CACHE_KEYS = 256


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes((0x90 | n,))
    if n < 1 << 16:
        return b"\xdc" + struct.pack(">H", n)
    return b"\xdd" + struct.pack(">I", n)


def _element_spans(data: bytes, pos: int, count: int) -> list[int]:
    """End offsets of `count` consecutive msgpack objects starting at `pos`."""
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 100 * 1024 * 1024))
    unpacker.feed(memoryview(data)[pos:])
    ends = []
    for _ in range(count):
        unpacker.skip()
        ends.append(pos + unpacker.tell())
    return ends


class ValueStore:
    """Puts and gets serde-encoded values; keeps a small cache of decoded chunk bytes."""

    def __init__(self, store: ObjectStore, cache_bytes: int = 64 << 20) -> None:
        self.objects = store
        # per-caller key (thread, namespace, channel) -> (array body prefix, its chunk ids, count)
        self._tails: OrderedDict[tuple, tuple[bytes, list[str], int]] = OrderedDict()
        self._chunks: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0

    # -- writing -------------------------------------------------------------------------------
    def put(self, serde: Any, value: Any, key: tuple | None = None) -> Ref:
        """Store a value; `key` (e.g. thread, namespace, channel) lets a growing array skip
        re-scanning the chunks it shares with the previous value under the same key."""
        t, data = serde.dumps_typed(value)
        data = bytes(data)
        if t == "msgpack" and len(data) >= CHUNK_MIN_VALUE:
            first = data[0]
            if 0x90 <= first <= 0x9F:
                return self._put_array(data, 1, first & 0x0F, key)
            if first in (0xDC, 0xDD):
                head = 3 if first == 0xDC else 5
                return self._put_array(data, head, int.from_bytes(data[1:head], "big"), key)
        return self.objects.put("value", {"type": t, "data": data})

    def _put_array(self, data: bytes, head: int, n: int, key: tuple | None) -> list[str]:
        ids: list[str] = []
        start, done = head, 0
        cached = self._tails.get(key) if key is not None else None
        if cached is not None:
            prefix, prefix_ids, prefix_n = cached
            if prefix_n <= n and data.startswith(prefix, head):
                ids, start, done = list(prefix_ids), head + len(prefix), prefix_n
        ends = _element_spans(data, start, n - done)
        put, view, last = self.objects.put, memoryview(data), len(ends) - 1
        chunk_start, chunk_n = start, 0
        full_end, full_n, full_ids = start, done, len(ids)
        for i, end in enumerate(ends):
            chunk_n += 1
            elem_start = ends[i - 1] if i else start
            cut = ((zlib.crc32(view[elem_start:end]) & BOUNDARY_MASK) == 0
                   or end - chunk_start >= CHUNK_MAX_BYTES)
            if cut or i == last:
                ids.append(put("blob", _array_header(chunk_n) + data[chunk_start:end]))
                if cut:
                    full_end, full_n, full_ids = end, done + i + 1, len(ids)
                chunk_start, chunk_n = end, 0
        if key is not None:
            self._tails[key] = (data[head:full_end], ids[:full_ids], full_n)
            self._tails.move_to_end(key)
            while len(self._tails) > TAIL_CACHE_KEYS:
                self._tails.popitem(last=False)
        return ids

    def forget(self, key_prefix: tuple) -> None:
        """Drop tail caches whose key starts with `key_prefix` (a deleted thread)."""
        for k in [k for k in self._tails if k[:len(key_prefix)] == key_prefix]:
            del self._tails[k]

    # -- reading -------------------------------------------------------------------------------
    def _chunk(self, obj_id: str) -> bytes:
        body = self._chunks.get(obj_id)
        if body is not None:
            self._chunks.move_to_end(obj_id)
            return body
        _, body = self.objects.get_raw(obj_id)
        self._chunks[obj_id] = body
        self._cached += len(body)
        while self._cached > self._cache_bytes and self._chunks:
            _, old = self._chunks.popitem(last=False)
            self._cached -= len(old)
        return body

    def get(self, serde: Any, ref: Any) -> Any:
        if isinstance(ref, str):
            obj = self.objects.get(ref)
            return serde.loads_typed((obj["type"], obj["data"]))
        total, parts = 0, []
        for obj_id in ref:
            body = self._chunk(obj_id)
            first = body[0]
            if first < 0xA0:
                head, n = 1, first & 0x0F
            elif first == 0xDC:
                head, n = 3, int.from_bytes(body[1:3], "big")
            else:
                head, n = 5, int.from_bytes(body[1:5], "big")
            total += n
            parts.append(memoryview(body)[head:])
        return serde.loads_typed(("msgpack", _array_header(total) + b"".join(parts)))


def pack_refs(refs: dict[str, Ref]) -> tuple[dict[str, int], list[str]]:
    """({name: 0 for one value id, k for k chunk ids}, the ids flat, names in sorted order)."""
    counts: dict[str, int] = {}
    ids: list[str] = []
    for name in sorted(refs):
        ref = refs[name]
        if isinstance(ref, str):
            counts[name] = 0
            ids.append(ref)
        else:
            counts[name] = len(ref)
            ids.extend(ref)
    return counts, ids


def unpack_refs(counts: Any, ids: Any) -> dict[str, Ref]:
    out: dict[str, Ref] = {}
    pos = 0
    for name in sorted(counts):
        k = counts[name]
        if k == 0:
            out[name] = ids[pos]
            pos += 1
        else:
            out[name] = list(ids[pos:pos + k])
            pos += k
    return out


def split_refs(counts: list[int], ids: Any) -> list[Ref]:
    """Refs of a sequence (pending writes): counts as in `pack_refs`, in order."""
    out: list[Ref] = []
    pos = 0
    for k in counts:
        if k == 0:
            out.append(ids[pos])
            pos += 1
        else:
            out.append(list(ids[pos:pos + k]))
            pos += k
    return out

